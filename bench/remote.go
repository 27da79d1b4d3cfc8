package bench

import (
	"context"
	"encoding/json"

	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
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
	// Embedded, when set, opens a store straight on the server's database:
	// before the remote pools start, one embedded pool with as many
	// handlers as the remote pools have in all (Pools × Slots) works the
	// same number of jobs, enqueued the same way at the same offered rate,
	// so that the two are compared in one run. EmbeddedDatabaseCPU reads
	// the CPU its database backends have used so far; nil when not known.
	Embedded            func(context.Context) (store.Store, error)
	EmbeddedDatabaseCPU func() (time.Duration, error)
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
	// ClientCPUPerJobUS is this process's CPU per job: the remote pools and
	// the producer.
	ClientCPUPerJobUS float64 `json:"client_cpu_per_job_us"`
	// RequestsPerJob is the HTTP requests the pools sent the server per
	// job while they worked (claims, completions, heartbeats; not the
	// producer's enqueues).
	RequestsPerJob float64 `json:"requests_per_job"`
	// Embedded is the embedded pool's phase, when it ran.
	Embedded          *EmbeddedReport `json:"embedded,omitempty"`
	IdleSeconds       float64         `json:"idle_seconds,omitempty"`
	ServerIdleCores   float64         `json:"server_idle_cores,omitempty"`
	DatabaseIdleCores float64         `json:"database_idle_cores,omitempty"`
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
	r := &remoteRun{cfg: cfg}
	if cfg.Embedded != nil {
		e, err := r.embedded(ctx)
		if err != nil {
			return rep, err
		}
		rep.Embedded = &e
	}
	stop, err := r.startPools(ctx)
	defer stop()
	if err != nil {
		return rep, err
	}
	if err := r.idle(ctx, &rep); err != nil {
		return rep, err
	}
	ph := r.begin(remoteQueue)
	m, err := r.meter()
	if err != nil {
		return rep, err
	}
	self, err := ProcCPU(os.Getpid())
	if err != nil {
		return rep, err
	}
	sent := r.requests.Load()
	if rep.EnqueueRate, err = r.load(ctx, ph); err != nil {
		return rep, err
	}
	rep.RequestsPerJob = float64(r.requests.Load()-sent) / float64(cfg.Jobs)
	server, db, secs, err := m.read()
	if err != nil {
		return rep, err
	}
	rep.Seconds = secs
	rep.WorkedRate = float64(cfg.Jobs) / secs
	if now, err := ProcCPU(os.Getpid()); err == nil {
		rep.ClientCPUPerJobUS = float64((now - self).Microseconds()) / float64(cfg.Jobs)
	}
	if rep.Embedded != nil && rep.Embedded.WorkedRate > 0 {
		rep.Embedded.RemoteShare = rep.WorkedRate / rep.Embedded.WorkedRate
	}
	if cfg.ServerCPU != nil {
		rep.ServerCPUPerJobUS = float64(server.Microseconds()) / float64(cfg.Jobs)
	}
	if cfg.DatabaseCPU != nil {
		rep.DatabaseCPUPerJobUS = float64(db.Microseconds()) / float64(cfg.Jobs)
	}
	rep.P50MS, rep.P99MS = ph.latency()
	rep.Runs, rep.ExactlyOnce, rep.Problems = ph.check()
	r.verify(ctx, &rep)
	return rep, nil
}

// The queues of the two phases: each phase's pools claim only its own.
const (
	remoteQueue   = "bench"
	embeddedQueue = "bench-embedded"
)

type remoteRun struct {
	cfg      RemoteConfig
	cur      atomic.Pointer[phase] // the phase the handler counts for
	requests atomic.Int64          // the pools' HTTP requests
}

// counting counts the requests a pool's HTTP client sends.
type counting struct {
	n    *atomic.Int64
	next http.RoundTripper
}

func (c counting) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(req)
}

// phase is what one phase's handlers saw.
type phase struct {
	queue string
	jobs  int
	mu    sync.Mutex
	runs  map[string]int
	lat   []time.Duration
	ran   atomic.Int64
	all   chan struct{} // closed when jobs handlers ran
}

// begin starts counting for a phase of cfg.Jobs jobs in queue.
func (r *remoteRun) begin(queue string) *phase {
	ph := &phase{queue: queue, jobs: r.cfg.Jobs, runs: make(map[string]int, r.cfg.Jobs), lat: make([]time.Duration, 0, r.cfg.Jobs), all: make(chan struct{})}
	r.cur.Store(ph)
	return ph
}

