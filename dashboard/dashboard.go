package dashboard

import (
	"embed"
	"errors"
	"io/fs"
	"net/http"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/stats"
	"github.com/stint-dev/stint/store"
)

//go:embed assets
var assets embed.FS

// DefaultStaleAfter is how old a leased job's last heartbeat may get before
// the dashboard lists it as stalled.
const DefaultStaleAfter = 30 * time.Second

// Config configures the dashboard built by [New].
type Config struct {
	// Store holds the jobs; required.
	Store store.Store
	// Counter counts the jobs by queue and state in the background; the
	// queues page reads its snapshot. Required (start it yourself).
	Counter *stats.Counter
	// Tokens checks the bearer tokens of requests; required unless NoAuth.
	// Defaults to store.TokensOf(Store) when Store keeps tokens.
	Tokens store.Tokens
	// NoAuth serves every request as an admin of the default tenant, for a
	// dashboard your own auth already guards. Defaults to false.
	NoAuth bool
	// ReadOnly refuses every change (cancel, replay, pause) and hides the buttons.
	// Defaults to false.
	ReadOnly bool
	// Workers, when set, reports the busy and total worker slots of the
	// pools in this process. Defaults to nil.
	Workers stats.Workers
	// StaleAfter is how old a leased job's last heartbeat may get before it
	// is listed as stalled. Defaults to DefaultStaleAfter.
	StaleAfter time.Duration
	// Clock times lease ages. Defaults to the system clock.
	Clock clock.Clock
	// Bus, when set, is the bus bridge of this process: the bus page shows
	// its consumers, their lag and its counts. Defaults to nil (no page).
	Bus BusBridge
}

// handler serves the dashboard.
type handler struct {
	cfg    Config
	client *stint.Client
	hist   *historyCache // nil when the store keeps no history
}

// New returns the dashboard for cfg.
func New(cfg Config) (http.Handler, error) {
	if cfg.Store == nil || cfg.Counter == nil {
		return nil, errors.New("dashboard: Config.Store and Config.Counter are required")
	}
	if cfg.Tokens == nil && !cfg.NoAuth {
		t, err := store.TokensOf(cfg.Store)
		if err != nil {
			return nil, errors.New("dashboard: the store keeps no tokens: give Config.Tokens, or set NoAuth behind your own auth")
		}
		cfg.Tokens = t
	}
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = DefaultStaleAfter
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	client, err := stint.NewClient(cfg.Store, stint.ClientConfig{Clock: cfg.Clock})
	if err != nil {
		return nil, err
	}
	h := &handler{cfg: cfg, client: client}
	if hr, err := store.HistoryOf(cfg.Store); err == nil {
		h.hist = &historyCache{reader: hr, clock: cfg.Clock}
	}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServerFS(static))
	api := http.NewServeMux()
	api.HandleFunc("GET /api/whoami", h.whoami)
	api.HandleFunc("GET /api/queues", h.queues)
	api.HandleFunc("GET /api/unserved", h.unserved)
	api.HandleFunc("GET /api/flow", h.flow)
	api.HandleFunc("POST /api/flow/pause", h.mutate(rolePause, h.pause(true)))
	api.HandleFunc("POST /api/flow/resume", h.mutate(rolePause, h.pause(false)))
	api.HandleFunc("GET /api/jobs", h.jobs)
	api.HandleFunc("GET /api/jobs/{id}", h.job)
	api.HandleFunc("POST /api/jobs/{id}/cancel", h.mutate(roleCancel, h.cancel))
	api.HandleFunc("POST /api/jobs/{id}/replay", h.mutate(roleReplay, h.replay))
	api.HandleFunc("GET /api/dlq", h.dlq)
	api.HandleFunc("POST /api/dlq/replay", h.mutate(roleReplay, h.dlqReplay))
	api.HandleFunc("GET /api/stalled", h.stalled)
	api.HandleFunc("GET /api/workers", h.workers)
	api.HandleFunc("GET /api/runs", h.runs)
	api.HandleFunc("GET /api/runs/{id}", h.run)
	api.HandleFunc("POST /api/runs/{id}/cancel", h.mutate(roleCancel, h.runCancel))
	api.HandleFunc("POST /api/runs/{id}/rerun", h.mutate(roleCancel, h.runRerun))
	api.HandleFunc("GET /api/history", h.history)
	api.HandleFunc("GET /api/schedules", h.schedules)
	api.HandleFunc("POST /api/schedules", h.mutate(rolePause, h.scheduleAdd))
	api.HandleFunc("POST /api/schedules/{name}/pause", h.mutate(rolePause, h.schedulePause(true)))
	api.HandleFunc("POST /api/schedules/{name}/resume", h.mutate(rolePause, h.schedulePause(false)))
	api.HandleFunc("POST /api/schedules/{name}/delete", h.mutate(rolePause, h.scheduleDelete))
	api.HandleFunc("GET /api/search", h.search)
	api.HandleFunc("GET /api/search/count", h.searchCount)
	api.HandleFunc("POST /api/search/cancel", h.mutate(roleCancel, h.searchBulk(bulkCancel)))
	api.HandleFunc("POST /api/search/replay", h.mutate(roleReplay, h.searchBulk(bulkReplay)))
	api.HandleFunc("GET /api/outbox", h.outbox)
	api.HandleFunc("POST /api/outbox/{id}/replay", h.mutate(roleReplay, h.outboxReplay))
	api.HandleFunc("GET /api/bus", h.busPage)
	mux.Handle("/api/", h.authenticate(api))
	return mux, nil
}
