package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stint-dev/stint/store"
)

// These tests drive the group-commit writer with a scratch table written
// through the transaction's own connection.

func openDriver(t *testing.T) (*Driver, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stint.db")
	d, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	exec(t, d, `CREATE TABLE scratch (k TEXT PRIMARY KEY)`)
	return d, path
}

// exec runs statements in one transaction of the writer.
func exec(t *testing.T, d *Driver, stmts ...string) {
	t.Helper()
	if err := d.InTx(t.Context(), func(tx store.Tx) error { return run(tx, stmts...) }); err != nil {
		t.Fatal(err)
	}
}

func run(tx store.Tx, stmts ...string) error {
	for _, s := range stmts {
		if _, err := tx.(*txn).q.ExecContext(context.Background(), s); err != nil {
			return err
		}
	}
	return nil
}

// submit runs fn in a transaction of its own goroutine; the result arrives
// on the channel.
func submit(d *Driver, fn func(store.Tx) error) <-chan error {
	c := make(chan error, 1)
	go func() { c <- d.InTx(context.Background(), fn) }()
	return c
}

// hold occupies the writer with a transaction that waits for release, so
// transactions submitted meanwhile queue and form the next group.
func hold(t *testing.T, d *Driver) (release func(), done <-chan error) {
	entered, rel := make(chan struct{}), make(chan struct{})
	done = submit(d, func(store.Tx) error { close(entered); <-rel; return nil })
	<-entered
	return func() { close(rel) }, done
}

// waitQueued waits until n transactions wait for the writer.
func waitQueued(t *testing.T, d *Driver, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for d.w.queued() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d transactions queued, want %d", d.w.queued(), n)
		}
		runtime.Gosched()
	}
}

// keys reads the scratch table through a connection of its own.
func keys(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(t.Context(), `SELECT k FROM scratch ORDER BY k`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		rows.Scan(&k)
		out = append(out, k)
	}
	return out
}

func insert(k string) func(store.Tx) error {
	return func(tx store.Tx) error { return run(tx, `INSERT INTO scratch VALUES ('`+k+`')`) }
}

func TestGroupCommitSharesOneCommitAndIsolatesMembers(t *testing.T) {
	d, path := openDriver(t)
	release, held := hold(t, d)
	boom := errors.New("boom")
	a := submit(d, insert("a"))
	waitQueued(t, d, 1)
	b := submit(d, func(tx store.Tx) error {
		if err := insert("b")(tx); err != nil {
			return err
		}
		return boom
	})
	waitQueued(t, d, 2)
	c := submit(d, insert("c"))
	waitQueued(t, d, 3)
	before := d.w.commits.Load()
	release()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if err := <-a; err != nil {
		t.Errorf("a: %v", err)
	}
	if err := <-b; !errors.Is(err, boom) {
		t.Errorf("b: %v, want its own error", err)
	}
	if err := <-c; err != nil {
		t.Errorf("c: %v", err)
	}
	if got := keys(t, path); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("committed %v, want [a c]: the failed member rolled back alone", got)
	}
	// One commit for the held transaction's group, one for a, b and c.
	if n := d.w.commits.Load() - before; n != 2 {
		t.Errorf("%d commits after the hold, want 2 (a, b and c share one)", n)
	}
}

func TestGroupCommitFailedCommitFailsEveryMember(t *testing.T) {
	d, path := openDriver(t)
	// A deferred foreign key is checked at COMMIT: a member that breaks it
	// makes the group's COMMIT itself fail.
	exec(t, d, `CREATE TABLE parent (k TEXT PRIMARY KEY)`,
		`CREATE TABLE child (p TEXT REFERENCES parent (k) DEFERRABLE INITIALLY DEFERRED)`)
	release, held := hold(t, d)
	a := submit(d, insert("a"))
	waitQueued(t, d, 1)
	b := submit(d, func(tx store.Tx) error { return run(tx, `INSERT INTO child VALUES ('nobody')`) })
	waitQueued(t, d, 2)
	release()
	<-held
	errA, errB := <-a, <-b
	if errA == nil || errB == nil {
		t.Fatalf("a: %v, b: %v; want both to fail with the commit", errA, errB)
	}
	if got := keys(t, path); len(got) != 0 {
		t.Errorf("committed %v after a failed commit, want nothing", got)
	}
	// The writer goes on.
	exec(t, d, `INSERT INTO scratch VALUES ('after')`)
	if got := keys(t, path); !slices.Equal(got, []string{"after"}) {
		t.Errorf("after recovery: %v", got)
	}
}

