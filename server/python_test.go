package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
	"github.com/stint-dev/stint/server"
	"github.com/stint-dev/stint/store"
)

// TestPythonWorker: a worker written in Python with only its standard
// library (testdata/worker.py) claims, starts, heartbeats and completes jobs
// through the JSON API.
func TestPythonWorker(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is not installed: CI must run the Python worker test (apt-get install -y python3)")
		}
		t.Skip("python3 is not installed")
	}
	eachBackend(t, func(t *testing.T, s store.Store) {
		e := start(t, s, server.Config{})
		client, worker := e.token("acme", store.RoleClient), e.token("acme", store.RoleWorker)
		const n = 10
		var ids []string
		for i := range n {
			payload, _ := structpb.NewStruct(map[string]any{"a": i, "b": 100})
			res, err := e.jobs(client).Enqueue(t.Context(), connect.NewRequest(&stintv1.EnqueueRequest{Job: &stintv1.Spec{Kind: "add", Queue: "py", Payload: payload}}))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, res.Msg.Job.Id)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, python, "testdata/worker.py", e.url, worker, fmt.Sprint(n)).CombinedOutput()
		if err != nil {
			t.Fatalf("worker.py: %v\n%s", err, out)
		}
		for i, id := range ids {
			j, err := s.JobGet(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			var result struct {
				Sum int    `json:"sum"`
				By  string `json:"by"`
			}
			if err := json.Unmarshal(j.Result, &result); err != nil || j.State != lifecycle.Succeeded {
				t.Fatalf("job %d: state %s result %s (%v)", i, j.State, j.Result, err)
			}
			if result.Sum != i+100 || result.By != "python" || j.Owner != "" || j.LastOwner != "acme-worker/python" {
				t.Fatalf("job %d: result %+v, last owner %q", i, result, j.LastOwner)
			}
			ss, err := store.Steps(s)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := ss.JobSteps(t.Context(), id)
			if err != nil || len(recs) != 1 || recs[0].Name != "sum" || string(recs[0].Output) != fmt.Sprint(i+100) {
				t.Fatalf("job %d: steps %+v (%v), want the sum recorded once", i, recs, err)
			}
		}
	})
}
