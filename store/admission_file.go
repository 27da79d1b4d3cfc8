package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/stint-dev/stint/lifecycle"
)

// ParseAdmission reads admission rules from JSON, the format of the file
// `stint dev --admission` and `stint server --admission` take:
//
//	{"rules": [{"tenant": "free", "max_live_jobs": 100, "max_priority": 0},
//	           {"queue": "email", "kinds": ["send"], "max_payload_bytes": 4096}]}
//
// Unknown fields and out-of-range limits are validation errors that name
// the rule. A file has no Hook: that is Go only.
func ParseAdmission(data []byte) (*Admission, error) {
	var a Admission
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, lifecycle.Validationf("admission rules: %v: expected {\"rules\": [{\"tenant\": ..., \"max_live_jobs\": N}, ...]}", err)
	}
	if dec.More() {
		return nil, lifecycle.Validationf("admission rules: text after the JSON object: give one object")
	}
	for i, r := range a.Rules {
		if err := checkRule(r); err != nil {
			return nil, fmt.Errorf("admission rule %d: %w", i+1, err)
		}
	}
	return &a, nil
}

// checkRule validates one rule's names and limits.
func checkRule(r AdmissionRule) error {
	for field, name := range map[string]string{"tenant": r.Tenant, "queue": r.Queue, "kind": r.Kind} {
		if name != "" {
			if err := lifecycle.CheckName(field, name); err != nil {
				return err
			}
		}
	}
	for _, k := range r.Kinds {
		if err := lifecycle.CheckName("kind", k); err != nil {
			return err
		}
	}
	switch {
	case r.MaxLiveJobs < 0:
		return lifecycle.Validationf("max_live_jobs %d: give 0 (no limit) or a positive number", r.MaxLiveJobs)
	case r.MaxPayloadBytes < 0 || r.MaxPayloadBytes > lifecycle.MaxPayloadBytes:
		return lifecycle.Validationf("max_payload_bytes %d: give 0 (no limit) to %d", r.MaxPayloadBytes, lifecycle.MaxPayloadBytes)
	case r.MaxLiveJobs == 0 && len(r.Kinds) == 0 && r.MaxPayloadBytes == 0 && r.MaxPriority == nil:
		return lifecycle.Validationf("the rule limits nothing: give max_live_jobs, kinds, max_payload_bytes or max_priority")
	}
	return nil
}
