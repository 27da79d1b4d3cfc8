package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/demo"
	"github.com/stint-dev/stint/outbox"
	"github.com/stint-dev/stint/store"
)

// wantDemo says whether stint dev adds its demo: when asked, or, when not
// told either way (auto), on a database with no jobs at all.
func (a *app) wantDemo(ctx context.Context, st store.Store, want, auto bool) (bool, error) {
	if !auto {
		return want, nil
	}
	jobs, err := st.JobList(ctx, &store.JobListParams{Limit: 1})
	return len(jobs) == 0, err
}

// devOutbox starts the outbox deliverer of stint dev, and creates the demo
// run when want. It returns the function that stops the deliverer.
func (a *app) devOutbox(ctx, runCtx context.Context, st store.Store, out io.Writer, logger *slog.Logger, want bool, queue string) (func(), error) {
	d, err := outbox.New(st, &outbox.Config{Logger: logger, Clock: a.env.Clock})
	if err != nil {
		return nil, err
	}
	if err := d.Start(runCtx); err != nil {
		return nil, err
	}
	if !want {
		return d.Stop, nil
	}
	v, err := st.RunCreate(ctx, &store.RunCreateParams{Run: stint.RunSpec{Name: demo.RunName, ActorID: devActor},
		Jobs: demo.RunJobs(queue)})
	if err != nil {
		d.Stop()
		return nil, err
	}
	fmt.Fprintf(out, "%s created run %s (%s): build → test and lint (allowed to fail) → deploy\n", stamp(a.env.Clock), v.Run.ID, demo.RunName)
	fmt.Fprintf(out, "  watch it:          stint runs show %s%s\n", v.Run.ID, a.dbFlags())
	fmt.Fprintf(out, "  get its webhooks:  stint webhooks add%s http://127.0.0.1:8080/hook   (delivered while stint dev runs)\n", a.dbFlags())
	return d.Stop, nil
}

// dbFlags repeats the database flags for commands printed to be copied.
func (a *app) dbFlags() string {
	switch {
	case a.databaseURL != "":
		return ""
	case a.db != DefaultDB:
		return " --db " + a.db
	}
	return ""
}
