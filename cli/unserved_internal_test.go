package cli

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/stats"
	"github.com/stint-dev/stint/store"
)

// TestUnservedReporter: the dev log names each (queue, kind) no worker
// handles once while it lasts, after the first 10 s, at most 20 lines per
// count, and again when it comes back after being served.
func TestUnservedReporter(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	r := &unservedReporter{log: devLogger(&out, slog.LevelWarn)}
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	count := func(at time.Duration, kinds ...store.KindCount) string {
		out.Reset()
		r.count(stats.Snapshot{At: t0.Add(at), Unserved: kinds})
		return out.String()
	}
	mail := store.KindCount{Queue: "default", Kind: "mail.send", Jobs: 3}
	if got := count(0, mail); got != "" {
		t.Errorf("reported at the first count, before the pool's first claim could be seen: %q", got)
	}
	got := count(unservedSettle, mail)
	if !strings.Contains(got, "WARN") || !strings.Contains(got, "jobs wait for a kind no worker handles") ||
		!strings.Contains(got, "queue=default kind=mail.send jobs=3") {
		t.Errorf("first report %q", got)
	}
	if got := count(unservedSettle+time.Second, mail); got != "" {
		t.Errorf("reported again while it lasts: %q", got)
	}
	count(unservedSettle + 2*time.Second) // served
	if got := count(unservedSettle+3*time.Second, mail); !strings.Contains(got, "kind=mail.send") {
		t.Errorf("not reported when it came back: %q", got)
	}
	var many []store.KindCount
	for i := range 25 {
		many = append(many, store.KindCount{Queue: "q", Kind: fmt.Sprintf("k%02d", i), Jobs: 1})
	}
	got = count(unservedSettle+4*time.Second, many...)
	if n := strings.Count(got, "no worker handles"); n != unservedMaxLines || !strings.Contains(got, "kinds=5") {
		t.Errorf("25 new kinds gave %d lines (want %d and the 5 others counted):\n%s", n, unservedMaxLines, got)
	}
	if got := count(unservedSettle+5*time.Second, many...); strings.Count(got, "no worker handles") != 5 {
		t.Errorf("the 5 held back were not reported at the next count:\n%s", got)
	}
}
