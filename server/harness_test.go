package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"connectrpc.com/connect"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/proto/stint/v1/stintv1connect"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

// backends opens a fresh store of each kind: SQLite always, PostgreSQL when
// STINT_TEST_DATABASE_URL is set (the subtest is skipped otherwise).
var backends = []struct {
	name string
	open func(t testing.TB) store.Store
}{
	{"sqlite", func(t testing.TB) store.Store {
		s, err := sqlite.OpenStore(t.Context(), filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"postgres", func(t testing.TB) store.Store { return pgtest.NewStore(t) }},
}

// eachBackend runs fn as a parallel subtest on each backend.
func eachBackend(t *testing.T, fn func(t *testing.T, s store.Store)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, b.open(t))
		})
	}
}

// env is a running API server on a store.
type env struct {
	t     testing.TB
	s     store.Store
	url   string
	clock clock.Clock
}

// start serves the API on s with an httptest server; cfg.Store is set.
func start(t testing.TB, s store.Store, cfg server.Config) *env {
	t.Helper()
	cfg.Store = s
	h, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{t: t, s: s, url: srv.URL, clock: cfg.Clock}
}

// token creates a token straight in the store and returns its secret.
func (e *env) token(tenant string, role store.Role) string {
	e.t.Helper()
	tok, secret, err := server.NewToken(tenant, role, tenant+"-"+string(role))
	if err != nil {
		e.t.Fatal(err)
	}
	keeper, err := store.TokensOf(e.s)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := keeper.TokenCreate(e.t.Context(), tok); err != nil {
		e.t.Fatal(err)
	}
	return secret
}

// bearer is a Connect interceptor that sends a token on unary and
// streaming calls.
func bearer(secret string) connect.ClientOption { return connect.WithInterceptors(bearerToken(secret)) }

type bearerToken string

func (b bearerToken) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if b != "" {
			req.Header().Set("Authorization", "Bearer "+string(b))
		}
		return next(ctx, req)
	}
}

func (b bearerToken) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		if b != "" {
			conn.RequestHeader().Set("Authorization", "Bearer "+string(b))
		}
		return conn
	}
}

func (b bearerToken) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func (e *env) jobs(secret string) stintv1connect.JobServiceClient {
	return stintv1connect.NewJobServiceClient(http.DefaultClient, e.url, bearer(secret))
}

func (e *env) worker(secret string) stintv1connect.WorkerServiceClient {
	return stintv1connect.NewWorkerServiceClient(http.DefaultClient, e.url, bearer(secret))
}

func (e *env) admin(secret string) stintv1connect.AdminServiceClient {
	return stintv1connect.NewAdminServiceClient(http.DefaultClient, e.url, bearer(secret))
}

// post sends a raw JSON body to procedure (as curl would) and returns the
// HTTP status and the decoded reply.
func (e *env) post(secret, procedure string, body []byte) (int, map[string]any) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.t.Context(), http.MethodPost, e.url+procedure, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, out
}

// count is the number of jobs in the store, of every tenant.
func (e *env) count() int {
	e.t.Helper()
	js, err := e.s.JobList(e.t.Context(), &store.JobListParams{Limit: store.MaxBatch})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(js)
}
