package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stint-dev/stint/cli"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/sqlite"
)

// workerEnviron is the environment of the worker in TestWorkerExecEnv: the
// worker's credentials, a database URL under a name stint does not know but
// holding the worker's own, and harmless variables.
var workerEnviron = []string{
	"PATH=/usr/bin:/bin", "HOME=/home/ci", "LANG=C.UTF-8", "TZ=UTC", "TMPDIR=/tmp",
	"STINT_TOKEN=stint_secret_token_1234567890",
	"STINT_DATABASE_URL=postgres://stint:pw@db/stint",
	"DATABASE_URL=postgres://app:pw@db/app",
	"COPY_OF_TOKEN=Bearer stint_secret_token_1234567890",
	"AWS_REGION=eu-west-1", "AWS_PROFILE=ci", "FOO=bar",
	"STINT_JOB_ID=forged",
}

// TestWorkerExecEnv runs `stint worker --exec -- env` and reads what the
// job's command saw: by default only the base variables and the job's
// identity; --pass-env adds names and globs; --pass-env-all adds the rest;
// the token and database URLs (and any variable holding the worker's token)
// only when --pass-env names them exactly.
func TestWorkerExecEnv(t *testing.T) {
	t.Parallel()
	base := []string{"PATH", "HOME", "LANG", "TZ", "TMPDIR", "STINT_JOB_ID", "STINT_ATTEMPT", "STINT_MAX_ATTEMPTS", "STINT_KIND", "STINT_QUEUE", "STINT_FENCING_TOKEN"}
	for _, tc := range []struct {
		name  string
		flags []string
		want  []string // besides base
	}{
		{"minimal by default", nil, nil},
		{"pass-env names and globs", []string{"--pass-env", "FOO", "--pass-env", "AWS_*", "--pass-env", "STINT_*", "--pass-env", "*DATABASE_URL"}, []string{"FOO", "AWS_REGION", "AWS_PROFILE"}},
		{"pass-env-all keeps secrets out", []string{"--pass-env-all"}, []string{"FOO", "AWS_REGION", "AWS_PROFILE"}},
		{"secrets named exactly", []string{"--pass-env-all", "--pass-env", "STINT_TOKEN", "--pass-env", "DATABASE_URL"}, []string{"FOO", "AWS_REGION", "AWS_PROFILE", "STINT_TOKEN", "DATABASE_URL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			seen := commandEnvironment(t, tc.flags)
			want := map[string]bool{}
			for _, n := range append(base, tc.want...) {
				want[n] = true
				if _, ok := seen[n]; !ok {
					t.Errorf("the command did not get %s", n)
				}
			}
			for n := range seen {
				if !want[n] && n != "PWD" && n != "SHLVL" && n != "_" { // sh sets these itself
					t.Errorf("the command saw %s=%s", n, seen[n])
				}
			}
			if seen["STINT_JOB_ID"] == "forged" {
				t.Error("the worker's STINT_JOB_ID reached the command instead of the job's")
			}
		})
	}
}

// TestWorkerFlagsRefused: flags the worker could never work by are usage
// errors before it starts, locally and against a server alike: a bad
// --pass-env, and kinds or queues the store refuses (which would otherwise
// have every claim of the queue refused, forever), and topic patterns it
// would refuse.
func TestWorkerFlagsRefused(t *testing.T) {
	t.Parallel()
	for _, where := range [][]string{{"--db", migratedDB(t)}, {"--server", "http://127.0.0.1:1", "--token", "t"}} {
		for _, tc := range []struct {
			flags []string
			want  string
		}{
			{[]string{"--pass-env", "["}, "--pass-env"},
			{[]string{"--pass-env", "A=b"}, "--pass-env"},
			{[]string{"--kinds", "ok,bad kind"}, `kind "bad kind" contains ' '`},
			{[]string{"--kinds", " , "}, "names no kind"},
			{[]string{"--queues", "default,bad queue=2"}, `queue "bad queue" contains ' '`},
			{[]string{"--topics", "job.chat.*,job..x"}, `topic pattern "job..x" has an empty token`},
			{[]string{"--topics", "job.>.x"}, "may only be the last token"},
		} {
			args := append(append(append([]string{}, where...), "worker"), tc.flags...)
			stintEnv(t, cli.Env{}, append(args, "--exec", "--", "true")...).usageError(t, tc.want)
		}
	}
}

// commandEnvironment runs one job through `stint worker --exec -- env` with
// flags and returns the variables its command saw.
func commandEnvironment(t *testing.T, flags []string) map[string]string {
	t.Helper()
	db := migratedDB(t)
	st, err := sqlite.OpenStore(t.Context(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := st.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "exec"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errs syncBuffer
	// The worker takes its token from the environment, as in production;
	// its database is the test's file, not the URL the command must not see.
	getenv := func(name string) string {
		if name == cli.EnvToken {
			return "stint_secret_token_1234567890"
		}
		return ""
	}
	env := cli.Env{Stdout: &out, Stderr: &errs, Getenv: getenv, Environ: func() []string { return workerEnviron }}
	args := append([]string{"worker", "--db", db}, flags...)
	go func() { done <- cli.Main(ctx, append(args, "--exec", "--", "/usr/bin/env"), env) }()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("stint worker exited %d: %s", code, errs.String())
		}
	}()
	for deadline := time.Now().Add(patience); ; tick(t) {
		j, err := st.JobGet(t.Context(), res[0].Job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.State == lifecycle.Succeeded {
			var r struct{ Output string }
			if err := json.Unmarshal(j.Result, &r); err != nil {
				t.Fatal(err)
			}
			seen := map[string]string{}
			for line := range strings.SplitSeq(strings.TrimSpace(r.Output), "\n") {
				k, v, _ := strings.Cut(line, "=")
				seen[k] = v
			}
			return seen
		}
		if time.Now().After(deadline) || len(done) > 0 {
			t.Fatalf("job is %s; worker said:\n%s", j.State, errs.String())
		}
	}
}
