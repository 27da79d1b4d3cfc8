package bench

import (
	"context"
	"encoding/json"

	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/server/remote"
	"github.com/stint-dev/stint/store"
)

// RemoteConfig configures a remote-workers benchmark (stint bench remote).
type RemoteConfig struct {
	// URL and Token reach the server; URL is required.
	URL, Token string
	// Pools is how many remote pools work, each with Slots handlers at once.
	// Default to 20 and 2.
	Pools, Slots int
	// Jobs is how many no-op jobs are enqueued, in batches of Batch, at an
	// offered rate of Rate jobs a second. Default to 10,000, 100 and 1,000.
	Jobs, Batch int
	Rate        float64
	// Idle is how long the server's CPU is read while the pools wait with
	// no job. Defaults to 10s; negative skips it.
	Idle time.Duration
	// ServerCPU and DatabaseCPU read the CPU time the server process and
	// the database's backends have used so far; nil when not known (a
	// server given by URL, a database on another machine).
	ServerCPU, DatabaseCPU func() (time.Duration, error)
	// Verify checks the database at the end; nil when not reachable.
	Verify func(context.Context) (store.VerifyReport, error)
}

// RemoteReport is what a remote benchmark measured.
type RemoteReport struct {
	Pools               int     `json:"pools"`
	Slots               int     `json:"slots"`
	Jobs                int     `json:"jobs"`
	Batch               int     `json:"batch"`
	OfferedRate         float64 `json:"offered_per_second"`
	EnqueueRate         float64 `json:"enqueue_per_second"`
	WorkedRate          float64 `json:"worked_per_second"`
	Seconds             float64 `json:"seconds"`
	P50MS               float64 `json:"end_to_end_p50_ms"`
	P99MS               float64 `json:"end_to_end_p99_ms"`
	ServerCPUPerJobUS   float64 `json:"server_cpu_per_job_us,omitempty"`
	DatabaseCPUPerJobUS float64 `json:"database_cpu_per_job_us,omitempty"`
	IdleSeconds         float64 `json:"idle_seconds,omitempty"`
	ServerIdleCores     float64 `json:"server_idle_cores,omitempty"`
	DatabaseIdleCores   float64 `json:"database_idle_cores,omitempty"`
	// Runs counts handler executions; ExactlyOnce is true when every job ran once.
	Runs        int      `json:"runs"`
	ExactlyOnce bool     `json:"exactly_once"`
	Verified    bool     `json:"verified"`
	Problems    []string `json:"problems,omitempty"`
}

