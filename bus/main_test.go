package bus

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stint-dev/stint/maintenance"
	"github.com/stint-dev/stint/outbox"
	"github.com/stint-dev/stint/store/sqlite"
)

// envChild makes the test binary a stint process (see TestMain): a bridge,
// its outbox deliverer and the maintenance services on a SQLite file, until
// it is killed. The value is the JSON of a childSpec.
const envChild = "STINT_BUS_CHILD"

type childSpec struct {
	DB     string
	Config Config
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(envChild); spec != "" {
		runChild(spec)
		return
	}
	os.Exit(m.Run())
}

// runChild is the stint side of the fault tests; it exits 3 when it
// cannot start.
func runChild(spec string) {
	var c childSpec
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		os.Exit(3)
	}
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	st, err := sqlite.OpenStore(ctx, c.DB, sqlite.Options{})
	if err != nil {
		log.Error("open", "err", err)
		os.Exit(3)
	}
	c.Config.Logger = log
	b, err := New(st, c.Config)
	if err == nil {
		err = b.Start(ctx)
	}
	if err != nil {
		log.Error("bridge", "err", err)
		os.Exit(3)
	}
	d, err := outbox.New(st, &outbox.Config{Client: &http.Client{Transport: b.Transport(nil)}, Interval: 20 * time.Millisecond, Logger: log})
	if err == nil {
		err = d.Start(ctx)
	}
	if err != nil {
		os.Exit(3)
	}
	m, err := maintenance.New(st, &maintenance.Config{SingleNode: true, Logger: log,
		Reaper: maintenance.ReaperConfig{Interval: 200 * time.Millisecond}, Scheduler: maintenance.SchedulerConfig{Interval: 200 * time.Millisecond}})
	if err == nil {
		err = m.Start(ctx)
	}
	if err != nil {
		os.Exit(3)
	}
	select {}
}
