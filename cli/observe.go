package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/dashboard"
	"github.com/stint-dev/stint/metrics"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/stats"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/tracing"
)

// observedStore is a store instrumented for metrics that carries what
// serveAPI mounts beside the API: /metrics, /stats and the dashboard.
type observedStore struct {
	store.Store
	obs *observability
}

// observability is the metrics registry, the background job counter and
// the dashboard of one stint server or stint dev process.
type observability struct {
	reg     *prometheus.Registry
	m       *metrics.Metrics
	counter *stats.Counter
	workers stats.Workers
	raw     store.Store
	tracer  trace.TracerProvider
	// bus is the bus bridge of this process, for the dashboard's bus page
	// (set by startBus); nil when none runs.
	bus dashboard.BusBridge
}

// observe wraps st for metrics and starts counting its jobs in the
// background (every every) until ctx ends. The returned store is what the pool, the
// services and the API should use.
func observe(ctx context.Context, st store.Store, clk clock.Clock, log *slog.Logger, every time.Duration, opts ...metrics.Option) (store.Store, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := metrics.New(reg, opts...)
	if err != nil {
		return nil, err
	}
	c := stats.NewCounter(st, stats.Config{Clock: clk, Logger: log, Interval: every, Ended: m.Ended,
		OnCount: (&unservedReporter{log: log}).count})
	if err := m.Jobs(c); err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, c.Stop)
	o := &observability{reg: reg, m: m, counter: c, raw: st}
	inner := m.Store(st)
	// Traces are off unless the OTEL_* variables ask for them.
	tp, shutdown, err := tracing.FromEnv(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing from the OTEL_* environment variables: %w", err)
	}
	context.AfterFunc(ctx, func() { _ = shutdown(context.Background()) })
	o.tracer = tp
	inner = tracing.Store(inner, tp)
	// Optional capabilities (tokens, queue controls, schedules) are found
	// under the wrappers by store.As.
	return &observedStore{Store: inner, obs: o}, nil
}

func (s *observedStore) observability() *observability { return s.obs }

// Unwrap returns the store underneath, so store.As reaches its optional
// capabilities (the metrics and tracing wrappers unwrap the same way).
func (s *observedStore) Unwrap() store.Store { return s.Store }

// observabilityOf returns what st carries, or nil for a plain store.
func observabilityOf(st store.Store) *observability {
	if o, ok := st.(interface{ observability() *observability }); ok {
		return o.observability()
	}
	return nil
}

// setWorkers reports a pool's busy and total worker slots as metrics and in
// /stats.
func (o *observability) setWorkers(w stats.Workers) error {
	o.workers = w
	return o.m.Pool("local", w)
}

// mount serves /metrics, /stats and the dashboard (/dashboard/) beside api
// (the rest of the paths). The dashboard takes the API's tokens, or none
// with noAuth.
func (o *observability) mount(api http.Handler, st store.Store, noAuth bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", api)
	dash, err := dashboard.New(dashboard.Config{Store: st, Counter: o.counter, NoAuth: noAuth, Workers: o.busy, Bus: o.bus})
	if err == nil {
		mux.Handle("/dashboard/", http.StripPrefix("/dashboard", dash))
		mux.Handle("GET /dashboard", http.RedirectHandler("/dashboard/", http.StatusFound))
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.reg, promhttp.HandlerOpts{}))
	mux.Handle("GET /stats", stats.Handler(o.counter, o.busy))
	return mux
}

// busy reports the local pool's worker slots; none on stint server.
func (o *observability) busy() (int, int) {
	if o.workers == nil {
		return 0, 0
	}
	return o.workers()
}

// traceDev runs stint dev's handlers in spans (a no-op unless OTEL_* asks).
func traceDev(st store.Store, mux *stint.Mux) {
	if o := observabilityOf(st); o != nil {
		mux.Use(tracing.Middleware(o.tracer))
	}
}

// observeDevPool reports stint dev's pool utilisation.
func observeDevPool(st store.Store, pool *stint.Pool, queues map[string]int) error {
	o := observabilityOf(st)
	if o == nil {
		return nil
	}
	capacity := 0
	for _, n := range queues {
		capacity += n
	}
	return o.setWorkers(func() (int, int) { return int(pool.Stats().Running), capacity })
}

// observeWorker instruments stint worker: its store for metrics and
// traces, its handlers for traces, and with addr set it serves /metrics
// there until ctx ends (stint_pool_* included, for autoscalers). It returns
// the store to use and what to call with the pool once made.
func observeWorker(ctx context.Context, st store.Store, mux *stint.Mux, addr string, out io.Writer, opts ...metrics.Option) (store.Store, func(*stint.Pool, map[string]int) error, error) {
	tp, shutdown, err := tracing.FromEnv(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing from the OTEL_* environment variables: %w", err)
	}
	context.AfterFunc(ctx, func() { _ = shutdown(context.Background()) })
	mux.Use(tracing.Middleware(tp))
	if addr == "" {
		return tracing.Store(st, tp), func(*stint.Pool, map[string]int) error { return nil }, nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := metrics.New(reg, opts...)
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-listen %s: %w", addr, err)
	}
	h := http.NewServeMux()
	h.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: server.Guard(h, 0, 0), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() { _ = srv.Serve(ln) }()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	fmt.Fprintf(out, "metrics on http://%s/metrics\n", ln.Addr())
	withPool := func(pool *stint.Pool, queues map[string]int) error {
		capacity := 0
		for _, n := range queues {
			capacity += n
		}
		return m.Pool("worker", func() (int, int) { return int(pool.Stats().Running), capacity })
	}
	return tracing.Store(m.Store(st), tp), withPool, nil
}

// EnvMetricsMaxLabelValues bounds the values of each user-named label
// (queue, kind) on /metrics of stint dev, server and worker: see
// metrics.MaxLabelValues. Defaults to metrics.DefaultMaxLabelValues.
const EnvMetricsMaxLabelValues = "STINT_METRICS_MAX_LABEL_VALUES"

// metricsOptions reads EnvMetricsMaxLabelValues; a value that is not a
// positive integer is refused, so a typo never silently means the default.
func (a *app) metricsOptions() ([]metrics.Option, error) {
	v := a.env.Getenv(EnvMetricsMaxLabelValues)
	if v == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return nil, usageErrorf("%s=%q: expected a positive integer (default %d)", EnvMetricsMaxLabelValues, v, metrics.DefaultMaxLabelValues)
	}
	return []metrics.Option{metrics.MaxLabelValues(n)}, nil
}