func (c *RemoteConfig) withDefaults() {
	c.Pools = orDefault(c.Pools, 20)
	c.Slots = orDefault(c.Slots, 2)
	c.Jobs = orDefault(c.Jobs, 10_000)
	c.Batch = orDefault(c.Batch, 100)
	if c.Rate == 0 {
		c.Rate = 1000
	}
	if c.Idle == 0 {
		c.Idle = 10 * time.Second
	}
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// remoteKind is the kind of the remote benchmark's jobs; their payload
// holds the time their batch was sent, in Unix nanoseconds ({"t": ...}).
const remoteKind = "bench.remote"

// RunRemote starts cfg.Pools stock pools over remote stores, waits until
// they wait, measures the server's idle CPU, then enqueues cfg.Jobs through
// the API at the offered rate and measures until every job ran.
func RunRemote(ctx context.Context, cfg RemoteConfig) (RemoteReport, error) {
	cfg.withDefaults()
	rep := RemoteReport{Pools: cfg.Pools, Slots: cfg.Slots, Jobs: cfg.Jobs, Batch: cfg.Batch, OfferedRate: cfg.Rate}
	r := &remoteRun{cfg: cfg, runs: make(map[string]int, cfg.Jobs), lat: make([]time.Duration, 0, cfg.Jobs), all: make(chan struct{})}
	stop, err := r.startPools(ctx)
	defer stop()
	if err != nil {
		return rep, err
	}
	if err := r.idle(ctx, &rep); err != nil {
		return rep, err
	}
	if err := r.load(ctx, &rep); err != nil {
		return rep, err
	}
	r.check(ctx, &rep)
	return rep, nil
}

type remoteRun struct {
	cfg RemoteConfig

	mu   sync.Mutex
	runs map[string]int
	lat  []time.Duration
	ran  atomic.Int64
	all  chan struct{} // closed when Jobs handlers ran
}

// startPools starts the pools, each on a store of its own (its own
// connections, as separate worker machines would have).
func (r *remoteRun) startPools(ctx context.Context) (func(), error) {
	var stops []func()
	stop := func() {
		var wg sync.WaitGroup
		for _, s := range stops {
			wg.Go(s)
		}
		wg.Wait()
	}
	mux := stint.NewMux()
	mux.HandleFunc(remoteKind, r.handle)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i := range r.cfg.Pools {
		// A client of its own, as a pool on a machine of its own has.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 8
		st, err := remote.New(remote.Options{URL: r.cfg.URL, Token: r.cfg.Token, HTTPClient: &http.Client{Transport: tr}})
		if err != nil {
			return stop, err
		}
		p, err := stint.NewPool(st, mux, stint.Config{Queues: map[string]int{"bench": r.cfg.Slots}, WorkerID: fmt.Sprint("bench-pool-", i), Logger: log})
		if err != nil {
			st.Close()
			return stop, err
		}
		if err := p.Start(ctx); err != nil {
			st.Close()
			return stop, err
		}
		stops = append(stops, func() {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = p.Stop(sctx)
			st.Close()
		})
	}
	return stop, nil
}

// handle is the no-op handler: it notes the job's run and its latency.
func (r *remoteRun) handle(_ context.Context, j *stint.Job) error {
	now := time.Now()
	var sent struct{ T int64 }
	_ = json.Unmarshal(j.Payload(), &sent)
	r.mu.Lock()
	r.runs[j.ID()]++
	r.lat = append(r.lat, now.Sub(time.Unix(0, sent.T)))
	r.mu.Unlock()
	if r.ran.Add(1) == int64(r.cfg.Jobs) {
		close(r.all)
	}
	return nil
}

// idle reads the CPU of the server and database while the pools wait.
func (r *remoteRun) idle(ctx context.Context, rep *RemoteReport) error {
	if r.cfg.Idle < 0 || r.cfg.ServerCPU == nil {
		return nil
	}
	// Let the pools reach their first long poll before measuring.
	if err := pause(ctx, 2*time.Second); err != nil {
		return err
	}
	m, err := r.meter()
	if err != nil {
		return err
	}
	if err := pause(ctx, r.cfg.Idle); err != nil {
		return err
	}
	server, db, secs, err := m.read()
	if err != nil {
		return err
	}
	rep.IdleSeconds = secs
	rep.ServerIdleCores = server.Seconds() / secs
	rep.DatabaseIdleCores = db.Seconds() / secs
	return nil
}

func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// load enqueues the jobs at the offered rate and waits until all ran.
func (r *remoteRun) load(ctx context.Context, rep *RemoteReport) error {
	producer, err := remote.New(remote.Options{URL: r.cfg.URL, Token: r.cfg.Token})
	if err != nil {
		return err
	}
	defer producer.Close()
	m, err := r.meter()
	if err != nil {
		return err
	}
	start := time.Now()
	every := time.Duration(float64(r.cfg.Batch) / r.cfg.Rate * float64(time.Second))
	tick := time.NewTicker(every)
	defer tick.Stop()
	for sent := 0; sent < r.cfg.Jobs; {
		n := min(r.cfg.Batch, r.cfg.Jobs-sent)
		at := time.Now().UnixNano()
		specs := make([]lifecycle.Spec, n)
		for i := range specs {
			specs[i] = lifecycle.Spec{Kind: remoteKind, Queue: "bench", Payload: json.RawMessage(fmt.Sprintf(`{"t":%d}`, at))}
		}
		if _, err := producer.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs}); err != nil {
			return fmt.Errorf("enqueue: %w", err)
		}
		sent += n
		if sent < r.cfg.Jobs {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C: // a batch late on its tick is sent at once: the rate offered is kept when possible
			}
		}
	}
	rep.EnqueueRate = float64(r.cfg.Jobs) / time.Since(start).Seconds()
	select {
	case <-r.all:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(Patience + time.Duration(float64(r.cfg.Jobs)/r.cfg.Rate*float64(time.Second))):
		return fmt.Errorf("bench: only %d of %d jobs ran", r.ran.Load(), r.cfg.Jobs)
	}
	server, db, secs, err := m.read()
	if err != nil {
		return err
	}
	rep.Seconds = secs
	rep.WorkedRate = float64(r.cfg.Jobs) / secs
	if r.cfg.ServerCPU != nil {
		rep.ServerCPUPerJobUS = float64(server.Microseconds()) / float64(r.cfg.Jobs)
	}
	if r.cfg.DatabaseCPU != nil {
		rep.DatabaseCPUPerJobUS = float64(db.Microseconds()) / float64(r.cfg.Jobs)
	}
	r.mu.Lock()
	lat := slices.Clone(r.lat)
	r.mu.Unlock()
	slices.Sort(lat)
	rep.P50MS, rep.P99MS = ms(quantile(lat, 0.5)), ms(quantile(lat, 0.99))
	return nil
}

// check counts the runs and verifies the database.
func (r *remoteRun) check(ctx context.Context, rep *RemoteReport) {
	r.mu.Lock()
	rep.Runs = int(r.ran.Load())
	once := len(r.runs) == r.cfg.Jobs
	for id, n := range r.runs {
		if n != 1 {
			once = false
			rep.Problems = append(rep.Problems, fmt.Sprintf("job %s ran %d times", id, n))
		}
	}
	r.mu.Unlock()
	rep.ExactlyOnce = once && rep.Runs == r.cfg.Jobs
	if r.cfg.Verify == nil {
		return
	}
	v, err := r.cfg.Verify(ctx)
	if err != nil {
		rep.Problems = append(rep.Problems, "verify: "+err.Error())
		return
	}
	for _, f := range v.Findings {
		rep.Problems = append(rep.Problems, fmt.Sprintf("verify: job %s: %s", f.JobID, f.Problem))
	}
	rep.Verified = len(v.Findings) == 0
}

// meter reads CPU used since it was made.
type meter struct {
	r          *remoteRun
	at         time.Time
	server, db time.Duration
}

func (r *remoteRun) meter() (*meter, error) {
	m := &meter{r: r, at: time.Now()}
	var err error
	m.server, m.db, err = r.cpu()
	return m, err
}

func (m *meter) read() (server, db time.Duration, secs float64, err error) {
	s, d, err := m.r.cpu()
	return s - m.server, d - m.db, time.Since(m.at).Seconds(), err
}

func (r *remoteRun) cpu() (server, db time.Duration, err error) {
	if r.cfg.ServerCPU != nil {
		if server, err = r.cfg.ServerCPU(); err != nil {
			return 0, 0, err
		}
	}
	if r.cfg.DatabaseCPU != nil {
		db, err = r.cfg.DatabaseCPU()
	}
	return server, db, err
}

// OK reports whether the run was exactly once and (when checked) verified clean.
func (rep RemoteReport) OK() bool {
	return rep.ExactlyOnce && len(rep.Problems) == 0
}
