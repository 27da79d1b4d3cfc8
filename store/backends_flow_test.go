package store_test

import (
	"path/filepath"
	"testing"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

// backends opens a fresh store with opts on each backend: SQLite always,
// PostgreSQL when the test database URL is set (skipped otherwise).
var backends = []struct {
	name string
	open func(t *testing.T, opts store.Options) store.Store
}{
	{"sqlite", func(t *testing.T, opts store.Options) store.Store {
		d, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := store.New(d, opts)
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"postgres", func(t *testing.T, opts store.Options) store.Store {
		s := store.New(pgtest.NewDriver(t, postgres.Options{}), opts)
		t.Cleanup(func() { s.Close() })
		return s
	}},
}
