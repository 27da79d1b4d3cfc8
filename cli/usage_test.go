package cli_test

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
)

// TestBadInput checks that every kind of bad input exits 2 with one line on
// stderr that names the problem, prints nothing on stdout, and leaves the
// database exactly as it was.
func TestBadInput(t *testing.T) {
	t.Parallel()
	s := newSeeded(t)
	before := dump(t, s.db)
	tests := []struct {
		name string
		args []string
		want string // part of the error line
	}{
		{"enqueue without kind", []string{"enqueue", "--queue", "q"}, "kind is required"},
		{"enqueue blank kind", []string{"enqueue", "--kind", " "}, "kind is required"},
		{"unknown priority name", []string{"enqueue", "--kind", "k", "--priority", "urgent"}, `invalid argument "urgent" for "--priority"`},
		{"priority out of range", []string{"enqueue", "--kind", "k", "--priority", "5000"}, "expected an integer from -1000 to 1000"},
		{"malformed payload", []string{"enqueue", "--kind", "k", "--payload", `{"to":`}, "expected a JSON document"},
		{"payload not JSON", []string{"enqueue", "--kind", "k", "--payload", "hello"}, `"--payload" flag`},
		{"run-at not RFC 3339", []string{"enqueue", "--kind", "k", "--run-at", "tomorrow"}, "expected an RFC 3339 time"},
		{"deadline not RFC 3339", []string{"enqueue", "--kind", "k", "--deadline", "2026-13-01"}, `"--deadline" flag`},
		{"deadline in the past", []string{"enqueue", "--kind", "k", "--deadline", "2001-01-01T00:00:00Z"}, "deadline 2001-01-01T00:00:00Z is not in the future"},
		{"bad timeout", []string{"enqueue", "--kind", "k", "--timeout", "soon"}, "expected a non-negative duration"},
		{"negative timeout", []string{"enqueue", "--kind", "k", "--timeout", "-5s"}, "expected a non-negative duration"},
		{"max-attempts not a number", []string{"enqueue", "--kind", "k", "--max-attempts", "many"}, "expected an integer from 1 to 1000"},
		{"max-attempts zero", []string{"enqueue", "--kind", "k", "--max-attempts", "0"}, "expected an integer from 1 to 1000"},
		{"unknown flag", []string{"enqueue", "--kind", "k", "--priorty", "1"}, "unknown flag: --priorty"},
		{"flag without value", []string{"enqueue", "--kind"}, "flag needs an argument: --kind"},
		{"stray argument", []string{"enqueue", "--kind", "k", "extra"}, `unknown command "extra"`},
		{"unknown command", []string{"jbos", "ls"}, "did you mean: jobs"},
		{"unknown jobs command", []string{"jobs", "rm", s.queued}, `unknown command "rm" for "stint jobs"`},
		{"unknown state", []string{"jobs", "ls", "--state", "done"}, `unknown state "done": expected one of blocked,`},
		{"one bad state of two", []string{"jobs", "ls", "--state", "queued,finished"}, `unknown state "finished"`},
		{"limit zero", []string{"jobs", "ls", "--limit", "0"}, "expected an integer from 1 to 10000"},
		{"limit too large", []string{"jobs", "ls", "--limit", "10001"}, "expected an integer from 1 to 10000"},
		{"show without id", []string{"jobs", "show"}, "takes exactly one job id"},
		{"show two ids", []string{"jobs", "show", s.queued, s.done}, "takes exactly one job id"},
		{"cancel a finished job", []string{"jobs", "cancel", s.done}, "succeeded"},
		{"hard cancel a finished job", []string{"jobs", "cancel", "--hard", s.done}, "invalid transition"},
		{"cancel without id", []string{"jobs", "cancel", "--hard"}, "takes exactly one job id"},
		{"schema without a PostgreSQL URL", []string{"--schema", "x", "jobs", "ls"}, "--schema applies to PostgreSQL only"},
		{"verify with an argument", []string{"verify", "all"}, `unknown command "all" for "stint verify"`},
		{"json flag with a value", []string{"jobs", "ls", "--json=maybe"}, `invalid argument "maybe" for "--json"`},
	}
	// The group returns when its parallel cases have all finished.
	t.Run("cases", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				stint(t, s.db, tt.args...).usageError(t, tt.want)
			})
		}
	})
	if after := dump(t, s.db); after != before {
		t.Errorf("bad input changed the database:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestMissingDatabase checks that commands on existing jobs do not create
// a database when --db names no file, and that bad input to the commands
// that may create one creates nothing either.
func TestMissingDatabase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"jobs ls", []string{"jobs", "ls"}, "no database at "},
		{"jobs show", []string{"jobs", "show", "x"}, "create one with `stint migrate`"},
		{"jobs events", []string{"jobs", "events", "x"}, "no database at "},
		{"jobs cancel", []string{"jobs", "cancel", "x"}, "no database at "},
		{"verify", []string{"verify"}, "no database at "},
		{"enqueue bad payload", []string{"enqueue", "--kind", "k", "--payload", "{"}, "expected a JSON document"},
		{"enqueue without kind", []string{"enqueue"}, "kind is required"},
		{"migrate with a PostgreSQL schema", []string{"migrate", "--schema", "s"}, "--schema applies to PostgreSQL only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			stint(t, db, tt.args...).usageError(t, tt.want)
			if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the command created %s (stat: %v)", db, err)
			}
		})
	}
}

func TestHelpIsNotAnError(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for _, args := range [][]string{nil, {"jobs"}, {"--help"}, {"enqueue", "--help"}} {
		r := stint(t, db, args...).ok(t)
		if !strings.Contains(r.stdout, "Usage:") {
			t.Errorf("stint %v printed %q, want help", args, r.stdout)
		}
	}
}

// A job id that names no job exits with ExitNotFound (4), not the usage
// code, so scripts can tell "no such job" from "bad command line".
func TestNotFound(t *testing.T) {
	t.Parallel()
	db := migratedDB(t)
	for _, args := range [][]string{
		{"jobs", "show", "no-such-job"},
		{"jobs", "events", "no-such-job"},
		{"jobs", "cancel", "no-such-job"},
		{"dlq", "replay", "no-such-job"},
	} {
		stint(t, db, args...).notFound(t, "no-such-job")
	}
}
