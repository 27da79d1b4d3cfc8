package outbox_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stint-dev/stint/outbox"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/postgres/pgtest"
	"github.com/stint-dev/stint/store/sqlite"
)

// envChild makes the test binary a delivering process (see TestMain) on the
// SQLite file it names; envChildSchema, when set, makes it deliver from that
// schema of the PostgreSQL database envChild names instead.
const (
	envChild       = "STINT_OUTBOX_CHILD_DB"
	envChildSchema = "STINT_OUTBOX_CHILD_SCHEMA"
)

func TestMain(m *testing.M) {
	if db := os.Getenv(envChild); db != "" {
		deliverForever(db, os.Getenv(envChildSchema))
		return
	}
	os.Exit(m.Run())
}

// deliverForever runs a deliverer on db until the process is killed.
func deliverForever(db, schema string) {
	ctx := context.Background()
	var s store.Store
	var err error
	if schema != "" {
		s, err = postgres.OpenStore(ctx, db, postgres.Options{Schema: schema, NoMigrate: true})
	} else {
		s, err = sqlite.OpenStore(ctx, db, sqlite.Options{})
	}
	if err != nil {
		os.Exit(3)
	}
	d, err := outbox.New(s, &outbox.Config{Workers: 2, Limit: 4, Timeout: time.Minute, Lease: 2 * time.Minute, Interval: 5 * time.Millisecond})
	if err != nil {
		os.Exit(3)
	}
	if err := d.Start(ctx); err != nil {
		os.Exit(3)
	}
	select {}
}

// TestKillDuringDelivery: a delivering process is killed (SIGKILL) while
// its requests hang in the receiver; another deliverer delivers every
// message after the dead one's lease, in order per aggregate: nothing is
// lost. On both backends.
func TestKillDuringDelivery(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db := filepath.Join(t.TempDir(), "stint.db")
		s, err := sqlite.OpenStore(t.Context(), db, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() }) // after the survivor stops (cleanups run last first)
		killDuringDelivery(t, s, []string{envChild + "=" + db})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url, schema := pgtest.URL(t), pgtest.NewSchema(t)
		s, err := postgres.OpenStore(t.Context(), url, postgres.Options{Schema: schema, MaxConns: 4, Logger: pgtest.Logger})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		killDuringDelivery(t, s, []string{envChild + "=" + url, envChildSchema + "=" + schema})
	})
}

// killDuringDelivery starts a child delivering from s's database (childEnv
// names it), kills it mid-request, and has a survivor deliver everything.
func killDuringDelivery(t *testing.T, s store.Store, childEnv []string) {
	rc, srv := newReceiver(t)
	inFlight := make(chan struct{}, 100)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	rc.setBehave(func(n int64, w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("User-Agent") != "stint-outbox" || r.URL.Query().Get("from") == "survivor" {
			return false
		}
		inFlight <- struct{}{}
		select { // the child's requests hang until it dies
		case <-r.Context().Done():
		case <-hold:
		}
		return true
	})
	addHook(t, s, srv.URL+"/hook")
	const jobs = 6
	jobsWithEvents(t, s, jobs)

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childEnv...)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	receive(t, inFlight, "the child to be delivering")
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()

	// The survivor's lease-holder died mid-request: its rows come back once
	// the dead one's lease (2 minutes) ends; move the survivor's clock there.
	ws, err := s.WebhookList(t.Context())
	if err != nil || len(ws) != 1 {
		t.Fatalf("webhooks %v %v", ws, err)
	}
	cfg := fast(2)
	cfg.Clock = laterClock{3 * time.Minute}
	cfg.Client = &http.Client{Transport: tagged{}}
	start(t, s, cfg)
	eventually(t, "every message delivered by the survivor", func() bool { return rc.got() == 4*jobs })
	rc.checkOrder(t)
	// The survivor records each delivery after the receiver answers it.
	eventually(t, "every message recorded delivered", func() bool { return len(outboxOf(t, s, store.OutboxPending)) == 0 })
}

// laterClock is the system clock moved on by d: the survivor acts as if the
// dead deliverer's lease had run out.
type laterClock struct{ d time.Duration }

func (c laterClock) Now() time.Time                         { return time.Now().Add(c.d) }
func (c laterClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// tagged marks the survivor's requests so the receiver answers them.
type tagged struct{}

func (tagged) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	q := r.URL.Query()
	q.Set("from", "survivor")
	r.URL.RawQuery = q.Encode()
	return http.DefaultTransport.RoundTrip(r)
}

func receive(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("timed out waiting for %s", what)
	}
}
