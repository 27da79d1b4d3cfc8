package demo

import (
	"encoding/json"

	"github.com/stint-dev/stint"
)

// RunName names the demo run.
const RunName = "demo-ci"

// RunJobs returns a small CI-shaped run in queue: build, then test and lint
// (lint fails, but is allowed to), then deploy, which still runs: the run
// succeeds. stint dev creates it so that `stint runs show` has something to show.
func RunJobs(queue string) []stint.RunJob {
	job := func(name, kind, payload string, deps ...string) stint.RunJob {
		s := stint.Spec{Kind: kind, Queue: queue}
		if payload != "" {
			s.Payload = json.RawMessage(payload)
		}
		return stint.RunJob{Name: name, Spec: s, DependsOn: deps}
	}
	lint := job("lint", KindFail, "", "build")
	lint.AllowFailure, lint.Spec.MaxAttempts = true, 1
	return []stint.RunJob{
		job("build", KindSleep, `{"ms": 500}`),
		job("test", KindProgress, `{"steps": 3, "ms": 300}`, "build"),
		lint,
		job("deploy", KindNoop, "", "test", "lint"),
	}
}
