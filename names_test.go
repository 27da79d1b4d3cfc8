package stint_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/server/remote"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// TestBadNamesRefusedAtSetup: a kind or queue name the store refuses is
// refused when the handler is registered or the pool is made, with the
// store's own message, so a pool never starts that would have every claim
// of its queue refused (valid kinds included). Remote pools alike.
func TestBadNamesRefusedAtSetup(t *testing.T) {
	t.Parallel()
	s, err := sqlite.OpenStore(t.Context(), filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// What the store says about each name, to compare messages with.
	storeSays := func(queue, kind string) string {
		_, err := s.JobClaim(t.Context(), &store.JobClaimParams{WorkerID: "w", Queues: []string{queue}, Kinds: []string{kind}, Limit: 1, LeaseTTL: time.Minute})
		if !errors.Is(err, lifecycle.ErrValidation) {
			t.Fatalf("the store took queue %q kind %q: %v", queue, kind, err)
		}
		return strings.TrimPrefix(err.Error(), "store: ")
	}

	t.Run("Mux.Handle", func(t *testing.T) {
		t.Parallel()
		for _, kind := range []string{"bad kind with spaces", " ", "tab\tkind", "nul\x00"} {
			t.Run(kind, func(t *testing.T) {
				want := storeSays("default", kind)
				defer func() {
					got, _ := recover().(string)
					if !strings.Contains(got, want) {
						t.Fatalf("Handle(%q) panicked with %q, want the store's %q", kind, got, want)
					}
				}()
				stint.NewMux().HandleFunc(kind, func(context.Context, *stint.Job) error { return nil })
			})
		}
		if err := stint.CheckKinds("ok.kind", "bad kind"); err == nil || !strings.Contains(err.Error(), storeSays("default", "bad kind")) {
			t.Fatalf("CheckKinds: %v", err)
		}
	})

	mux := stint.NewMux()
	mux.HandleFunc("ok", func(context.Context, *stint.Job) error { return nil })
	srv := httptest.NewServer(must(server.New(server.Config{Store: s, NoAuth: true})))
	defer srv.Close()
	rs, err := remote.New(remote.Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for name, st := range map[string]store.Store{"local": s, "remote": rs} {
		t.Run("NewPool "+name, func(t *testing.T) {
			t.Parallel()
			want := storeSays("bad queue", "ok")
			_, err := stint.NewPool(st, mux, stint.Config{Queues: map[string]int{"fine": 1, "bad queue": 1}, NoMaintenance: true})
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Config.Queues") {
				t.Fatalf("NewPool: %v; want Config.Queues and the store's %q", err, want)
			}
			if !errors.Is(err, lifecycle.ErrValidation) {
				t.Fatalf("NewPool: %v is not a validation error", err)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
