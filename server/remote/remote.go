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
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"connectrpc.com/connect"

	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/proto/stint/v1/stintv1connect"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// Options configure a remote store.
type Options struct {
	// URL is the server's base URL, such as http://127.0.0.1:7777; required.
	// Several servers of one cluster may be given, comma-separated: calls go
	// to one of them, and move to the next when it cannot be reached.
	URL string
	// Token is the bearer token's secret; required unless the server runs
	// with --no-auth.
	Token string
	// Tenant, when set, is the token's tenant: specs may name it (a replay
	// copies the original's). Defaults to empty: specs name no tenant.
	Tenant string
	// HTTPClient sends the requests. Defaults to a client that keeps up to
	// 64 idle connections per server (the standard one keeps 2, and a
	// pool's long polls, completions and heartbeats run at once).
	HTTPClient connect.HTTPClient
	// Clock turns a caller's RetryAt into the delay sent to the server.
	// Defaults to the system clock.
	Clock clock.Clock
	// ClaimWait is how long a pool's claim waits at the server for jobs
	// when none is ready (a long poll, see store.ClaimWaiter); the server
	// must allow it (its MaxClaimWait, 60s by default). Negative turns
	// long polls off: the pool polls and listens to the notices stream, as
	// with servers older than long-polling pools. Defaults to 25s.
	ClaimWait time.Duration
}

// DefaultClaimWait is a pool's long poll when Options.ClaimWait is unset.
const DefaultClaimWait = 25 * time.Second

// Store is a store.Store over a server. It is safe for concurrent use.
type Store struct {
	opts    Options
	conns   []*conn
	current atomic.Int64 // index into conns of the server in use
	notices *notices
	beats   beats
	// apart is set once the server answered CompleteAndClaim with
	// unimplemented: completions and claims then go in requests of their own.
	apart atomic.Bool

	closeOnce sync.Once
}

var _ store.Store = (*Store)(nil)

// New returns a store that talks to the server at opts.URL. It connects
// lazily: a wrong URL or token shows at the first call.
func New(opts Options) (*Store, error) {
	if opts.URL == "" {
		return nil, errors.New("remote: Options.URL is required: the server's address, such as http://127.0.0.1:7777")
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = defaultClient
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.ClaimWait == 0 {
		opts.ClaimWait = DefaultClaimWait
	}
	// Uncompressed replies: between a worker and its server the network is
	// seldom the bound, and gzip was a tenth of the server's CPU per job.
	auth := connect.WithClientOptions(connect.WithInterceptors(bearer(opts.Token)),
		connect.WithAcceptCompression("gzip", nil, nil))
	s := &Store{opts: opts}
	for u := range strings.SplitSeq(opts.URL, ",") {
		u = strings.TrimSuffix(strings.TrimSpace(u), "/")
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf("remote: URL %q: expected http://HOST:PORT or https://HOST:PORT, comma-separated", u)
		}
		s.conns = append(s.conns, &conn{
			url:    u,
			jobs:   stintv1connect.NewJobServiceClient(opts.HTTPClient, u, auth),
			worker: stintv1connect.NewWorkerServiceClient(opts.HTTPClient, u, auth),
			runs:   stintv1connect.NewRunServiceClient(opts.HTTPClient, u, auth),
			admin:  stintv1connect.NewAdminServiceClient(opts.HTTPClient, u, auth),
		})
	}
	s.notices = newNotices(s)
	return s, nil
}

// defaultClient is the HTTP client of the stores given none.
var defaultClient = &http.Client{Transport: func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}()}

// conn is the clients of one server.
type conn struct {
	url    string
	jobs   stintv1connect.JobServiceClient
	worker stintv1connect.WorkerServiceClient
	runs   stintv1connect.RunServiceClient
	admin  stintv1connect.AdminServiceClient
}

// unreachable reports whether err says the server could not be reached (or
// went away mid-call: a reset or closed connection), so another server of
// the cluster may answer.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	if connect.CodeOf(err) == connect.CodeUnavailable {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// callJobs and callWorker send req with a method of the jobs or worker
// client (a method expression such as stintv1connect.JobServiceClient.GetJob)
// to the server in use; when that server is unreachable they try the next
// ones, once each. Every call the store makes may be repeated: owner calls
// carry a request id, enqueues get one when the caller gave none, cancels
// are idempotent, and a repeated claim at worst leases jobs that come back
// when their lease expires.
func callJobs[Req, Res any](ctx context.Context, s *Store, m func(stintv1connect.JobServiceClient, context.Context, *connect.Request[Req]) (*connect.Response[Res], error), req *Req) (*Res, error) {
	return call(ctx, s, func(c *conn) (*connect.Response[Res], error) { return m(c.jobs, ctx, connect.NewRequest(req)) })
}

func callWorker[Req, Res any](ctx context.Context, s *Store, m func(stintv1connect.WorkerServiceClient, context.Context, *connect.Request[Req]) (*connect.Response[Res], error), req *Req) (*Res, error) {
	return call(ctx, s, func(c *conn) (*connect.Response[Res], error) { return m(c.worker, ctx, connect.NewRequest(req)) })
}

func callRuns[Req, Res any](ctx context.Context, s *Store, m func(stintv1connect.RunServiceClient, context.Context, *connect.Request[Req]) (*connect.Response[Res], error), req *Req) (*Res, error) {
	return call(ctx, s, func(c *conn) (*connect.Response[Res], error) { return m(c.runs, ctx, connect.NewRequest(req)) })
}

func callAdmin[Req, Res any](ctx context.Context, s *Store, m func(stintv1connect.AdminServiceClient, context.Context, *connect.Request[Req]) (*connect.Response[Res], error), req *Req) (*Res, error) {
	return call(ctx, s, func(c *conn) (*connect.Response[Res], error) { return m(c.admin, ctx, connect.NewRequest(req)) })
}

func call[Res any](ctx context.Context, s *Store, send func(*conn) (*connect.Response[Res], error)) (*Res, error) {
	start := s.current.Load()
	var err error
	for i := range int64(len(s.conns)) {
		k := (start + i) % int64(len(s.conns))
		var res *connect.Response[Res]
		if res, err = send(s.conns[k]); err == nil {
			s.current.CompareAndSwap(start, k)
			return res.Msg, nil
		}
		if !unreachable(err) || ctx.Err() != nil {
			break
		}
	}
	return nil, err // the caller turns it into the store's error with fromWire
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

// ClaimWaits reports that a claim made with store.WithClaimWaiting long-polls
// the server (unless Options.ClaimWait is negative): a pool on this store
// waits there for jobs instead of polling.
func (s *Store) ClaimWaits() bool { return s.opts.ClaimWait > 0 }

// MaintainedElsewhere reports that the server runs the maintenance services,
// so a pool on this store runs none of its own (stint.MaintainedElsewhere).
func (s *Store) MaintainedElsewhere() bool { return true }
