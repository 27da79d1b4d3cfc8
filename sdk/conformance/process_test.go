package conformance_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv(envGoWorker) != "" {
		os.Exit(goWorker(os.Getenv("STINT_URL"), os.Getenv("STINT_TOKEN"), os.Getenv("STINT_QUEUE")))
	}
	os.Exit(m.Run())
}

// stintBinary builds cmd/stint from this checkout into a temp dir.
func stintBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stint")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/stint-dev/stint/cmd/stint")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build ./cmd/stint: %v", err)
	}
	return bin
}

// need finds a program; under CI a missing one fails the test, elsewhere it skips.
func need(t *testing.T, name, fix string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missing(t, name+" is not installed: "+fix)
	}
	return p
}

func missing(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// worker is a scenario worker process and the lines it prints.
type worker struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	seen  []string
}

func startWorker(t *testing.T, cmd *exec.Cmd, s *server, queue string) *worker {
	t.Helper()
	cmd.Env = append(append(os.Environ(), cmd.Env...), "STINT_URL="+s.url, "STINT_TOKEN="+s.worker, "STINT_QUEUE="+queue)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &worker{cmd: cmd, stdin: stdin, lines: make(chan string, 1000)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	w.expect(t, "ready")
	return w
}

// stop closes the worker's stdin: its signal to stop gracefully.
func (w *worker) stop(t *testing.T) {
	t.Helper()
	if err := w.stdin.Close(); err != nil {
		t.Fatal(err)
	}
}

// kill ends the worker with SIGKILL: no graceful stop, no report.
func (w *worker) kill(t *testing.T) {
	t.Helper()
	if err := w.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = w.cmd.Wait()
}

// expect waits, for at most a minute, for the worker to print line.
func (w *worker) expect(t *testing.T, line string) {
	t.Helper()
	w.expectWithin(t, line, time.Minute)
}

// expectWithin waits for the worker to print line for at most d.
func (w *worker) expectWithin(t *testing.T, line string, d time.Duration) {
	t.Helper()
	for i, l := range w.seen {
		if l == line {
			w.seen = append(w.seen[:i], w.seen[i+1:]...)
			return
		}
	}
	timeout := time.After(d)
	for {
		select {
		case l, ok := <-w.lines:
			if !ok {
				t.Fatalf("the worker exited before printing %q (it printed %q)", line, w.seen)
			}
			if l == line {
				return
			}
			w.seen = append(w.seen, l)
		case <-timeout:
			t.Fatalf("the worker did not print %q within %s (it printed %q)", line, d, w.seen)
		}
	}
}
