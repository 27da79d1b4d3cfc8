package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/stint-dev/stint/lifecycle"
)

// RunSearchParams find runs, newest id first.
type RunSearchParams struct {
	States []lifecycle.RunState
	// Name matches runs whose name holds it, ignoring case.
	Name   string
	Tenant *string // nil: any tenant; "" is the default tenant
	// BeforeID pages: only runs whose id sorts before it.
	BeforeID string
	// Limit defaults to 100 and is at most 1,000.
	Limit int
}

// Validate checks p's fields and sets its default limit.
func (p *RunSearchParams) Validate() error {
	for _, s := range p.States {
		if !s.Valid() {
			return lifecycle.Validationf("run state %q: expected one of %v", s, lifecycle.RunStates)
		}
	}
	if err := lifecycle.CheckTexts("run name", p.Name, "before id", p.BeforeID); err != nil {
		return err
	}
	switch {
	case p.Limit == 0:
		p.Limit = 100
	case p.Limit < 0 || p.Limit > 1000:
		return lifecycle.Validationf("limit %d: use 1 to 1000", p.Limit)
	}
	return nil
}

// RunSearchSQL builds the WHERE clause of a run search over runs aliased r.
func RunSearchSQL(d SearchDialect, p *RunSearchParams) (string, []any) {
	var conds []string
	var args []any
	arg := func(v any) string { args = append(args, v); return d.Param(len(args)) }
	if len(p.States) > 0 {
		states := make([]string, len(p.States))
		for i, s := range p.States {
			states[i] = string(s)
		}
		conds = append(conds, strings.ReplaceAll(d.StateIn(arg(d.States(states))), "j.state", "r.state"))
	}
	if p.Name != "" {
		conds = append(conds, d.Contains("r.name", arg(p.Name)))
	}
	if p.Tenant != nil {
		conds = append(conds, "r.tenant = "+arg(*p.Tenant))
	}
	if p.BeforeID != "" {
		conds = append(conds, "r.id < "+arg(p.BeforeID))
	}
	if len(conds) == 0 {
		return "TRUE", nil
	}
	return strings.Join(conds, " AND "), args
}

// RunSearchTx is implemented by a driver's Tx that searches runs.
type RunSearchTx interface {
	RunSearch(ctx context.Context, p *RunSearchParams) ([]Run, error)
}

// RunSearcher is implemented by every Store [New] returns whose driver
// searches runs.
type RunSearcher interface {
	// RunSearch returns up to p.Limit runs matching p, newest id first.
	RunSearch(ctx context.Context, p *RunSearchParams) ([]Run, error)
}

// RunSearcherOf returns s's run search, or that of the store a wrapper
// holds, or ErrUnsupported.
func RunSearcherOf(s Store) (RunSearcher, error) {
	if rs, ok := As[RunSearcher](s); ok {
		return rs, nil
	}
	return nil, fmt.Errorf("run search: %w", ErrUnsupported)
}

var _ RunSearcher = (*engine)(nil)

// RunSearch implements RunSearcher.
func (e *engine) RunSearch(ctx context.Context, p *RunSearchParams) ([]Run, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []Run
	err := e.d.Read(ctx, func(tx Tx) error {
		st, ok := tx.(RunSearchTx)
		if !ok {
			return fmt.Errorf("run search: %w", ErrUnsupported)
		}
		var err error
		out, err = st.RunSearch(ctx, p)
		return err
	})
	return out, err
}
