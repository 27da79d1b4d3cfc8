package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// webhooksCmd is `stint webhooks`: subscriptions fed by the outbox.
func (a *app) webhooksCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "webhooks",
		Short: "Add, list, remove and test webhook subscriptions",
		Long: "A webhook receives the events that pass its filters, signed (Standard Webhooks:\n" +
			"webhook-id, webhook-timestamp, webhook-signature \"v1,<base64 HMAC-SHA256>\") with an\n" +
			"Idempotency-Key. Delivery is at-least-once with a stable key: dedupe on it.",
	}, a.webhooksAddCmd(), a.webhooksLsCmd(), a.webhooksRmCmd(), a.webhooksTestCmd(), a.webhooksListenCmd())
}

func (a *app) webhooksAddCmd() *cobra.Command {
	var w store.Webhook
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "add URL",
		Short: "Subscribe a URL to events",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("webhooks add needs exactly one URL")
			}
			return nil
		},
		RunE: run(func(cmd *cobra.Command, args []string) error {
			w.URL = args[0]
			if w.Secret == "" {
				var err error
				if w.Secret, err = newWebhookSecret(); err != nil {
					return err
				}
			}
			return a.withStore(cmd.Context(), mayCreate, func(st store.Store) error {
				got, err := st.WebhookAdd(cmd.Context(), w)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), got)
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "webhook %s → %s\nsecret (verify signatures with it): %s\n", got.ID, got.URL, got.Secret)
				return err
			})
		}),
	}
	f := cmd.Flags()
	f.StringVar(&w.Secret, "secret", "", "signing secret, at least 16 bytes; default: a new random whsec_ secret")
	f.StringSliceVar(&w.EventTypes, "event", nil, "only these event types (succeeded, failed, run_succeeded, run_failed, ...)")
	f.StringSliceVar(&w.Queues, "queue", nil, "only job events of these queues")
	f.StringSliceVar(&w.Kinds, "kind", nil, "only job events of these kinds")
	f.StringSliceVar(&w.Runs, "run", nil, "only events of these runs")
	f.BoolVar(&asJSON, "json", false, "print the webhook as JSON")
	return cmd
}

func (a *app) webhooksLsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List webhooks",
		Args:  cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				ws, err := st.WebhookList(cmd.Context())
				if err != nil {
					return err
				}
				return writeList(cmd.OutOrStdout(), ws, asJSON, func(w io.Writer, ws []store.Webhook) error {
					t := newTable(w, "ID", "URL", "EVENTS", "QUEUES", "KINDS", "RUNS")
					for _, h := range ws {
						t.row(h.ID, h.URL, strings.Join(h.EventTypes, ","), strings.Join(h.Queues, ","), strings.Join(h.Kinds, ","), strings.Join(h.Runs, ","))
					}
					return t.flush()
				})
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (with secrets)")
	return cmd
}

func (a *app) webhooksRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rm ID",
		Short: "Remove a webhook",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("webhooks rm needs exactly one webhook id (see `stint webhooks ls`)")
			}
			return nil
		},
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				if err := st.WebhookRemove(cmd.Context(), args[0]); err != nil {
					return err
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "webhook %s removed\n", args[0])
				return err
			})
		}),
	}
}

// webhookTester is a store that has the server send the test event
// (server/remote).
type webhookTester interface {
	WebhookTest(ctx context.Context, id string) (int, string, error)
}

// webhooksTestCmd sends one signed test event straight to the webhook (not
// through the outbox), so a receiver can be checked before real events flow.
func (a *app) webhooksTestCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "test ID",
		Short: "Send a signed test event to a webhook and show its answer",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("webhooks test needs exactly one webhook id (see `stint webhooks ls`)")
			}
			return nil
		},
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				ws, err := st.WebhookList(cmd.Context())
				if err != nil {
					return err
				}
				var w *store.Webhook
				for i := range ws {
					if ws[i].ID == args[0] {
						w = &ws[i]
					}
				}
				if w == nil {
					return usageErrorf("no webhook has id %q; list them with `stint webhooks ls`", args[0])
				}
				var code int
				status, url := "", w.URL
				if t, ok := st.(webhookTester); ok {
					// Over a server, the server sends it: the test then
					// shows what the server's deliveries will meet.
					if code, status, err = t.WebhookTest(cmd.Context(), w.ID); err != nil {
						return err
					}
				} else {
					resp, err := server.SendTestWebhook(cmd.Context(), &http.Client{Timeout: 10 * time.Second}, *w, a.env.Clock.Now())
					if err != nil {
						return fmt.Errorf("webhook %s: %w", w.ID, err)
					}
					code, status = resp.StatusCode, resp.Status
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "webhook %s answered %s\n", url, status)
				if err == nil && code >= 300 {
					return fmt.Errorf("webhook %s answered %s", url, status)
				}
				return err
			})
		}),
	}
}
