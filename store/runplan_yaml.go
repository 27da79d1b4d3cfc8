package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/stint-dev/stint/lifecycle"
)

// ParseRunPlanFile reads a plan from a file named name (as given to stint
// runs create --file), choosing the format by the name's extension: .yaml
// or .yml is YAML, anything else JSON. For "-" (standard input) it looks at
// the content: a plan whose first non-blank character is "{" is JSON, any
// other YAML. Either way the plan is the same RunPlan with the same checks.
func ParseRunPlanFile(name string, b []byte) (RunCreateParams, error) {
	if isYAMLPlan(name, b) {
		return ParseRunPlanYAML(b)
	}
	return ParseRunPlan(b)
}

func isYAMLPlan(name string, b []byte) bool {
	if name == "-" {
		return !bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{"))
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml":
		return true
	}
	return false
}

// yamlPlan is the YAML form of a RunPlan: the same fields under the same
// names, with each job's payload any YAML value (turned into JSON).
type yamlPlan struct {
	ID        string        `yaml:"id"`
	Name      string        `yaml:"name"`
	Tenant    string        `yaml:"tenant"`
	OnFailure string        `yaml:"on_failure"`
	Timeout   string        `yaml:"timeout"`
	Jobs      []yamlPlanJob `yaml:"jobs"`
}

type yamlPlanJob struct {
	Name         string            `yaml:"name"`
	Kind         string            `yaml:"kind"`
	Queue        string            `yaml:"queue"`
	Priority     int               `yaml:"priority"`
	Payload      yaml.Node         `yaml:"payload"`
	Env          map[string]string `yaml:"env"`
	MaxAttempts  int               `yaml:"max_attempts"`
	Timeout      string            `yaml:"timeout"`
	DependsOn    []string          `yaml:"depends_on"`
	AllowFailure bool              `yaml:"allow_failure"`
	NeedsSuccess bool              `yaml:"needs_success"`
	Planner      bool              `yaml:"planner"`
}

// yamlValue turns a YAML payload into the value its JSON is made of. Dates
// and times stay the text they were written as (YAML would make 2026-01-02
// a timestamp); a mapping's keys must be strings, as JSON's are.
func yamlValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return yamlValue(n.Content[0])
	case yaml.AliasNode:
		return yamlValue(n.Alias)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := yamlValue(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				return nil, fmt.Errorf("line %d: key %q is not a string (quote it)", k.Line, k.Value)
			}
			v, err := yamlValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		return out, nil
	}
	if n.ShortTag() == "!!timestamp" {
		return n.Value, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, fmt.Errorf("line %d: %w", n.Line, err)
	}
	return v, nil
}

// ParseRunPlanYAML reads a plan written in YAML: the fields of RunPlan under
// the same names, unknown fields refused (with their line), one document.
// A job's payload may be any YAML value with string keys; it becomes the
// JSON payload (object keys in sorted order; dates and times as the text
// written). Everything else is checked
// as ParseRunPlan checks it.
func ParseRunPlanYAML(b []byte) (RunCreateParams, error) {
	var y yamlPlan
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&y); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("the plan is empty")
		}
		return RunCreateParams{}, lifecycle.Validationf("run plan (YAML): %v; expected name: ..., jobs: [{name: ..., kind: ..., depends_on: [...]}]", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return RunCreateParams{}, lifecycle.Validationf("run plan (YAML): more than one document; give one plan per file")
	}
	p := RunPlan{ID: y.ID, Name: y.Name, Tenant: y.Tenant, OnFailure: y.OnFailure, Timeout: y.Timeout}
	for _, j := range y.Jobs {
		pj := RunPlanJob{Name: j.Name, Kind: j.Kind, Queue: j.Queue, Priority: j.Priority, Env: j.Env,
			MaxAttempts: j.MaxAttempts, Timeout: j.Timeout, DependsOn: j.DependsOn, AllowFailure: j.AllowFailure,
			NeedsSuccess: j.NeedsSuccess, Planner: j.Planner}
		if j.Payload.Kind != 0 {
			v, err := yamlValue(&j.Payload)
			var raw []byte
			if err == nil {
				raw, err = json.Marshal(v)
			}
			if err != nil {
				return RunCreateParams{}, lifecycle.Validationf("run plan (YAML): job %q payload: %v; give a mapping with string keys, a list or a scalar", j.Name, err)
			}
			pj.Payload = raw
		}
		p.Jobs = append(p.Jobs, pj)
	}
	// The JSON path does the rest, so both formats give the same params
	// and the same errors.
	raw, err := json.Marshal(p)
	if err != nil {
		return RunCreateParams{}, fmt.Errorf("run plan (YAML): %w", err)
	}
	return ParseRunPlan(raw)
}
