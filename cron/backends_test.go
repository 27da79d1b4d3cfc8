package cron_test

import (
	"path/filepath"
	"testing"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

// backends open n stores on one fresh database, as n processes would: SQLite
// always, PostgreSQL when the test database URL is set.
var backends = []struct {
	name string
	open func(t *testing.T, n int) []store.Store
}{
	{"sqlite", func(t *testing.T, n int) []store.Store {
		path := filepath.Join(t.TempDir(), "stint.db")
		var out []store.Store
		for range n {
			s, err := sqlite.OpenStore(t.Context(), path, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			out = append(out, s)
		}
		return out
	}},
	{"postgres", func(t *testing.T, n int) []store.Store {
		schema := pgtest.NewSchema(t)
		var out []store.Store
		for range n {
			s, err := postgres.OpenStore(t.Context(), pgtest.URL(t), postgres.Options{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			out = append(out, s)
		}
		return out
	}},
}
