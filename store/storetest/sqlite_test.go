package storetest_test

import (
	"path/filepath"
	"testing"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
	"github.com/stint-dev/stint/store/storetest"
)

// TestSQLite runs the conformance suite on the embedded backend, each
// subtest on a fresh database file.
func TestSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openSQLite(t) })
}

// BenchmarkSQLite runs the hot-path benchmarks shared by every backend.
func BenchmarkSQLite(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return openSQLite(b) })
}

func openSQLite(t testing.TB) store.Store {
	path := filepath.Join(t.TempDir(), "stint.db")
	s, err := sqlite.OpenStore(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
