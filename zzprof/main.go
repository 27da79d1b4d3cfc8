package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"strconv"
	"sync/atomic"

	"github.com/stint-dev/stint/bench"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
)

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

type counted struct {
	store.Store
	claims, many, manyClaims, completes, completeItems atomic.Int64
}

func (c *counted) Unwrap() store.Store { return c.Store }
func (c *counted) JobClaim(ctx context.Context, p *store.JobClaimParams) ([]store.Job, error) {
	c.claims.Add(1)
	return c.Store.JobClaim(ctx, p)
}
func (c *counted) JobClaimMany(ctx context.Context, ps []store.JobClaimParams) ([]store.ClaimResult, error) {
	c.many.Add(1)
	c.manyClaims.Add(int64(len(ps)))
	cm, _ := store.As[store.ClaimManyStore](c.Store)
	return cm.JobClaimMany(ctx, ps)
}
func (c *counted) JobComplete(ctx context.Context, ps []store.JobCompleteParams) ([]store.Result, error) {
	c.completes.Add(1)
	c.completeItems.Add(int64(len(ps)))
	return c.Store.JobComplete(ctx, ps)
}

func main() {
	ctx := context.Background()
	url := "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	st, err := postgres.OpenStore(ctx, url, postgres.Options{Schema: "zzprof" + os.Getenv("POOLS")})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	cs := &counted{Store: st}
	h, err := server.New(server.Config{Store: cs, NoAuth: true})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	f, _ := os.Create("/tmp/server.prof")
	pprof.StartCPUProfile(f)
	rep, err := bench.RunRemote(ctx, bench.RemoteConfig{URL: srv.URL, Pools: atoi(os.Getenv("POOLS")), Slots: 2, Jobs: atoi(os.Getenv("JOBS")), Rate: 1000, Idle: -1})
	pprof.StopCPUProfile()
	fmt.Printf("worked %.0f/s p50 %.0f p99 %.0f once %v err %v\n", rep.WorkedRate, rep.P50MS, rep.P99MS, rep.ExactlyOnce, err)
	fmt.Printf("claims %d, many %d (%d claims), completes %d (%d items)\n", cs.claims.Load(), cs.many.Load(), cs.manyClaims.Load(), cs.completes.Load(), cs.completeItems.Load())
}
