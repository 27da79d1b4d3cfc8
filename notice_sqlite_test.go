package stint_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/clock"
	"github.com/stint-dev/stint/store/sqlite"
)

// A cancel made through another store on the same SQLite file (`stint jobs
// cancel` in a second terminal) reaches the handler through the notices
// table, without a heartbeat falling due (issue 13 item 1): the clock never
// moves.
func TestCancelFromAnotherProcessReachesTheHandlerOnSQLite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stint.db")
	clk := clock.NewManual(t0)
	open := func() *env {
		s, err := sqlite.OpenStore(context.Background(), path, sqlite.Options{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return newEnv(t, "sqlite", clk, s)
	}
	a, b := open(), open()
	blk := newBlocker()
	a.start(muxOf("long", blk), a.config())
	id := a.enqueue(stint.Spec{Kind: "long"}).ID
	receive(t, blk.started, "the handler to start")
	if _, err := b.client.Cancel(context.Background(), id, stint.CancelSoft, "from another process"); err != nil {
		t.Fatal(err)
	}
	cause := receive(t, blk.causes, "the cancel from the other store to reach the handler")
	if !errors.Is(cause, stint.ErrCancelRequested) {
		t.Errorf("cause = %v, want %v", cause, stint.ErrCancelRequested)
	}
	blk.release <- context.Canceled
	a.waitState(id, stint.Cancelled)
}
