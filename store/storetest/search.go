package storetest

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// testSearch checks the job search: each filter alone and together,
// paging newest first, the capped count and the refused inputs.
func testSearch(t *testing.T, newStore func(*testing.T) store.Store) {
	t.Run("filters_and_pages", func(t *testing.T) { t.Parallel(); testSearchFilters(t, newStore) })
	t.Run("validation", func(t *testing.T) { t.Parallel(); testSearchValidation(t, newStore) })
	t.Run("runs", func(t *testing.T) { t.Parallel(); testRunSearch(t, newStore) })
}

// testRunSearch finds runs by name (any case), state and tenant, newest first.
func testRunSearch(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	rs, err := store.RunSearcherOf(h.s)
	if errors.Is(err, store.ErrUnsupported) {
		t.Skip("the store searches no runs")
	}
	h.ok("run searcher", err)
	mk := func(name, tenant string) string {
		v, err := h.s.RunCreate(h.ctx, &store.RunCreateParams{Run: lifecycle.RunSpec{Name: name, Tenant: tenant},
			Jobs: []store.RunJobSpec{{Name: "only", Spec: lifecycle.Spec{Kind: "step", Tenant: tenant, Queue: map[bool]string{true: "q", false: tenant + "/q"}[tenant == ""]}}},
			Now:  h.tick()})
		h.ok("create run", err)
		return v.Run.ID
	}
	nightly, deploy, acme := mk("Nightly build", ""), mk("deploy web", ""), mk("nightly acme", "acme")
	_, err = h.s.RunCancel(h.ctx, &store.RunCancelParams{RunID: deploy, Reason: "test", Now: h.tick()})
	h.ok("cancel run", err)
	search := func(p store.RunSearchParams) []string {
		t.Helper()
		runs, err := rs.RunSearch(h.ctx, &p)
		h.ok("search runs", err)
		ids := make([]string, len(runs))
		for i, r := range runs {
			ids[i] = r.ID
		}
		return ids
	}
	desc := func(ids ...string) []string { slices.Sort(ids); slices.Reverse(ids); return ids }
	def := ""
	for name, c := range map[string]struct {
		p    store.RunSearchParams
		want []string
	}{
		"name any case": {store.RunSearchParams{Name: "NIGHTLY"}, desc(nightly, acme)},
		"tenant":        {store.RunSearchParams{Name: "nightly", Tenant: &def}, desc(nightly)},
		"state":         {store.RunSearchParams{States: []lifecycle.RunState{lifecycle.RunCancelled, lifecycle.RunCancelRequested}}, desc(deploy)},
		"all":           {store.RunSearchParams{}, desc(nightly, deploy, acme)},
		"page":          {store.RunSearchParams{BeforeID: desc(nightly, deploy, acme)[0], Limit: 1}, desc(nightly, deploy, acme)[1:2]},
	} {
		if got := search(c.p); asJSON(got) != asJSON(c.want) {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
	if _, err := rs.RunSearch(h.ctx, &store.RunSearchParams{States: []lifecycle.RunState{"paused"}}); !errors.Is(err, store.ErrValidation) {
		t.Errorf("an unknown run state: %v, want a validation error", err)
	}
}

func withSpec(f func(s *lifecycle.Spec)) specOpt {
	return func(s *lifecycle.Spec, _ time.Time) { f(s) }
}

func testSearchFilters(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	js, err := store.SearcherOf(h.s)
	if errors.Is(err, store.ErrUnsupported) {
		t.Skip("the store searches no jobs")
	}
	h.ok("searcher", err)
	start := h.now
	mk := func(f func(s *lifecycle.Spec)) string { return h.enqueue(withSpec(f)).ID }
	invoice := mk(func(s *lifecycle.Spec) {
		s.Kind, s.Queue, s.Topic, s.CorrelationID = "invoice", "billing", "billing.invoice", "req-1"
		s.Payload = json.RawMessage(`{"customer": {"id": "c-7", "vip": true}, "total": 42}`)
	})
	refund := mk(func(s *lifecycle.Spec) {
		s.Kind, s.Queue, s.Topic = "refund", "billing", "billing"
		s.Payload = json.RawMessage(`{"customer": {"id": "c-8", "vip": false}, "total": 7}`)
	})
	h.advance(time.Hour)
	mid := h.now
	acme := mk(func(s *lifecycle.Spec) {
		s.Kind, s.Queue, s.Tenant, s.Topic = "invoice", "acme/billing", "acme", "billingx"
		s.Payload = json.RawMessage(`{"customer": {"id": "c-7"}}`)
	})
	blocked := h.blocked() // a run's job, and its upstream
	done := h.build(lifecycle.Succeeded)
	runJobs := h.get(blocked.ID)

	search := func(p store.JobSearchParams) []string {
		t.Helper()
		jobs, err := js.JobSearch(h.ctx, &p)
		if err != nil {
			t.Fatalf("search %+v: %v", p, err)
		}
		ids := make([]string, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
		}
		return ids
	}
	sorted := func(ids ...string) []string {
		slices.Sort(ids)
		slices.Reverse(ids)
		return ids
	}
	def := ""
	for name, c := range map[string]struct {
		p    store.JobSearchParams
		want []string
	}{
		"kind":             {store.JobSearchParams{Kind: "invoice"}, sorted(invoice, acme)},
		"queue":            {store.JobSearchParams{Queue: "billing"}, sorted(invoice, refund)},
		"tenant":           {store.JobSearchParams{Tenant: ptr("acme")}, sorted(acme)},
		"default tenant":   {store.JobSearchParams{Tenant: &def, Kind: "invoice"}, sorted(invoice)},
		"topic and under":  {store.JobSearchParams{Topic: "billing"}, sorted(invoice, refund)},
		"topic exact leaf": {store.JobSearchParams{Topic: "billing.invoice"}, sorted(invoice)},
		"correlation":      {store.JobSearchParams{CorrelationID: "req-1"}, sorted(invoice)},
		"payload string":   {store.JobSearchParams{PayloadPath: []string{"customer", "id"}, PayloadValue: "c-7"}, sorted(invoice, acme)},
		"payload number":   {store.JobSearchParams{PayloadPath: []string{"total"}, PayloadValue: "42"}, sorted(invoice)},
		"payload bool":     {store.JobSearchParams{PayloadPath: []string{"customer", "vip"}, PayloadValue: "false"}, sorted(refund)},
		"payload missing":  {store.JobSearchParams{PayloadPath: []string{"nothing"}, PayloadValue: "c-7"}, nil},
		"created before":   {store.JobSearchParams{CreatedTo: &mid}, sorted(invoice, refund)},
		"created window":   {store.JobSearchParams{CreatedFrom: &start, CreatedTo: &mid, Kind: "invoice"}, sorted(invoice)},
		"run":              {store.JobSearchParams{RunID: runJobs.RunID}, sorted(slices.Concat([]string{blocked.ID}, runJobs.DependsOn)...)},
		"state":            {store.JobSearchParams{States: []lifecycle.State{lifecycle.Succeeded, lifecycle.Blocked}}, sorted(blocked.ID, done.ID)},
		"together":         {store.JobSearchParams{Kind: "invoice", Queue: "billing", PayloadPath: []string{"customer", "id"}, PayloadValue: "c-7", States: []lifecycle.State{lifecycle.Queued}}, sorted(invoice)},
	} {
		if got := search(c.p); asJSON(got) != asJSON(c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
	// Pages of two, newest first, cover everything once.
	all := search(store.JobSearchParams{})
	var paged []string
	p := store.JobSearchParams{Limit: 2}
	for {
		page := search(p)
		paged = append(paged, page...)
		if len(page) < 2 {
			break
		}
		p.BeforeID = page[len(page)-1]
	}
	if asJSON(paged) != asJSON(all) || !slices.IsSortedFunc(all, func(a, b string) int { return -cmpStr(a, b) }) {
		t.Errorf("pages %v, want %v by descending id", paged, all)
	}
	for most, want := range map[int]int{1: 2, 2: 2, 10: 2} {
		n, err := js.JobSearchCount(h.ctx, &store.JobSearchParams{Queue: "billing", Limit: 1, BeforeID: "0"}, most)
		h.ok("count", err)
		if want = min(want, most+1); n != want {
			t.Errorf("count of billing up to %d: %d, want %d", most, n, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func testSearchValidation(t *testing.T, newStore func(*testing.T) store.Store) {
	h := newHarness(t, newStore)
	js, err := store.SearcherOf(h.s)
	if errors.Is(err, store.ErrUnsupported) {
		t.Skip("the store searches no jobs")
	}
	h.ok("searcher", err)
	later := h.now.Add(time.Hour)
	for name, p := range map[string]store.JobSearchParams{
		"state":         {States: []lifecycle.State{"sleeping"}},
		"path key":      {PayloadPath: []string{`a"b`}, PayloadValue: "x"},
		"path depth":    {PayloadPath: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, PayloadValue: "x"},
		"value no path": {PayloadValue: "x"},
		"empty range":   {CreatedFrom: &later, CreatedTo: &h.now},
		"limit":         {Limit: 10_001},
	} {
		if _, err := js.JobSearch(h.ctx, &p); !errors.Is(err, store.ErrValidation) {
			t.Errorf("%s: %v, want a validation error", name, err)
		}
	}
	if _, err := js.JobSearchCount(h.ctx, &store.JobSearchParams{}, 0); !errors.Is(err, store.ErrValidation) {
		t.Errorf("count up to 0: %v, want a validation error", err)
	}
}
