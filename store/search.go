package store

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// JobSearchParams find jobs by any of their fields at once. Every field
// set narrows the search; none set finds every job.
type JobSearchParams struct {
	States        []lifecycle.State
	Kind          string
	Queue         string
	Tenant        *string // nil: any tenant; "" is the default tenant
	RunID         string
	CorrelationID string
	// Topic matches the job's topic, or any topic under it: "billing"
	// finds billing and billing.invoice.
	Topic string
	// PayloadPath and PayloadValue match jobs whose payload holds the
	// scalar PayloadValue at PayloadPath, a list of object keys (each
	// PayloadKey): {"customer": {"id": "c-7"}} has "c-7" at
	// [customer id], and 42 (the number) reads as "42".
	PayloadPath  []string
	PayloadValue string
	// CreatedFrom and CreatedTo bound created_at: [from, to).
	CreatedFrom, CreatedTo *time.Time
	// BeforeID pages: only jobs whose id sorts before it (results come in
	// descending id order: newest first, as job ids are time-ordered).
	BeforeID string
	// Limit defaults to 100 and is at most 10,000.
	Limit int
}

// PayloadKey is the shape of one key of a payload path.
var PayloadKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)

// MaxPayloadPath is the deepest payload path a search takes.
const MaxPayloadPath = 8

// Validate checks p's fields and sets its default limit.
func (p *JobSearchParams) Validate() error {
	for _, s := range p.States {
		if !s.Valid() {
			return lifecycle.Validationf("state %q: expected one of %v", s, lifecycle.States)
		}
	}
	if err := lifecycle.CheckTexts("kind", p.Kind, "queue", p.Queue, "run id", p.RunID,
		"correlation id", p.CorrelationID, "topic", p.Topic, "payload value", p.PayloadValue, "before id", p.BeforeID); err != nil {
		return err
	}
	if len(p.PayloadPath) > MaxPayloadPath {
		return lifecycle.Validationf("payload path of %d keys: at most %d", len(p.PayloadPath), MaxPayloadPath)
	}
	for _, k := range p.PayloadPath {
		if !PayloadKey.MatchString(k) {
			return lifecycle.Validationf("payload path key %q: use letters, digits, _ and - (starting with a letter or _), at most 64", k)
		}
	}
	if len(p.PayloadPath) == 0 && p.PayloadValue != "" {
		return lifecycle.Validationf("a payload value needs a payload path, such as customer.id")
	}
	if p.CreatedFrom != nil && p.CreatedTo != nil && !p.CreatedFrom.Before(*p.CreatedTo) {
		return lifecycle.Validationf("created from %s is not before created to %s", p.CreatedFrom.Format(time.RFC3339), p.CreatedTo.Format(time.RFC3339))
	}
	switch {
	case p.Limit == 0:
		p.Limit = 100
	case p.Limit < 0 || p.Limit > 10_000:
		return lifecycle.Validationf("limit %d: use 1 to 10000", p.Limit)
	}
	return nil
}

// SearchDialect is how a backend spells the parts of a search that differ.
type SearchDialect struct {
	// Param returns the placeholder of the nth parameter (1-based).
	Param func(n int) string
	// Time converts a time to the backend's column value.
	Time func(time.Time) any
	// States converts a list of states to one parameter.
	States func([]string) any
	// StateIn is the condition that state is in the list parameter p.
	StateIn func(p string) string
	// PayloadPath converts the keys of a payload path (validated) to one
	// parameter, and Payload is the text of the payload's scalar at the
	// path parameter p.
	PayloadPath func(keys []string) any
	Payload     func(p string) string
	// TopicUnder is the condition that topic is under the prefix parameter p.
	TopicUnder func(p string) string
	// Contains is the condition that col holds the text parameter p, ignoring case.
	Contains func(col, p string) string
}

