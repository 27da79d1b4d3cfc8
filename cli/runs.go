package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// runsCmd is `stint runs`: workflows of jobs (DAGs).
func (a *app) runsCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "runs",
		Short: "Create, inspect, cancel and rerun runs (workflows of jobs)",
		Long: "A run is a DAG of named jobs: each job waits for the jobs it depends_on, and is\n" +
			"required unless allow_failure. The run succeeds when every required job succeeded\n" +
			"and fails as soon as one fails; dependents of a failed job are cancelled\n" +
			"(upstream_failed).",
	}, a.runsCreateCmd(), a.runsLsCmd(), a.runsShowCmd(), a.runsEventsCmd(), a.runsCancelCmd(), a.runsRerunCmd())
}

func oneRunID(cmd *cobra.Command, args []string) error {
	if len(args) != 1 || args[0] == "" {
		return usageErrorf("%s needs exactly one run id (see `stint runs ls`)", cmd.CommandPath())
	}
	return nil
}

func (a *app) runsCreateCmd() *cobra.Command {
	var file string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "create --file plan.json|plan.yaml",
		Short: "Create a run from a JSON or YAML plan",
		Long: "create reads a plan, JSON or (.yaml/.yml, or stdin not starting with {) YAML\n" +
			"with the same fields (- for stdin):\n\n" +
			`  {"name": "ci", "on_failure": "cancel", "timeout": "30m", "jobs": [` + "\n" +
			`    {"name": "build", "kind": "build", "queue": "ci"},` + "\n" +
			`    {"name": "test", "kind": "test", "depends_on": ["build"]},` + "\n" +
			`    {"name": "lint", "kind": "lint", "depends_on": ["build"], "allow_failure": true},` + "\n" +
			`    {"name": "deploy", "kind": "deploy", "depends_on": ["test", "lint"]}]}` + "\n\n" +
			"A depends_on naming a job outside the run, or a cycle, refuses the whole run and\n" +
			"writes nothing. on_failure says what a failed run does with its other live jobs:\n" +
			"cancel them (the default) or let them continue.",
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usageErrorf("runs create needs --file plan.json (or --file - for stdin)")
			}
			var b []byte
			var err error
			if file == "-" {
				b, err = io.ReadAll(cmd.InOrStdin())
			} else {
				b, err = os.ReadFile(file)
			}
			if err != nil {
				return usageErrorf("read the plan: %v", err)
			}
			p, err := store.ParseRunPlanFile(file, b)
			if err != nil {
				return err
			}
			p.Run.ActorID = cliActor
			return a.withStore(cmd.Context(), mayCreate, func(st store.Store) error {
				v, err := st.RunCreate(cmd.Context(), &p)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), v)
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "run %s created with %s; watch it with: stint runs show %s\n",
					v.Run.ID, plural(len(v.Jobs), "job"), v.Run.ID)
				return err
			})
		}),
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the run plan: JSON, or YAML for .yaml/.yml (- for stdin: JSON when it starts with {, else YAML)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON")
	return cmd
}

func (a *app) runsLsCmd() *cobra.Command {
	var p store.RunListParams
	var states []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List runs",
		Args:  cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			for _, s := range states {
				if !lifecycle.RunState(s).Valid() {
					return usageErrorf("unknown run state %q: expected one of %v", s, lifecycle.RunStates)
				}
				p.States = append(p.States, lifecycle.RunState(s))
			}
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				runs, err := st.RunList(cmd.Context(), &p)
				if err != nil {
					return err
				}
				return writeList(cmd.OutOrStdout(), runs, asJSON, func(w io.Writer, runs []store.Run) error {
					t := newTable(w, "ID", "NAME", "STATE", "REASON", "CREATED", "FINISHED", "REPORTED")
					for _, r := range runs {
						t.row(r.ID, r.Name, string(r.State), r.ReasonCode, fmtTime(r.CreatedAt), fmtTimePtr(r.FinishedAt), fmtTimePtr(r.ReportedAt))
					}
					return t.flush()
				})
			})
		}),
	}
	f := cmd.Flags()
	f.StringSliceVar(&states, "state", nil, "only runs in these states")
	f.IntVar(&p.Limit, "limit", 100, "the most runs to list")
	f.StringVar(&p.AfterID, "after", "", "list runs whose id sorts after this one (paging)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) runsShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a run and its jobs as a tree",
		Args:  oneRunID,
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				v, err := st.RunGet(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), v)
				}
				return writeRunTree(cmd.OutOrStdout(), v)
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run and its jobs as JSON")
	return cmd
}

