package sqlite_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

func TestOpenFreshAppliesEveryMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stint.db")
	d, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := sqlite.Migrations()
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	if got := d.Applied(); !slices.Equal(got, names) || !slices.Contains(got, "0003_layout") {
		t.Errorf("applied %v, want %v", got, names)
	}
	d.Close()
	d, err = sqlite.Open(t.Context(), path, sqlite.Options{NoMigrate: true})
	if err != nil {
		t.Fatalf("NoMigrate on an up-to-date file: %v", err)
	}
	if got := d.Applied(); len(got) != 0 {
		t.Errorf("reopen applied %v", got)
	}
	d.Close()
}

func TestNoMigrateMissingFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "absent.db")
	_, err := sqlite.Open(t.Context(), path, sqlite.Options{NoMigrate: true})
	if !errors.Is(err, store.ErrSchemaMissing) || !strings.Contains(err.Error(), "stint migrate") {
		t.Fatalf("err = %v, want ErrSchemaMissing naming `stint migrate`", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("NoMigrate created %v", entries)
	}
}

func TestNoMigrateEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(t.Context(), path, sqlite.Options{NoMigrate: true})
	if !errors.Is(err, store.ErrSchemaMissing) || !strings.Contains(err.Error(), "stint migrate") {
		t.Fatalf("err = %v, want ErrSchemaMissing naming `stint migrate`", err)
	}
	if fi, _ := os.Stat(path); fi.Size() != 0 {
		t.Errorf("NoMigrate wrote %d bytes", fi.Size())
	}
}

func TestNoMigrateOutdatedSchema(t *testing.T) {
	path := loadV2(t)
	before := fileState(t, path)
	_, err := sqlite.Open(t.Context(), path, sqlite.Options{NoMigrate: true})
	if !errors.Is(err, store.ErrSchemaOutdated) || !strings.Contains(err.Error(), "stint migrate") ||
		!strings.Contains(err.Error(), "0003_layout") {
		t.Fatalf("err = %v, want ErrSchemaOutdated naming `stint migrate` and the missing migration", err)
	}
	if after := fileState(t, path); after != before {
		t.Errorf("NoMigrate changed the directory: %s → %s", before, after)
	}
}

// fileState is the names and content hashes of the files next to path.
func fileState(t *testing.T, path string) string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(filepath.Dir(path), e.Name()))
		fmt.Fprintf(&b, "%s:%x ", e.Name(), sha256.Sum256(data))
	}
	return b.String()
}
