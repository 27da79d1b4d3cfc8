package stint

import "context"

// Handler works jobs of one kind, as http.Handler serves requests.
//
// Work runs one attempt of j. ctx is cancelled, with a cause from
// context.Cause ([ErrCancelRequested], [ErrLeaseLost], [ErrTimeout],
// [ErrDeadline], [ErrBudgetExceeded], [ErrShutdown]), when the handler should
// stop. The returned error decides the outcome: nil succeeds (the result is
// what [Job.SetResult] set), the control errors [Permanent], [RetryAfter],
// [Halt] and [DeadLetter] say what to do, and any other error fails the
// attempt, retried with backoff while attempts remain. A panic fails the
// attempt with the panic value and stack.
//
// A handler that ignores cancellation is still fenced: once its lease is
// gone, whatever it reports is rejected and changes nothing. Use
// [Job.Fence] to fence side effects in other systems the same way.
type Handler interface {
	Work(ctx context.Context, j *Job) error
}

// HandlerFunc adapts a function to a [Handler].
type HandlerFunc func(ctx context.Context, j *Job) error

// Work calls f(ctx, j).
func (f HandlerFunc) Work(ctx context.Context, j *Job) error { return f(ctx, j) }

// Middleware wraps a handler with behaviour of its own (logging, tracing,
// metrics, recovering from errors), as net/http middleware does.
type Middleware func(Handler) Handler
