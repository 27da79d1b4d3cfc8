// Package remote is a store.Store over a stint server's API, so code written
// against the store (stint.NewPool, stint.NewClient) runs against a server
// unchanged: the same handlers, heartbeats, cancellation and fencing, with
// the network underneath and the tenant and role of a bearer token.
//
// The maintenance verbs (promote, reap, time out, retain), leader election
// and Verify belong to the server and its database: here they return an
// *UnsupportedError, which matches store.ErrUnsupported.
package remote

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"connectrpc.com/connect"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/proto/stint/v1/stintv1connect"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// Options configure a remote store.
type Options struct {
	// URL is the server's base URL, such as http://127.0.0.1:7777; required.
	URL string
	// Token is the bearer token's secret; required unless the server runs
	// with --no-auth.
	Token string
	// Tenant, when set, is the token's tenant: specs may name it (a replay
	// copies the original's). Defaults to empty: specs name no tenant.
	Tenant string
	// HTTPClient sends the requests. Defaults to http.DefaultClient.
	HTTPClient connect.HTTPClient
	// Clock turns a caller's RetryAt into the delay sent to the server.
	// Defaults to the system clock.
	Clock clock.Clock
}

// Store is a store.Store over a server. It is safe for concurrent use.
type Store struct {
	opts    Options
	jobs    stintv1connect.JobServiceClient
	worker  stintv1connect.WorkerServiceClient
	notices *notices

	closeOnce sync.Once
}

var _ store.Store = (*Store)(nil)

// New returns a store that talks to the server at opts.URL. It connects
// lazily: a wrong URL or token shows at the first call.
func New(opts Options) (*Store, error) {
	if opts.URL == "" {
		return nil, errors.New("remote: Options.URL is required: the server's address, such as http://127.0.0.1:7777")
	}
	if !strings.HasPrefix(opts.URL, "http://") && !strings.HasPrefix(opts.URL, "https://") {
		return nil, fmt.Errorf("remote: URL %q: expected http://HOST:PORT or https://HOST:PORT", opts.URL)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	url := strings.TrimSuffix(opts.URL, "/")
	auth := connect.WithInterceptors(bearer(opts.Token))
	s := &Store{
		opts:   opts,
		jobs:   stintv1connect.NewJobServiceClient(opts.HTTPClient, url, auth),
		worker: stintv1connect.NewWorkerServiceClient(opts.HTTPClient, url, auth),
	}
	s.notices = newNotices(s.worker)
	return s, nil
}

// bearer adds the token to every request, unary and streaming.
type bearer string

func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if b != "" {
			req.Header().Set("Authorization", "Bearer "+string(b))
		}
		return next(ctx, req)
	}
}

func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		if b != "" {
			conn.RequestHeader().Set("Authorization", "Bearer "+string(b))
		}
		return conn
	}
}

func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// Error is a refusal from the server: the store condition it names (Kind,
// such as store.ErrStaleLease, so errors.Is works as with a local store),
// the Connect code, and the server's message.
type Error struct {
	Kind error
	Code connect.Code
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the store condition, or nil when the server named none.
func (e *Error) Unwrap() error { return e.Kind }

// fromWire turns a Connect error into an *Error that matches the store's
// sentinel errors; transport errors pass through.
func fromWire(err error) error {
	var ce *connect.Error
	if err == nil || !errors.As(err, &ce) {
		return err
	}
	kind := server.KindError(ce.Meta().Get(server.ErrorKindHeader))
	msg := ce.Message()
	switch ce.Code() {
	case connect.CodeUnauthenticated:
		msg = "the server refused the token: " + msg
	case connect.CodePermissionDenied:
		msg = "the token's role may not do this: " + msg
	}
	if kind == nil {
		return fmt.Errorf("remote: %w", err) // a transport or server failure
	}
	return &Error{Kind: kind, Code: ce.Code(), Msg: msg}
}

// UnsupportedError is returned by the store methods that only the server's
// own store performs.
type UnsupportedError struct{ Method string }

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("remote: %s runs on the server, not over its API: the server's maintenance services and `stint verify` on its database do it", e.Method)
}

// Is makes errors.Is(err, store.ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == store.ErrUnsupported }

// Close ends the notices stream. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(s.notices.close)
	return nil
}

// The maintenance verbs, retention, leader election and Verify run on the server.

func (s *Store) JobPromoteDue(context.Context, *store.MaintainParams) (int, error) {
	return 0, &UnsupportedError{"JobPromoteDue"}
}
func (s *Store) JobStallExpired(context.Context, *store.MaintainParams) (int, error) {
	return 0, &UnsupportedError{"JobStallExpired"}
}
func (s *Store) JobRequeueStalled(context.Context, *store.MaintainParams) (int, error) {
	return 0, &UnsupportedError{"JobRequeueStalled"}
}
func (s *Store) JobForceCancelDue(context.Context, *store.MaintainParams) (int, error) {
	return 0, &UnsupportedError{"JobForceCancelDue"}
}
func (s *Store) JobTimeOutDue(context.Context, *store.MaintainParams) (int, error) {
	return 0, &UnsupportedError{"JobTimeOutDue"}
}
func (s *Store) JobRetain(context.Context, *store.RetainParams) (store.RetainResult, error) {
	return store.RetainResult{}, &UnsupportedError{"JobRetain"}
}
func (s *Store) LeaderElect(context.Context, *store.LeaderElectParams) (store.Leadership, error) {
	return store.Leadership{}, &UnsupportedError{"LeaderElect"}
}
func (s *Store) LeaderResign(context.Context, string, string) error {
	return &UnsupportedError{"LeaderResign"}
}
func (s *Store) Verify(context.Context, *store.VerifyParams) (store.VerifyReport, error) {
	return store.VerifyReport{}, &UnsupportedError{"Verify"}
}

// JobApply is the system's general form; a remote worker is no system actor.
// It refuses with ErrInvalidTransition, so a pool that wanted to time a job
// out releases it instead, and the server's timeouts service ends it.
func (s *Store) JobApply(_ context.Context, p *store.JobApplyParams) (store.Job, error) {
	return store.Job{}, &Error{Kind: store.ErrInvalidTransition, Code: connect.CodeUnimplemented,
		Msg: fmt.Sprintf("remote: %s by %s is not offered over the API; the server's maintenance services apply system transitions", p.Command.Op, p.Command.Actor)}
}
