package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"

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
func (a *app) devOutbox(ctx, runCtx context.Context, st store.Store, out io.Writer, logger *slog.Logger, want bool, queue string, o devOptions) (func(), error) {
	d, err := outbox.New(st, &outbox.Config{Logger: logger, Clock: a.env.Clock, Client: o.bus.client})
	if err != nil {
		return nil, err
	}
	// Subscribed before the demo run exists, so the receiver gets all of it.
	if err := a.devWebhook(ctx, st, out, o); err != nil {
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
	if o.webhook == "" {
		fmt.Fprintf(out, "  get its webhooks:  stint webhooks listen, and start stint dev with the --webhook it prints\n")
	}
	return d.Stop, nil
}

// devWebhook subscribes --webhook to every event, unless a webhook with
// that URL exists already (kept as it is).
func (a *app) devWebhook(ctx context.Context, st store.Store, out io.Writer, o devOptions) error {
	if o.webhook == "" {
		return nil
	}
	hooks, err := st.WebhookList(ctx)
	if err != nil {
		return err
	}
	for _, h := range hooks {
		if h.URL == o.webhook {
			fmt.Fprintf(out, "%s webhook %s → %s (already subscribed; its secret is kept: stint webhooks ls --json)\n", stamp(a.env.Clock), h.ID, h.URL)
			return nil
		}
	}
	secret := o.secret
	if secret == "" {
		if secret, err = newWebhookSecret(); err != nil {
			return err
		}
	}
	h, err := st.WebhookAdd(ctx, store.Webhook{URL: o.webhook, Secret: secret})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s webhook %s → %s, every event, signed with %s\n", stamp(a.env.Clock), h.ID, h.URL, h.Secret)
	return nil
}

// checkWebhookURL refuses a --webhook that is not an absolute http(s) URL
// before anything is opened or written.
func checkWebhookURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErrorf("--webhook %q: give an absolute http:// or https:// URL", raw)
	}
	return nil
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
