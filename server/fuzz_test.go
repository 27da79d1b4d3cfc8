package server

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/stint-dev/stint/lifecycle"
	stintv1 "github.com/stint-dev/stint/proto/stint/v1"
)

// FuzzDecodeEnqueue feeds arbitrary bytes through what an enqueue does
// before the store sees it: strict JSON decoding, then validation and
// conversion. It must never panic, and whatever it accepts must be within
// the limits it promises: a JSON object payload of at most the limit, no
// deeper than MaxJSONDepth, and a spec the lifecycle either takes or refuses
// with a validation error. The seed corpus is in testdata/fuzz.
func FuzzDecodeEnqueue(f *testing.F) {
	f.Add([]byte(`{"jobs":[{"kind":"k","payload":{"a":[1,"x",null,true,{"b":2.5}]}}]}`))
	f.Add([]byte(`{"jobs":[{"kind":"k","queue":"q","topic":"job.chat.simple","priority":10,"timeout":"30s","onExhausted":"JOB_STATE_FAILED","env":{"k":"v"},"budget":{"maxSteps":"3"}}]}`))
	const limit = 4096
	now := time.Now()
	f.Fuzz(func(t *testing.T, data []byte) {
		var req stintv1.EnqueueManyRequest
		if err := (strictJSON{"json"}).Unmarshal(data, &req); err != nil {
			return
		}
		for _, s := range req.Jobs {
			spec, err := specFromProto(tenant{"acme"}, s, limit)
			if err != nil {
				if messageOf(err) == "" {
					t.Fatalf("a refusal without a message: %v", err)
				}
				continue
			}
			if len(spec.Payload) > limit {
				t.Fatalf("accepted a payload of %d bytes over the limit %d", len(spec.Payload), limit)
			}
			if spec.Payload != nil {
				var obj map[string]any
				if err := json.Unmarshal(spec.Payload, &obj); err != nil {
					t.Fatalf("accepted a payload that is not a JSON object: %s", spec.Payload)
				}
			}
			if err := spec.Validate(now); err != nil && !errors.Is(err, lifecycle.ErrValidation) {
				t.Fatalf("the lifecycle refused an accepted spec with %v", err)
			}
			// What was accepted goes back out on the wire without loss of shape.
			if _, err := protojson.Marshal(jobToProto(tenant{"acme"}, lifecycle.Job{Payload: spec.Payload, Env: spec.Env})); err != nil {
				t.Fatalf("an accepted job does not encode: %v", err)
			}
		}
	})
}
