package server_test

import (
	"context"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// beatCounter is a real store that counts its heartbeat calls.
type beatCounter struct {
	store.Store
	single, many atomic.Int64
}

func (b *beatCounter) Unwrap() store.Store { return b.Store }

func (b *beatCounter) JobHeartbeat(ctx context.Context, p *store.JobHeartbeatParams) (store.Job, error) {
	b.single.Add(1)
	return b.Store.JobHeartbeat(ctx, p)
}

func (b *beatCounter) JobHeartbeatMany(ctx context.Context, ps []store.JobHeartbeatParams) ([]store.Result, error) {
	b.many.Add(1)
	hm, _ := store.As[store.HeartbeatManyStore](b.Store)
	return hm.JobHeartbeatMany(ctx, ps)
}

// TestHeartbeatManyIsOneStoreCall: a batch of heartbeats is one store call;
// each item is answered on its own: renewed, stale (a wrong lease), or
// not_found (another tenant's job, which is not touched).
func TestHeartbeatManyIsOneStoreCall(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, s store.Store) {
		bc := &beatCounter{Store: s}
		e := start(t, bc, server.Config{})
		client, worker := e.token("acme", store.RoleClient), e.token("acme", store.RoleWorker)
		otherClient, otherWorker := e.token("other", store.RoleClient), e.token("other", store.RoleWorker)
		a, b, c := e.claimed(client, worker), e.claimed(client, worker), e.claimed(client, worker)
		theirs := e.claimed(otherClient, otherWorker)
		before, err := s.JobGet(t.Context(), theirs.Id)
		if err != nil {
			t.Fatal(err)
		}
		stale := owner(c, "r-c")
		stale.LeaseId = "not-the-lease"
		beat := func(o *stintv1.Owner) *stintv1.HeartbeatRequest {
			return &stintv1.HeartbeatRequest{Owner: o, LeaseTtl: durationpb.New(3600e9)}
		}
		res, err := e.worker(worker).HeartbeatMany(t.Context(), connect.NewRequest(&stintv1.HeartbeatManyRequest{Heartbeats: []*stintv1.HeartbeatRequest{
			beat(owner(a, "r-a")), beat(owner(theirs, "r-t")), beat(owner(b, "r-b")), beat(stale),
		}}))
		if err != nil {
			t.Fatal(err)
		}
		r := res.Msg.Results
		if len(r) != 4 {
			t.Fatalf("%d results for 4 heartbeats", len(r))
		}
		for _, i := range []int{0, 2} {
			if r[i].ErrorCode != "" || r[i].Heartbeat.GetJob().GetRev() <= a.Rev {
				t.Errorf("heartbeat %d: %+v, want the lease renewed", i, r[i])
			}
		}
		if r[1].ErrorCode != connect.CodeNotFound.String() {
			t.Errorf("another tenant's job: %+v, want not_found", r[1])
		}
		if r[3].ErrorCode == "" || server.KindError(r[3].ErrorKind) != store.ErrStaleLease {
			t.Errorf("a wrong lease: %+v, want stale_lease", r[3])
		}
		if after, _ := s.JobGet(t.Context(), theirs.Id); after.Rev != before.Rev {
			t.Errorf("another tenant's job moved from rev %d to %d", before.Rev, after.Rev)
		}
		if n, m := bc.single.Load(), bc.many.Load(); n != 0 || m != 1 {
			t.Errorf("%d single and %d batch heartbeat calls to the store, want 0 and 1", n, m)
		}
	})
}
