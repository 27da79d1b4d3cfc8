package store

// Wrapper is a store that wraps another (metrics, tracing, a host program's
// own decorator). Unwrap returns the store underneath.
type Wrapper interface {
	Unwrap() Store
}

// As finds the optional capability T (QueueStore, ScheduleStore, Tokens,
// Debouncer, ...) of s: s itself when it has it, else the first store under
// it, following Unwrap. A wrapper need not forward every optional interface
// of the store it wraps, and none is turned off silently by wrapping, as
// http.ResponseController finds a ResponseWriter's capabilities.
func As[T any](s Store) (T, bool) {
	for s != nil {
		if c, ok := s.(T); ok {
			return c, true
		}
		w, ok := s.(Wrapper)
		if !ok {
			break
		}
		s = w.Unwrap()
	}
	var zero T
	return zero, false
}
