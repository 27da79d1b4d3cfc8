package server

import (
	"errors"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
)

// FuzzDecodeCreateRun feeds arbitrary bytes through what CreateRun does
// before the store sees it: strict JSON decoding, the run's options, each
// job's validation, and the graph check the store runs first. It must never
// panic, and every refusal must be a validation error with a message. The
// seed corpus is in testdata/fuzz.
func FuzzDecodeCreateRun(f *testing.F) {
	f.Add([]byte(`{"name":"ci","onFailure":"ON_FAILURE_CONTINUE","timeout":"30m","jobs":[{"name":"build","job":{"kind":"b"}},{"name":"test","job":{"kind":"t"},"dependsOn":["build"],"allowFailure":true}]}`))
	f.Add([]byte(`{"jobs":[{"name":"a","job":{"kind":"k"},"depends_on":["b"]},{"name":"b","job":{"kind":"k"},"depends_on":["a"]}]}`))
	const limit = 4096
	now := time.Now()
	f.Fuzz(func(t *testing.T, data []byte) {
		var req stintv1.CreateRunRequest
		if err := (strictJSON{"json"}).Unmarshal(data, &req); err != nil {
			return
		}
		refused := func(err error) {
			t.Helper()
			if messageOf(err) == "" || !errors.Is(kindError(err), lifecycle.ErrValidation) {
				t.Fatalf("a refusal that is not a validation error with a message: %v", err)
			}
		}
		if _, err := onFailureFromProto(req.OnFailure); err != nil {
			refused(err)
			return
		}
		if err := checkDuration("timeout", req.Timeout); err != nil {
			refused(err)
			return
		}
		jobs, err := runJobsFromProto(tenant{"acme"}, req.Jobs, limit)
		if err != nil {
			refused(err)
			return
		}
		nodes := make([]lifecycle.RunNode, len(jobs))
		for i, j := range jobs {
			nodes[i] = lifecycle.RunNode{Name: j.Name, DependsOn: j.DependsOn, AllowFailure: j.AllowFailure, NeedsSuccess: j.NeedsSuccess, Planner: j.Planner}
			if len(j.Spec.Payload) > limit {
				t.Fatalf("accepted a payload of %d bytes over the limit %d", len(j.Spec.Payload), limit)
			}
			if err := j.Spec.Validate(now); err != nil && !errors.Is(err, lifecycle.ErrValidation) {
				t.Fatalf("the lifecycle refused an accepted spec with %v", err)
			}
		}
		if err := lifecycle.CheckRunGraph(nil, nodes); err != nil && !errors.Is(err, lifecycle.ErrValidation) {
			t.Fatalf("the graph check refused with %v, not a validation error", err)
		}
	})
}

// kindError is the store condition err names: the metadata of a Connect
// error, or err itself.
func kindError(err error) error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return KindError(ce.Meta().Get(ErrorKindHeader))
	}
	return err
}
