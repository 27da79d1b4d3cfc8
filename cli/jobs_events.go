package cli

import (
	"encoding/json"
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

// writeEventTable writes events as an aligned table in log order, times to
// the millisecond; a failed attempt shows its error, and a heartbeat that
// entered a phase the phase, from the event's details.
func writeEventTable(w io.Writer, events []lifecycle.Event) error {
	t := newTable(w, "REV", "TYPE", "FROM", "TO", "ACTOR", "ATTEMPT", "AT", "REASON", "ERROR")
	for _, e := range events {
		actor := string(e.Actor)
		if e.ActorID != "" {
			actor += "/" + e.ActorID
		}
		reason := e.Reason
		if phase, ok := lifecycle.PhaseOf(e); ok {
			reason = "phase " + phase
		}
		t.row(strconv.FormatInt(e.Rev, 10), string(e.Type), e.FromState.String(), e.ToState.String(),
			actor, strconv.Itoa(e.Attempt), fmtTimeMS(e.At), reason, eventError(e))
	}
	return t.flush()
}

// eventError is the error an event's details record ("code: message"), or
// empty.
func eventError(e lifecycle.Event) string {
	if len(e.Details) == 0 {
		return ""
	}
	var d struct {
		Error *lifecycle.JobError `json:"error"`
	}
	if json.Unmarshal(e.Details, &d) != nil || d.Error == nil {
		return ""
	}
	return oneLine(d.Error.Code + ": " + d.Error.Message)
}
