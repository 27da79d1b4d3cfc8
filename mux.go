package stint

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/stint-dev/stint/lifecycle"
)

// Mux routes each job to the handler registered for its kind, as
// http.ServeMux routes requests by path. A pool claims only jobs whose kind
// its Mux knows, so a job of an unknown kind waits for a worker that can run
// it instead of failing here. The zero value is ready to use; methods are
// safe for concurrent use, and handlers may be added while a pool runs.
type Mux struct {
	mu       sync.RWMutex
	handlers map[string]Handler
	wrapped  map[string]Handler // handlers inside the middleware chain
	chain    []Middleware
	kinds    []string // sorted; replaced, never modified, on registration
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{} }

// Handle registers h for jobs of kind. Like http.ServeMux, it panics on a
// kind the store would refuse (empty, blank, or with a space or control
// character: see lifecycle.CheckName), a nil handler or a kind registered
// twice: these are programming errors found at start-up, and a pool
// claiming a kind the store refuses would have every claim of its queue
// refused, valid kinds included. [CheckKinds] checks names from input first.
func (m *Mux) Handle(kind string, h Handler) {
	if kind == "" {
		panic("stint: Mux.Handle: the kind is empty")
	}
	if err := lifecycle.CheckName("kind", kind); err != nil {
		panic("stint: Mux.Handle: " + err.Error())
	}
	if h == nil {
		panic("stint: Mux.Handle: nil handler for kind " + kind)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.handlers[kind]; dup {
		panic(fmt.Sprintf("stint: Mux.Handle: kind %q is registered twice", kind))
	}
	if m.handlers == nil {
		m.handlers, m.wrapped = map[string]Handler{}, map[string]Handler{}
	}
	m.handlers[kind] = h
	m.wrapped[kind] = m.wrap(h)
	kinds := append(slices.Clone(m.kinds), kind)
	slices.Sort(kinds)
	m.kinds = kinds
}

// HandleFunc registers f for jobs of kind.
func (m *Mux) HandleFunc(kind string, f func(ctx context.Context, j *Job) error) {
	m.Handle(kind, HandlerFunc(f))
}

// Use appends middleware to the chain around every handler, registered
// before or after. The first middleware given is the outermost.
func (m *Mux) Use(mw ...Middleware) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.chain = append(m.chain, mw...)
	for k, h := range m.handlers {
		m.wrapped[k] = m.wrap(h)
	}
}

func (m *Mux) wrap(h Handler) Handler {
	for i := len(m.chain) - 1; i >= 0; i-- {
		h = m.chain[i](h)
	}
	return h
}

// Kinds returns the registered kinds, sorted.
func (m *Mux) Kinds() []string {
	return slices.Clone(m.kindList())
}

// kindList returns the shared sorted list; callers must not modify it.
func (m *Mux) kindList() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.kinds
}

// Work runs the handler registered for j's kind, inside the middleware.
// A kind with no handler fails the attempt (it is retried, in case a
// handler is registered meanwhile).
func (m *Mux) Work(ctx context.Context, j *Job) error {
	m.mu.RLock()
	h, ok := m.wrapped[j.Kind()]
	m.mu.RUnlock()
	if !ok {
		return WithCode("unknown_kind", fmt.Errorf("stint: no handler is registered for kind %q: register one with Mux.Handle", j.Kind()))
	}
	return h.Work(ctx, j)
}
