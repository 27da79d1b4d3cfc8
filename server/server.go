package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"connectrpc.com/connect"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/proto/stint/v1/stintv1connect"
	"github.com/stint-dev/stint/server/dispatch"
	"github.com/stint-dev/stint/store"
)

// Config configures the API handler built by [New].
type Config struct {
	// Store holds the jobs; required. It must keep tokens (see
	// store.TokensOf) unless NoAuth is set.
	Store store.Store
	// NoAuth serves every request as an admin of the default tenant, without
	// a token. Only for loopback listeners (stint server refuses otherwise
	// unless --insecure). Defaults to false.
	NoAuth bool
	// MaxJSONBytes bounds payloads, results, checkpoints and progress.
	// Defaults to 1 MiB.
	MaxJSONBytes int
	// MaxClaimWait bounds a claim's long poll. Defaults to 60s.
	MaxClaimWait time.Duration
	// DefaultLeaseTTL is the lease of a claim or heartbeat that names none.
	// Defaults to 60s.
	DefaultLeaseTTL time.Duration
	// Clock times long polls. Defaults to the system clock.
	Clock clock.Clock
	// Dispatcher serves the claims that wait (long polls). Defaults to one
	// over Store with Clock and Logger; tests pass their own to watch it.
	Dispatcher *dispatch.Dispatcher
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// WithDefaults returns c with every unset field given its default.
func (c Config) WithDefaults() Config {
	if c.MaxJSONBytes == 0 {
		c.MaxJSONBytes = DefaultMaxJSONBytes
	}
	if c.MaxClaimWait == 0 {
		c.MaxClaimWait = 60 * time.Second
	}
	if c.DefaultLeaseTTL == 0 {
		c.DefaultLeaseTTL = 60 * time.Second
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Store == nil:
		return errors.New("server: Config.Store is required")
	case c.MaxJSONBytes < 0 || c.MaxClaimWait < 0 || c.DefaultLeaseTTL < 0:
		return errors.New("server: Config limits must not be negative")
	}
	return nil
}

// service is the shared state of the three services.
type service struct {
	cfg    Config
	s      store.Store
	tokens store.Tokens // nil when the store keeps none (NoAuth)
	claims *dispatch.Dispatcher
	owners *owners // the tenants of jobs this server leased (owners.go)
	// completes merges the completion calls of concurrent requests
	// (completes.go).
	completes *completes
}

// New returns the API as an http.Handler serving the jobs, runs, worker and
// admin services (Connect, gRPC and gRPC-Web, and plain JSON over HTTP POST) under
// /stint.v1.*/, behind bearer-token authentication.
func New(cfg Config) (http.Handler, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	tokens, err := store.TokensOf(cfg.Store)
	if err != nil && !cfg.NoAuth {
		return nil, fmt.Errorf("server: the store keeps no tokens (%w): authentication needs one", err)
	}
	claims := cfg.Dispatcher
	if claims == nil {
		if claims, err = dispatch.New(dispatch.Config{Store: cfg.Store, Clock: cfg.Clock, Logger: cfg.Logger}); err != nil {
			return nil, err
		}
	}
	svc := &service{cfg: cfg, s: cfg.Store, tokens: tokens, claims: claims, owners: newOwners(100_000)}
	svc.completes = &completes{s: cfg.Store}
	// A message may carry a batch of payloads; beyond this it is refused
	// before it is decoded.
	opts := []connect.HandlerOption{
		connect.WithReadMaxBytes(16*cfg.MaxJSONBytes + 1<<20),
		connect.WithCodec(strictJSON{"json"}),
		connect.WithCodec(strictJSON{"json; charset=utf-8"}),
		connect.WithInterceptors(logFailures(cfg.Logger)),
		// Compress (for clients that ask) only what is worth it: gzip of
		// every small reply cost a tenth of the server's CPU per job.
		connect.WithCompressMinBytes(compressMinBytes),
	}
	mux := http.NewServeMux()
	mux.Handle(stintv1connect.NewJobServiceHandler(&jobs{svc}, opts...))
	mux.Handle(stintv1connect.NewWorkerServiceHandler(&worker{svc}, opts...))
	mux.Handle(stintv1connect.NewAdminServiceHandler(&admin{svc}, opts...))
	mux.Handle(stintv1connect.NewRunServiceHandler(&runs{svc}, opts...))
	return authenticate(tokens, cfg.NoAuth, mux), nil
}

// compressMinBytes is the smallest reply the server compresses for a
// client that accepts gzip.
const compressMinBytes = 8 << 10

// get reads job id for the caller's tenant: another tenant's job is NotFound.
func (s *service) get(ctx context.Context, t tenant, id string) (store.Job, error) {
	if err := checkName("job id", id); err != nil {
		return store.Job{}, err
	}
	j, err := s.s.JobGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !t.owns(j)) {
		return store.Job{}, notFound(id)
	}
	return j, toConnect(err)
}

// logFailures logs the calls that failed on the server's side (internal,
// unknown, unavailable): the caller sees only the message, the operator
// needs to know. Refusals of bad requests are the caller's business.
func logFailures(log *slog.Logger) connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			res, err := next(ctx, req)
			if err == nil {
				return res, nil // connect.CodeOf(nil) is CodeUnknown
			}
			switch connect.CodeOf(err) {
			case connect.CodeInternal, connect.CodeUnknown, connect.CodeUnavailable, connect.CodeDataLoss:
				log.ErrorContext(ctx, "server: call failed", "procedure", req.Spec().Procedure, "error", err)
			}
			return res, err
		}
	}
}
