package cli

import (
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// maxErrorCell bounds the LAST_ERROR column; `stint jobs show ID` prints it whole.
const maxErrorCell = 72

func (a *app) dlqLsCmd() *cobra.Command {
	o := listOptions{p: store.JobListParams{States: []lifecycle.State{lifecycle.DeadLettered}, Limit: 100}}
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List dead-lettered jobs, oldest first",
		Long: "ls lists the dead-lettered jobs with why they were dead-lettered (REASON_CODE),\n" +
			"where in the attempt they died (STAGE: fetch, input, exec, output or commit),\n" +
			"how many attempts they used and their last error (first line; `stint jobs show ID`\n" +
			"prints it whole, `stint jobs events ID` every attempt's). With --json it prints the\n" +
			"whole jobs, as `stint jobs ls --json` does.",
		Example: `  stint dlq ls
  stint dlq ls --kind email.send --json`,
		Args: cobra.NoArgs,
		RunE: a.listJobs(&o, writeDLQTable),
	}
	jobListFlags(cmd.Flags(), &o)
	return cmd
}

// writeDLQTable writes dead-lettered jobs as an aligned table.
func writeDLQTable(w io.Writer, jobs []lifecycle.Job) error {
	t := newTable(w, "ID", "KIND", "QUEUE", "REASON_CODE", "STAGE", "ATTEMPTS", "FINISHED", "LAST_ERROR")
	for _, j := range jobs {
		t.row(j.ID, j.Kind, j.Queue, j.ReasonCode, string(lifecycle.FailureStageOf(j)), strconv.Itoa(j.Attempt)+"/"+strconv.Itoa(j.MaxAttempts),
			fmtTimePtr(j.FinishedAt), errorCell(j.LastError))
	}
	return t.flush()
}

// errorCell is the first line of e as "code: message", cut to fit a column.
func errorCell(e *lifecycle.JobError) string {
	if e == nil {
		return ""
	}
	msg := e.Message
	if line, _, found := strings.Cut(msg, "\n"); found {
		msg = line + " ..."
	}
	cell := msg
	if e.Code != "" {
		cell = e.Code + ": " + msg
	}
	cell = strings.ReplaceAll(cell, "\t", " ")
	if r := []rune(cell); len(r) > maxErrorCell {
		cell = string(r[:maxErrorCell-3]) + "..."
	}
	return cell
}