func TestGroupCommitAcknowledgesOnlyAfterCommit(t *testing.T) {
	d, path := openDriver(t)
	release, held := hold(t, d)
	a := submit(d, insert("a"))
	waitQueued(t, d, 1)
	entered, rel := make(chan struct{}), make(chan struct{})
	b := submit(d, func(tx store.Tx) error { close(entered); <-rel; return insert("b")(tx) })
	waitQueued(t, d, 2)
	release()
	<-held
	<-entered // a's fn has run; its group has not committed
	select {
	case err := <-a:
		t.Fatalf("a acknowledged (%v) before the commit that holds it", err)
	default:
	}
	if got := keys(t, path); len(got) != 0 {
		t.Fatalf("another connection sees %v before the commit", got)
	}
	close(rel)
	if err := <-a; err != nil {
		t.Fatal(err)
	}
	if err := <-b; err != nil {
		t.Fatal(err)
	}
	if got := keys(t, path); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("committed %v, want [a b]", got)
	}
}

func TestGroupCommitRetriesWhileBusy(t *testing.T) {
	d, path := openDriver(t)
	// Give up on the lock at once, so the writer's own retry loop runs.
	exec(t, d, `PRAGMA busy_timeout = 1`)
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	a := submit(d, insert("a"))
	deadline := time.Now().Add(10 * time.Second)
	for d.w.busyRetries.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the writer never found the database busy")
		}
		runtime.Gosched()
	}
	select {
	case err := <-a:
		t.Fatalf("acknowledged (%v) while another connection held the write lock", err)
	default:
	}
	if _, err := conn.ExecContext(t.Context(), `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if err := <-a; err != nil {
		t.Fatalf("after the lock was released: %v", err)
	}
	if got := keys(t, path); !slices.Equal(got, []string{"a"}) {
		t.Errorf("committed %v, want [a]", got)
	}
}

func TestGroupCommitCancelledWhileQueued(t *testing.T) {
	d, path := openDriver(t)
	release, held := hold(t, d)
	ctx, cancel := context.WithCancel(t.Context())
	a := make(chan error, 1)
	go func() { a <- d.InTx(ctx, insert("a")) }()
	waitQueued(t, d, 1)
	cancel()
	release()
	<-held
	if err := <-a; !errors.Is(err, context.Canceled) {
		t.Errorf("a: %v, want context.Canceled", err)
	}
	if got := keys(t, path); len(got) != 0 {
		t.Errorf("a cancelled transaction wrote %v", got)
	}
}

func TestGroupCommitPanicReachesItsCallerOnly(t *testing.T) {
	d, path := openDriver(t)
	release, held := hold(t, d)
	a := submit(d, insert("a"))
	waitQueued(t, d, 1)
	b := make(chan any, 1)
	go func() {
		defer func() { b <- recover() }()
		d.InTx(context.Background(), func(tx store.Tx) error {
			insert("b")(tx)
			panic("handler bug")
		})
	}()
	waitQueued(t, d, 2)
	release()
	<-held
	if err := <-a; err != nil {
		t.Errorf("a: %v", err)
	}
	if v := <-b; v != "handler bug" {
		t.Errorf("b recovered %v, want its own panic", v)
	}
	if got := keys(t, path); !slices.Equal(got, []string{"a"}) {
		t.Errorf("committed %v, want [a]", got)
	}
	exec(t, d, `INSERT INTO scratch VALUES ('after')`)
}

// TestWriterDurability checks the settings the group commit's durability
// rests on: WAL, synchronous=FULL, automatic checkpoints kept.
func TestWriterDurability(t *testing.T) {
	d, _ := openDriver(t)
	want := map[string]string{"journal_mode": "wal", "synchronous": "2", "wal_autocheckpoint": "1000",
		"journal_size_limit": "67108864"}
	err := d.InTx(t.Context(), func(tx store.Tx) error {
		for p, w := range want {
			var got string
			if err := tx.(*txn).q.QueryRowContext(t.Context(), "PRAGMA "+p).Scan(&got); err != nil {
				return err
			}
			if got != w {
				t.Errorf("PRAGMA %s = %s, want %s", p, got, w)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
