package demo

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/stint-dev/stint"
)

// KindWorkflow runs three durable steps with a durable sleep of "sleep_ms"
// (default 200) between steps 2 and 3 (docs/steps.md). With "log" set to a
// file path, each step appends one line "stepK" to it when its function
// actually runs: a replay after a crash returns the recorded step without
// running it, so each line appears once.
const KindWorkflow = "demo.workflow"

type workflowPayload struct {
	SleepMS *int64 `json:"sleep_ms"`
	Log     string `json:"log"`
}

func (h handlers) workflow(ctx context.Context, j *stint.Job) error {
	var p workflowPayload
	if len(j.Payload()) > 0 {
		if err := j.Decode(&p); err != nil {
			return err
		}
	}
	sleep := DefaultSleep
	if p.SleepMS != nil {
		sleep = time.Duration(*p.SleepMS) * time.Millisecond
	}
	if sleep < 0 || sleep > MaxSleep {
		return stint.DeadLetter(stint.ReasonValidationFailed, fmt.Errorf("%s: sleep_ms is %d: use 0 to %d", j.Kind(), sleep.Milliseconds(), MaxSleep.Milliseconds()))
	}
	var done []string
	for k := 1; k <= 3; k++ {
		if k == 3 {
			if err := j.Sleep(ctx, "sleep", sleep); err != nil {
				return err
			}
		}
		name := fmt.Sprintf("step%d", k)
		out, err := stint.Step(ctx, j, name, func(context.Context) (string, error) {
			return name, appendLine(p.Log, name)
		})
		if err != nil {
			return err
		}
		done = append(done, out)
	}
	return j.SetResult(map[string]any{"steps": done})
}

// appendLine appends line to the file at path (nothing when path is ""),
// synced, so a line written before a crash is there after it.
func appendLine(path, line string) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
