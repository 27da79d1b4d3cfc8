package maintenance

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
	"github.com/stint-dev/stint/store/postgres"
	"github.com/stint-dev/stint/store/sqlite"
)

// processTTL is the leader TTL of the child processes: short, since they run
// on the real clock.
const processTTL = 2 * time.Second

// TestHelperProcess is not a test: it is a Maintainer in a child process of
// TestElectionProcesses, which re-executes the test binary to run it. It
// prints each change of leadership on stdout ("LEADER id term unixnano" or
// "FOLLOWER id term unixnano"), stops cleanly (resigning) on SIGTERM or when
// its stdin closes, and dies on SIGKILL.
func TestHelperProcess(t *testing.T) {
	id := os.Getenv("STINT_HELPER_ID")
	if id == "" {
		t.Skip("a child process of TestElectionProcesses")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() { // the parent died or is done with us
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		stop()
	}()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("id", id)
	var s store.Store
	var err error
	if path := os.Getenv("STINT_HELPER_SQLITE"); path != "" {
		s, err = sqlite.OpenStore(ctx, path, sqlite.Options{})
	} else {
		s, err = postgres.OpenStore(ctx, os.Getenv("STINT_HELPER_POSTGRES"), postgres.Options{Schema: os.Getenv("STINT_HELPER_SCHEMA"), Logger: logger})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: open store:", err)
		os.Exit(2)
	}
	m, err := New(s, &Config{Logger: logger, Election: ElectorConfig{ID: id, TTL: processTTL, OnChange: func(c LeaderChange) {
		kind := "FOLLOWER"
		if c.Leader {
			kind = "LEADER"
		}
		fmt.Printf("%s %s %d %d\n", kind, c.ID, c.Term, time.Now().UnixNano())
	}}})
	if err == nil {
		err = m.Start(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Minute): // never outlive a stuck parent
	}
	m.Stop()
	_ = s.Close()
	fmt.Printf("STOPPED %s 0 %d\n", id, time.Now().UnixNano())
	os.Exit(0)
}

// child is one helper process.
type child struct {
	id     string
	cmd    *exec.Cmd
	stdin  *os.File
	stderr string // file holding its log
}

// line is one line a child printed.
type line struct {
	kind string // LEADER, FOLLOWER or STOPPED
	id   string
	term int64
	at   time.Time
}

func spawn(t *testing.T, d *db, id string, lines chan<- line) *child {
	t.Helper()
	c := &child{id: id, stderr: filepath.Join(t.TempDir(), id+".log")}
	c.cmd = exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	c.cmd.Env = append(os.Environ(), append(d.env, "STINT_HELPER_ID="+id)...)
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stdin, c.stdin = stdinR, stdinW
	errFile, err := os.Create(c.stderr)
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stderr = errFile
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	stdinR.Close()
	errFile.Close()
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l, ok := parseLine(sc.Text()); ok {
				lines <- l
			}
		}
	}()
	t.Cleanup(func() {
		c.stdin.Close()
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(c.stderr)
			t.Logf("log of %s:\n%s", id, b)
		}
	})
	return c
}

func parseLine(s string) (line, bool) {
	f := strings.Fields(s)
	if len(f) != 4 || (f[0] != "LEADER" && f[0] != "FOLLOWER" && f[0] != "STOPPED") {
		return line{}, false
	}
	term, err1 := strconv.ParseInt(f[2], 10, 64)
	ns, err2 := strconv.ParseInt(f[3], 10, 64)
	if err1 != nil || err2 != nil {
		return line{}, false
	}
	return line{kind: f[0], id: f[1], term: term, at: time.Unix(0, ns)}, true
}

// leaders follows the children's reports and checks that leaderships never
// overlap: each child stamps its reports with the shared wall clock of this
// machine, and a leader's step-down is printed before it resigns.
type leaders struct {
	t       *testing.T
	lines   <-chan line
	current map[string]time.Time // leader id → since
	ended   time.Time            // when the last leadership ended
}

// next waits for a child other than those in not to be elected, and returns
// its report.
func (ls *leaders) next(not ...string) line {
	ls.t.Helper()
	for {
		l := recv(ls.t, ls.lines, "a leader among the processes")
		switch l.kind {
		case "LEADER":
			if len(ls.current) > 0 {
				ls.t.Fatalf("%s elected (term %d) while %v still lead", l.id, l.term, ls.current)
			}
			if l.at.Before(ls.ended) {
				ls.t.Fatalf("%s elected at %s, before the previous leadership ended at %s", l.id, l.at, ls.ended)
			}
			ls.current[l.id] = l.at
			if !containsID(not, l.id) {
				return l
			}
		case "FOLLOWER", "STOPPED":
			if _, ok := ls.current[l.id]; ok {
				delete(ls.current, l.id)
				ls.ended = l.at
			}
		}
	}
}

// killed records that a leader was killed at now: its leadership ends there.
func (ls *leaders) killed(id string, now time.Time) {
	delete(ls.current, id)
	ls.ended = now
}

func containsID(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// Several processes on one database: one leads; when it is killed with
// SIGKILL another takes over (with a higher term) and runs the services;
// when that one stops cleanly, the last takes over. Leaderships never
// overlap.
func TestElectionProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	onBoth(t, func(t *testing.T, d *db) {
		lines := make(chan line, 100)
		children := map[string]*child{}
		for i := range 3 {
			id := fmt.Sprintf("p%d", i)
			children[id] = spawn(t, d, id, lines)
		}
		ls := &leaders{t: t, lines: lines, current: map[string]time.Time{}}
		first := ls.next()

		if err := children[first.id].cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("kill %s: %v", first.id, err)
		}
		ls.killed(first.id, time.Now())
		second := ls.next(first.id)
		if second.term <= first.term {
			t.Errorf("%s's term %d is not above the killed leader's %d", second.id, second.term, first.term)
		}

		// The new leader runs the services: a job due in a moment is promoted.
		now := time.Now()
		runAt := now.Add(200 * time.Millisecond)
		res, err := d.s.JobEnqueue(t.Context(), &store.JobEnqueueParams{Jobs: []lifecycle.Spec{{Kind: "test", RunAt: &runAt}}, Now: &now})
		if err != nil {
			t.Fatalf("enqueue: %v", err)
		}
		eventually(t, "the job to be promoted by the new leader", func() bool {
			j, err := d.s.JobGet(t.Context(), res[0].Job.ID)
			return err == nil && j.State == lifecycle.Queued
		})

		if err := children[second.id].cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatalf("stop %s: %v", second.id, err)
		}
		third := ls.next(first.id, second.id)
		t.Logf("leaders: %s (term %d), killed; %s (term %d), stopped; %s (term %d)",
			first.id, first.term, second.id, second.term, third.id, third.term)
		if err := children[second.id].cmd.Wait(); err != nil {
			t.Errorf("%s did not stop cleanly: %v", second.id, err)
		}
		d.verify()
	})
}

// eventually polls cond until it holds, failing the test after patience.
// Only for conditions another process brings about on the real clock.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(patience)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("waited %s for %s", patience, what)
		case <-tick.C:
		}
	}
}
