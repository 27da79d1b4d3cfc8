package dashboard_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stint-dev/stint/dashboard"
	"github.com/stint-dev/stint/stats"
	"github.com/stint-dev/stint/store/sqlite"
)

// FuzzAPIBodies sends arbitrary bodies, ids and query strings to the
// dashboard's API on a real SQLite store: never a panic or a server error;
// what is wrong with the request is a 4xx.
func FuzzAPIBodies(f *testing.F) {
	routes := []struct{ method, path string }{
		{"POST", "/api/flow/pause"}, {"POST", "/api/flow/resume"}, {"POST", "/api/dlq/replay"},
		{"POST", "/api/jobs/%s/cancel"}, {"POST", "/api/jobs/%s/replay"}, {"POST", "/api/outbox/%s/replay"},
		{"GET", "/api/jobs"}, {"GET", "/api/jobs/%s"}, {"GET", "/api/dlq"}, {"GET", "/api/runs/%s"}, {"GET", "/api/outbox"},
	}
	for i := range routes {
		f.Add(byte(i), "x", "limit=5&state=queued", []byte(`{"queue":"q"}`))
	}
	f.Add(byte(2), "1", "", []byte(`{"all":true,"queue":"q","kind":"k"}`))
	f.Add(byte(6), "", "limit=-1&after=%00&state=nope&queue=a/b", []byte(nil))
	s, err := sqlite.OpenStore(f.Context(), filepath.Join(f.TempDir(), "stint.db"), sqlite.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	h, err := dashboard.New(dashboard.Config{Store: s, Counter: stats.NewCounter(s, stats.Config{}), NoAuth: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, which byte, id, query string, body []byte) {
		r := routes[int(which)%len(routes)]
		path := strings.Replace(r.path, "%s", url.PathEscape(id), 1)
		u := &url.URL{Path: path, RawQuery: url.QueryEscape(query)}
		if q, err := url.ParseQuery(query); err == nil {
			u.RawQuery = q.Encode()
		}
		req := httptest.NewRequest(r.method, u.String(), bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s %q: %d %s", r.method, u, body, rec.Code, rec.Body)
		}
	})
}
