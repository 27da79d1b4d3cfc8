package cli

import (
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

func (a *app) jobsEventsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "events ID",
		Short: "Show a job's audit log, one event per transition",
		Args:  oneJobID,
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				events, err := st.JobEvents(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return writeList(cmd.OutOrStdout(), events, asJSON, writeEventTable)
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the events as a JSON array")
	return cmd
}

// writeEventTable writes events as an aligned table in log order.
func writeEventTable(w io.Writer, events []lifecycle.Event) error {
	t := newTable(w, "REV", "TYPE", "FROM", "TO", "ACTOR", "ATTEMPT", "AT", "REASON")
	for _, e := range events {
		actor := string(e.Actor)
		if e.ActorID != "" {
			actor += "/" + e.ActorID
		}
		t.row(strconv.FormatInt(e.Rev, 10), string(e.Type), e.FromState.String(), e.ToState.String(),
			actor, strconv.Itoa(e.Attempt), fmtTime(e.At), e.Reason)
	}
	return t.flush()
}