// latency returns the end-to-end p50 and p99 in milliseconds.
func (ph *phase) latency() (p50, p99 float64) {
	ph.mu.Lock()
	lat := slices.Clone(ph.lat)
	ph.mu.Unlock()
	slices.Sort(lat)
	return ms(quantile(lat, 0.5)), ms(quantile(lat, 0.99))
}

// check counts the runs: exactly once when every job ran once.
func (ph *phase) check() (runs int, once bool, problems []string) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	runs = int(ph.ran.Load())
	once = len(ph.runs) == ph.jobs
	for id, n := range ph.runs {
		if n != 1 {
			once = false
			problems = append(problems, fmt.Sprintf("job %s ran %d times", id, n))
		}
	}
	return runs, once && runs == ph.jobs, problems
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
		st, err := remote.New(remote.Options{URL: r.cfg.URL, Token: r.cfg.Token, HTTPClient: &http.Client{Transport: counting{&r.requests, tr}}})
		if err != nil {
			return stop, err
		}
		p, err := stint.NewPool(st, mux, stint.Config{Queues: map[string]int{remoteQueue: r.cfg.Slots}, WorkerID: fmt.Sprint("bench-pool-", i), Logger: log})
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
	ph := r.cur.Load()
	ph.mu.Lock()
	ph.runs[j.ID()]++
	ph.lat = append(ph.lat, now.Sub(time.Unix(0, sent.T)))
	ph.mu.Unlock()
	if ph.ran.Add(1) == int64(ph.jobs) {
		close(ph.all)
	}
	return nil
}

// idle reads the CPU of the server and database while the pools wait.
func (r *remoteRun) idle(ctx context.Context, rep *RemoteReport) error {
	if r.cfg.Idle < 0 || r.cfg.ServerCPU == nil {
		return nil
	}
	// Let the pools reach their first long poll (and the server's first
	// maintenance passes) before measuring: a moment more with many pools.
	if err := pause(ctx, max(2*time.Second, time.Duration(r.cfg.Pools)*10*time.Millisecond)); err != nil {
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

// load enqueues the phase's jobs through the API at the offered rate,
// waits until all ran, and returns the enqueue rate reached.
func (r *remoteRun) load(ctx context.Context, ph *phase) (float64, error) {
	producer, err := remote.New(remote.Options{URL: r.cfg.URL, Token: r.cfg.Token})
	if err != nil {
		return 0, err
	}
	defer producer.Close()
	start := time.Now()
	every := time.Duration(float64(r.cfg.Batch) / r.cfg.Rate * float64(time.Second))
	tick := time.NewTicker(max(every, time.Microsecond))
	defer tick.Stop()
	for sent := 0; sent < r.cfg.Jobs; {
		n := min(r.cfg.Batch, r.cfg.Jobs-sent)
		at := time.Now().UnixNano()
		specs := make([]lifecycle.Spec, n)
		for i := range specs {
			specs[i] = lifecycle.Spec{Kind: remoteKind, Queue: ph.queue, Payload: json.RawMessage(fmt.Sprintf(`{"t":%d}`, at))}
		}
		if _, err := producer.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs}); err != nil {
			return 0, fmt.Errorf("enqueue: %w", err)
		}
		sent += n
		if sent < r.cfg.Jobs {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-tick.C: // a batch late on its tick is sent at once: the rate offered is kept when possible
			}
		}
	}
	rate := float64(r.cfg.Jobs) / time.Since(start).Seconds()
	select {
	case <-ph.all:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(Patience + time.Duration(float64(r.cfg.Jobs)/r.cfg.Rate*float64(time.Second))):
		return 0, fmt.Errorf("bench: only %d of %d jobs ran", ph.ran.Load(), r.cfg.Jobs)
	}
	return rate, nil
}

// verify checks the database.
func (r *remoteRun) verify(ctx context.Context, rep *RemoteReport) {
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

// OK reports whether the run was exactly once in every phase and (when
// checked) verified clean.
func (rep RemoteReport) OK() bool {
	return rep.ExactlyOnce && len(rep.Problems) == 0 && (rep.Embedded == nil || rep.Embedded.ExactlyOnce && len(rep.Embedded.Problems) == 0)
}
