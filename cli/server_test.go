package cli_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stint-dev/stint/cli"
)

// TestServerRefusesOpenNoAuth: without tokens, a non-loopback address needs
// --insecure; TLS flags go together. Nothing is opened or written.
func TestServerRefusesOpenNoAuth(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "stint.db")
	cases := []struct {
		name string
		args []string
		says string
	}{
		{"no auth on all interfaces", []string{"server", "--listen", "0.0.0.0:0", "--no-auth"}, "--insecure"},
		{"no auth on an empty host", []string{"server", "--listen", ":0", "--no-auth"}, "not a loopback address"},
		{"cert without key", []string{"server", "--tls-cert", "c.pem"}, "--tls-key"},
		{"client CA without TLS", []string{"server", "--client-ca", "ca.pem"}, "needs TLS"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errs syncBuffer
			code := cli.Main(context.Background(), append([]string{"--db", db}, c.args...), cli.Env{Stdout: &out, Stderr: &errs, Getenv: func(string) string { return "" }})
			if code != cli.ExitUsage || !strings.Contains(errs.String(), c.says) {
				t.Fatalf("exit %d, stderr %q; want %d naming %q", code, errs.String(), cli.ExitUsage, c.says)
			}
		})
	}
}

// TestTokensCommands: create prints only the secret on stdout, ls shows
// the token without it, revoke marks it revoked.
func TestTokensCommands(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "stint.db")
	run := func(args ...string) (string, string, int) {
		var out, errs syncBuffer
		code := cli.Main(context.Background(), append([]string{"--db", db}, args...), cli.Env{Stdout: &out, Stderr: &errs, Getenv: func(string) string { return "" }})
		return out.String(), errs.String(), code
	}
	secret, info, code := run("tokens", "create", "--tenant", "acme", "--role", "worker", "--name", "ci")
	if code != 0 || !strings.HasPrefix(secret, "stint_") || strings.Count(secret, "\n") != 1 {
		t.Fatalf("create: exit %d, stdout %q, stderr %q", code, secret, info)
	}
	id := strings.Fields(strings.TrimPrefix(info, "created token "))[0]
	id = strings.TrimSuffix(id, ":")
	ls, _, code := run("tokens", "ls")
	if code != 0 || !strings.Contains(ls, id) || !strings.Contains(ls, "acme") || strings.Contains(ls, strings.TrimSpace(secret)) {
		t.Fatalf("ls: exit %d:\n%s", code, ls)
	}
	if out, errs, code := run("tokens", "revoke", id); code != 0 || !strings.Contains(out, "revoked") {
		t.Fatalf("revoke: exit %d: %s %s", code, out, errs)
	}
	if _, errs, code := run("tokens", "create", "--tenant", "Bad Name", "--role", "worker"); code != cli.ExitUsage || !strings.Contains(errs, "tenant") {
		t.Fatalf("bad tenant: exit %d: %s", code, errs)
	}
	if _, errs, code := run("tokens", "create", "--role", "root"); code != cli.ExitUsage || !strings.Contains(errs, "admin, client, worker or reader") {
		t.Fatalf("bad role: exit %d: %s", code, errs)
	}
}

// TestServerDeliversWebhooks: stint server runs the outbox deliverer, so a
// webhook registered against its database receives a job's events.
func TestServerDeliversWebhooks(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "stint.db")
	var mu sync.Mutex
	var bodies []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer hook.Close()
	stint := func(args ...string) (string, string, int) {
		var out, errs syncBuffer
		code := cli.Main(context.Background(), append([]string{"--db", db}, args...), cli.Env{Stdout: &out, Stderr: &errs, Getenv: func(string) string { return "" }})
		return out.String(), errs.String(), code
	}
	if _, errs, code := stint("webhooks", "add", hook.URL); code != 0 {
		t.Fatalf("webhooks add: exit %d: %s", code, errs)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"--db", db, "server", "--listen", "127.0.0.1:0", "--no-auth"},
			cli.Env{Stdout: &out, Stderr: &errs, Getenv: func(string) string { return "" }})
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("stint server exited %d: %s", code, errs.String())
		}
	}()
	var url string
	eventually(t, "the server to listen", func() bool {
		url, _ = strings.CutPrefix(strings.TrimSpace(out.String()), "stint server listening on ")
		return url != ""
	})
	res, rerrs, code := stint("--server", url, "enqueue", "--kind", "k", "--queue", "q", "--json")
	if code != 0 {
		t.Fatalf("enqueue through the server: exit %d: %s", code, rerrs)
	}
	id := jsonField(t, res, "id")
	eventually(t, "the job's webhook", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, b := range bodies {
			if strings.Contains(b, id) {
				return true
			}
		}
		return false
	})
}
