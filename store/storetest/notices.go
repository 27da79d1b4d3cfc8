package storetest

import (
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// noticeWait bounds the wait for a notice: generous, since it only fails a
// test that would otherwise hang; a notice normally arrives at once.
const noticeWait = 30 * time.Second

// testLeaseNotices (issue 13, item 1): when a client or the system changes a
// lease under its owner, a LeaseNotices subscriber receives the job's id
// after the commit, so the owning pool can stop the handler at once.
func testLeaseNotices(t *testing.T, newStore func(*testing.T) store.Store) {
	cases := []struct {
		name string
		from lifecycle.State
		opts []specOpt
		act  func(h *harness, f fixture)
	}{
		{"soft_cancel_of_a_running_job", lifecycle.Running, nil, func(h *harness, f fixture) { h.cancel(f, false) }},
		{"hard_cancel_of_a_claimed_job", lifecycle.Claimed, nil, func(h *harness, f fixture) { h.cancel(f, true) }},
		{"deadline_of_a_running_job", lifecycle.Running, []specOpt{deadlineIn(time.Hour)}, func(h *harness, f fixture) {
			h.advance(2 * time.Hour)
			h.pass(store.Store.JobTimeOutDue, 1)
		}},
		{"attempt_timeout", lifecycle.Running, []specOpt{timeoutOf(time.Minute)}, func(h *harness, f fixture) {
			h.advance(2 * time.Minute)
			h.pass(store.Store.JobTimeOutDue, 1)
		}},
		{"lease_expiry", lifecycle.Running, nil, func(h *harness, f fixture) {
			h.advance(2 * leaseTTL)
			h.pass(store.Store.JobStallExpired, 1)
		}},
		{"forced_cancel", lifecycle.CancelRequested, nil, func(h *harness, f fixture) {
			h.advance(2 * lifecycle.DefaultCancelGrace)
			h.pass(store.Store.JobForceCancelDue, 1)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, newStore)
			f := h.build(c.from, c.opts...)
			ch, stop := h.s.LeaseNotices()
			defer stop()
			c.act(h, f)
			timer := time.NewTimer(noticeWait)
			defer timer.Stop()
			for {
				select {
				case id := <-ch:
					if id == f.ID {
						return
					}
				case <-timer.C:
					t.Fatalf("no lease notice for job %s within %s after %s", f.ID, noticeWait, c.name)
				}
			}
		})
	}
}