// SearchSQL builds the WHERE clause of a search (after "WHERE "), with its
// arguments, for columns of the jobs table aliased j.
func SearchSQL(d SearchDialect, p *JobSearchParams) (string, []any) {
	var conds []string
	var args []any
	arg := func(v any) string { args = append(args, v); return d.Param(len(args)) }
	if len(p.States) > 0 {
		states := make([]string, len(p.States))
		for i, s := range p.States {
			states[i] = string(s)
		}
		conds = append(conds, d.StateIn(arg(d.States(states))))
	}
	for _, f := range []struct{ col, v string }{{"j.kind", p.Kind}, {"j.queue", p.Queue},
		{"j.correlation_id", p.CorrelationID}} {
		if f.v != "" {
			conds = append(conds, f.col+" = "+arg(f.v))
		}
	}
	if p.Tenant != nil {
		conds = append(conds, "j.tenant = "+arg(*p.Tenant))
	}
	if p.RunID != "" {
		conds = append(conds, "j.id IN (SELECT rj.job_id FROM run_jobs rj WHERE rj.run_id = "+arg(p.RunID)+")")
	}
	if p.Topic != "" {
		conds = append(conds, d.TopicUnder(arg(p.Topic)))
	}
	if len(p.PayloadPath) > 0 {
		conds = append(conds, d.Payload(arg(d.PayloadPath(p.PayloadPath)))+" = "+arg(p.PayloadValue))
	}
	if p.CreatedFrom != nil {
		conds = append(conds, "j.created_at >= "+arg(d.Time(*p.CreatedFrom)))
	}
	if p.CreatedTo != nil {
		conds = append(conds, "j.created_at < "+arg(d.Time(*p.CreatedTo)))
	}
	if p.BeforeID != "" {
		conds = append(conds, "j.id < "+arg(p.BeforeID))
	}
	if len(conds) == 0 {
		return "TRUE", nil
	}
	return strings.Join(conds, " AND "), args
}

// SearchTx is implemented by a driver's Tx that searches jobs.
type SearchTx interface {
	// JobSearch returns up to p.Limit jobs matching p, by descending id.
	JobSearch(ctx context.Context, p *JobSearchParams) ([]Job, error)
	// JobSearchCount counts the jobs matching p, up to most (then most+1).
	JobSearchCount(ctx context.Context, p *JobSearchParams, most int) (int, error)
}

// JobSearcher is implemented by every Store [New] returns whose driver
// searches jobs.
type JobSearcher interface {
	// JobSearch returns up to p.Limit jobs matching p, newest id first.
	JobSearch(ctx context.Context, p *JobSearchParams) ([]Job, error)
	// JobSearchCount counts the jobs matching p (BeforeID and Limit aside)
	// up to most; more than most reads as most+1.
	JobSearchCount(ctx context.Context, p *JobSearchParams, most int) (int, error)
}

// SearcherOf returns s's job search, or that of the store a wrapper
// (metrics, tracing) holds, or ErrUnsupported.
func SearcherOf(s Store) (JobSearcher, error) {
	if js, ok := As[JobSearcher](s); ok {
		return js, nil
	}
	return nil, fmt.Errorf("job search: %w", ErrUnsupported)
}

var _ JobSearcher = (*engine)(nil)

// searchTx runs fn with the driver's SearchTx in a read transaction.
func (e *engine) searchTx(ctx context.Context, p *JobSearchParams, fn func(SearchTx) error) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return e.d.Read(ctx, func(tx Tx) error {
		st, ok := tx.(SearchTx)
		if !ok {
			return fmt.Errorf("job search: %w", ErrUnsupported)
		}
		return fn(st)
	})
}

// JobSearch implements JobSearcher.
func (e *engine) JobSearch(ctx context.Context, p *JobSearchParams) ([]Job, error) {
	var out []Job
	err := e.searchTx(ctx, p, func(st SearchTx) error {
		var err error
		out, err = st.JobSearch(ctx, p)
		return err
	})
	return out, err
}

// JobSearchCount implements JobSearcher.
func (e *engine) JobSearchCount(ctx context.Context, p *JobSearchParams, most int) (int, error) {
	if most <= 0 {
		return 0, lifecycle.Validationf("count up to %d: use a positive number", most)
	}
	var n int
	q := *p
	q.BeforeID, q.Limit = "", 0
	err := e.searchTx(ctx, &q, func(st SearchTx) error {
		var err error
		n, err = st.JobSearchCount(ctx, &q, most)
		return err
	})
	return n, err
}
