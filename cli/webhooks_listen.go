package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/stint-dev/stint/outbox"
	"github.com/stint-dev/stint/server"
)

// maxWebhookBody bounds what the listener reads of one delivery.
const maxWebhookBody = 4 << 20

// webhooksListenCmd is `stint webhooks listen`: a receiver to watch the
// outbox deliver, for trying webhooks out before writing one's own.
func (a *app) webhooksListenCmd() *cobra.Command {
	var addr, path, secret string
	cmd := &cobra.Command{
		Use:   "listen",
		Short: "Receive webhooks and print each delivery, checking its signature",
		Long: "listen serves a webhook receiver and prints one line per delivery: its time,\n" +
			"event type, aggregate, whether the signature verifies with --secret, and its\n" +
			"Idempotency-Key. A delivery with a bad signature is answered 401 (the outbox\n" +
			"retries it); every other is answered 204. Without --secret a new one is made\n" +
			"and printed with the commands that subscribe this receiver. Ctrl-C stops it.",
		Example: `  stint webhooks listen
  stint webhooks listen --listen 127.0.0.1:9000 --secret whsec_...`,
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			if path == "" || path[0] != '/' {
				return usageErrorf("--path %q: give a path starting with /", path)
			}
			if secret == "" {
				var err error
				if secret, err = newWebhookSecret(); err != nil {
					return err
				}
			} else if len(secret) < 16 {
				return usageErrorf("--secret is %d bytes: use at least 16 (the secret the webhook was added with)", len(secret))
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return usageErrorf("--listen %s: %v", addr, err)
			}
			return a.listenWebhooks(cmd.Context(), cmd.OutOrStdout(), ln, path, secret)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&addr, "listen", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
	f.StringVar(&path, "path", "/hook", "URL path to receive on")
	f.StringVar(&secret, "secret", "", "the webhook's signing secret; default: a new whsec_ secret, printed")
	return cmd
}

// listenWebhooks serves deliveries on ln until ctx ends.
func (a *app) listenWebhooks(ctx context.Context, out io.Writer, ln net.Listener, path, secret string) error {
	url := "http://" + ln.Addr().String() + path
	fmt.Fprintf(out, "receiving webhooks on %s\nsecret: %s\n", url, secret)
	fmt.Fprintf(out, "  subscribe it:      stint webhooks add %s --secret %s\n", url, secret)
	fmt.Fprintf(out, "  or from stint dev: stint dev --webhook %s --webhook-secret %s\n\n", url, secret)

	var mu sync.Mutex // one line at a time
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxWebhookBody))
		if err != nil {
			http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
			return
		}
		line, ok := describeDelivery(r.Header, body, secret)
		mu.Lock()
		fmt.Fprintf(out, "%s %s\n", stamp(a.env.Clock), line)
		mu.Unlock()
		if !ok {
			http.Error(w, "signature does not verify", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	srv := &http.Server{Handler: server.Guard(mux, 0, 0), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// describeDelivery is the line printed for one delivery, and whether its
// signature verifies.
func describeDelivery(h http.Header, body []byte, secret string) (string, bool) {
	var msg struct {
		Type        string `json:"type"`
		Aggregate   string `json:"aggregate"`
		AggregateID string `json:"aggregate_id"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		msg.Type = "(not JSON: " + err.Error() + ")"
	}
	id := h.Get(outbox.HeaderID)
	sec, err := strconv.ParseInt(h.Get(outbox.HeaderTimestamp), 10, 64)
	ok := err == nil && outbox.Verify(secret, id, time.Unix(sec, 0), body, h.Get(outbox.HeaderSignature))
	sig := "signature ok"
	if !ok {
		sig = "signature BAD (answered 401)"
	}
	return fmt.Sprintf("%-16s %s %s  %s  key %s", msg.Type, msg.Aggregate, msg.AggregateID, sig, h.Get(outbox.HeaderIdempotencyKey)), ok
}

// newWebhookSecret is a new random signing secret in the Standard Webhooks
// form: "whsec_" and 24 random bytes in base64.
func newWebhookSecret() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b), nil
}
