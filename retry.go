package stint

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// DefaultStoreBackoff spaces the retries of a store call that failed (the
// database unreachable, a commit whose outcome is unknown): 50ms doubling to
// 30s, with jitter, so a pool never hammers a store that is down.
var DefaultStoreBackoff = lifecycle.Backoff{Base: 50 * time.Millisecond, Factor: 2, Max: 30 * time.Second}

// retrier paces the retries of one failing store call: exponential backoff
// with jitter on the pool's clock. Its jitter is seeded from a key unique to
// the call, so pools that failed together do not retry together.
type retrier struct {
	p     *Pool
	what  string // the call, for the log
	key   string
	tries int
}

func (p *Pool) retrier(what string) *retrier { return &retrier{p: p, what: what} }

// wait logs that the call failed with err and waits out the next delay, or
// until ctx ends; it reports whether to try again.
func (r *retrier) wait(ctx context.Context, err error, attrs ...any) bool {
	if r.key == "" {
		r.key = r.p.cfg.WorkerID + "/" + r.what + "/" + uuid.NewString()
	}
	r.tries++
	d := max(r.p.cfg.StoreBackoff.Delay(r.key, r.tries).Round(time.Millisecond), time.Millisecond)
	r.p.log.Warn("stint: a store call failed; retrying with backoff",
		append([]any{"call", r.what, "tries", r.tries, "retry_in", d, "error", err}, attrs...)...)
	select {
	case <-r.p.clock.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}

// uncertain reports whether a failed store call may have been applied: it
// was not refused (a refusal is a typed lifecycle error and changed
// nothing), so its reply may have been lost or its commit left in doubt.
func uncertain(err error) bool { return err != nil && !store.IsRejection(err) }