// writeRunTree prints the run, then its jobs indented by their depth in the
// DAG (the longest chain of dependencies above them), each with its state
// and what it waits for.
func writeRunTree(w io.Writer, v store.RunView) error {
	r := v.Run
	head := fmt.Sprintf("run %s", r.ID)
	if r.Name != "" {
		head += " (" + r.Name + ")"
	}
	head += ": " + string(r.State)
	if r.ReasonCode != "" {
		head += " [" + r.ReasonCode + "]"
	}
	if r.Reason != "" {
		head += " " + r.Reason
	}
	if r.ReportedAt != nil {
		head += ", reported " + fmtTime(*r.ReportedAt)
	}
	if _, err := fmt.Fprintln(w, head); err != nil {
		return err
	}
	depth := map[string]int{}
	var of func(name string, seen int) int
	byName := map[string]store.RunJob{}
	for _, j := range v.Jobs {
		byName[j.Name] = j
	}
	of = func(name string, seen int) int {
		if d, ok := depth[name]; ok || seen > len(v.Jobs) {
			return d
		}
		d := 0
		for _, dep := range byName[name].DependsOn {
			d = max(d, of(dep, seen+1)+1)
		}
		depth[name] = d
		return d
	}
	t := newTable(w, "JOB", "STATE", "ID", "WAITS FOR")
	order := make([]store.RunJob, len(v.Jobs))
	copy(order, v.Jobs)
	for d := 0; d <= len(order); d++ {
		for _, j := range order {
			if of(j.Name, 0) != d {
				continue
			}
			state := string(j.State)
			if j.AllowFailure {
				state += " (may fail)"
			}
			if j.Planner {
				state += " (planner)"
			}
			t.row(strings.Repeat("  ", d)+j.Name, state, j.JobID, strings.Join(j.DependsOn, ", "))
		}
	}
	return t.flush()
}

func (a *app) runsEventsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "events ID",
		Short: "Show a run's events (its own transitions; see `stint jobs events` for its jobs')",
		Args:  oneRunID,
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				evs, err := st.RunEvents(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return writeList(cmd.OutOrStdout(), evs, asJSON, func(w io.Writer, evs []store.RunEvent) error {
					t := newTable(w, "REV", "AT", "TYPE", "FROM", "TO", "ACTOR", "JOB", "REASON")
					for _, e := range evs {
						t.row(fmt.Sprint(e.Rev), fmtTime(e.At), string(e.Type), e.FromState.String(), e.ToState.String(),
							string(e.Actor), e.JobID, strings.TrimSpace(e.ReasonCode+" "+e.Reason))
					}
					return t.flush()
				})
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) runsCancelCmd() *cobra.Command {
	p := store.RunCancelParams{ActorID: cliActor}
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a run (two-phase over its jobs)",
		Long: "cancel asks a run to stop: jobs nobody holds are cancelled at once, running ones are\n" +
			"asked to stop and forced at their cancel deadline; the run is cancelled when all have ended.",
		Args: oneRunID,
		RunE: run(func(cmd *cobra.Command, args []string) error {
			p.RunID = args[0]
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				v, err := st.RunCancel(cmd.Context(), &p)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "run %s: %s\n", v.Run.ID, v.Run.State)
				return err
			})
		}),
	}
	cmd.Flags().StringVar(&p.Reason, "reason", "", "why, recorded on the run's event")
	return cmd
}

func (a *app) runsRerunCmd() *cobra.Command {
	p := store.RunRerunParams{ActorID: cliActor}
	cmd := &cobra.Command{
		Use:   "rerun ID",
		Short: "Create a new run from an ended one (linked by rerun_of)",
		Args:  oneRunID,
		RunE: run(func(cmd *cobra.Command, args []string) error {
			p.RunID = args[0]
			return a.withStore(cmd.Context(), mustExist, func(st store.Store) error {
				v, err := st.RunRerun(cmd.Context(), &p)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "run %s reruns %s with %s; watch it with: stint runs show %s\n",
					v.Run.ID, p.RunID, plural(len(v.Jobs), "job"), v.Run.ID)
				return err
			})
		}),
	}
	cmd.Flags().BoolVar(&p.FailedOnly, "failed-only", false, "rerun only the jobs that did not succeed")
	return cmd
}
