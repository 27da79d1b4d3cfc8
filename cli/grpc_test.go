package cli_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/stint-dev/stint/cli"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/proto/stint/v1/stintv1connect"
)

// TestServerSpeaksGRPC: stint server answers gRPC over clear-text HTTP/2
// (h2c) and gRPC-Web, besides Connect and JSON.
func TestServerSpeaksGRPC(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"--db", filepath.Join(t.TempDir(), "stint.db"), "server", "--listen", "127.0.0.1:0", "--no-auth"},
			cli.Env{Stdout: &out, Stderr: &errs, Getenv: func(string) string { return "" }})
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("stint server exited %d: %s", code, errs.String())
		}
	}()
	var url string
	for deadline := time.Now().Add(patience); url == ""; tick(t) {
		url, _ = strings.CutPrefix(strings.TrimSpace(out.String()), "stint server listening on ")
		if time.Now().After(deadline) {
			t.Fatalf("the server never listened: %s", errs.String())
		}
	}
	h2c := &http.Client{Transport: &http.Transport{Protocols: new(http.Protocols)}}
	h2c.Transport.(*http.Transport).Protocols.SetUnencryptedHTTP2(true)
	for name, opt := range map[string]connect.ClientOption{"grpc": connect.WithGRPC(), "grpc-web": connect.WithGRPCWeb()} {
		t.Run(name, func(t *testing.T) {
			c := stintv1connect.NewJobServiceClient(h2c, url, opt)
			res, err := c.Enqueue(t.Context(), connect.NewRequest(&stintv1.EnqueueRequest{Job: &stintv1.Spec{Kind: "k"}}))
			if err != nil {
				t.Fatal(err)
			}
			if res.Msg.Job.State != stintv1.JobState_JOB_STATE_QUEUED {
				t.Fatalf("enqueued job is %s", res.Msg.Job.State)
			}
		})
	}
}
