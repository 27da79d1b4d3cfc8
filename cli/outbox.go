package cli

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/store"
)

// outboxCmd is `stint outbox`: the messages waiting for, or dead after, delivery.
func (a *app) outboxCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "outbox",
		Short: "List outbox messages and replay dead ones",
	}, a.outboxLsCmd(), a.outboxReplayCmd())
}

func (a *app) outboxLsCmd() *cobra.Command {
	var p store.OutboxListParams
	var dead, asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List outbox messages (--dead: the dead-lettered ones)",
		Args:  cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			if dead {
				p.State = store.OutboxDead
			}
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				ms, err := st.OutboxList(cmd.Context(), &p)
				if err != nil {
					return err
				}
				return writeList(cmd.OutOrStdout(), ms, asJSON, func(w io.Writer, ms []store.OutboxMessage) error {
					t := newTable(w, "ID", "STATE", "WEBHOOK", "AGGREGATE", "EVENT", "ATTEMPTS", "NEXT", "LAST ERROR")
					for _, m := range ms {
						t.row(strconv.FormatInt(m.ID, 10), string(m.State), m.WebhookID, m.Aggregate+" "+m.AggregateID, m.EventType,
							strconv.Itoa(m.Attempts), fmtTime(m.NextAttemptAt), m.LastError)
					}
					return t.flush()
				})
			})
		}),
	}
	f := cmd.Flags()
	f.BoolVar(&dead, "dead", false, "only dead-lettered messages")
	f.IntVar(&p.Limit, "limit", 100, "the most messages to list")
	f.Int64Var(&p.AfterID, "after", 0, "list messages after this id (paging)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) outboxReplayCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "replay ID",
		Short: "Make a dead message pending again, with a fresh retry budget",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("outbox replay needs exactly one message id (see `stint outbox ls --dead`)")
			}
			if _, err := strconv.ParseInt(args[0], 10, 64); err != nil {
				return usageErrorf("outbox replay: %q is not a message id (a number; see `stint outbox ls --dead`)", args[0])
			}
			return nil
		},
		RunE: run(func(cmd *cobra.Command, args []string) error {
			id, _ := strconv.ParseInt(args[0], 10, 64)
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				m, err := st.OutboxReplay(cmd.Context(), id)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "outbox message %d: %s, due now\n", m.ID, m.State)
				return err
			})
		}),
	}
}
