package cli_test

import (
	"context"
	"path/filepath"
	"strings"
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
	if _, errs, code := run("tokens", "create", "--role", "root"); code != cli.ExitUsage || !strings.Contains(errs, "admin, client or worker") {
		t.Fatalf("bad role: exit %d: %s", code, errs)
	}
}
