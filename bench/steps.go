package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stint-dev/stint"
	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// StepsKind is the kind of the step-overhead benchmark's jobs: each runs
// its payload's "steps" no-op durable steps.
const StepsKind = "bench.steps"

// DefaultStepsJobs is how many jobs each mode of RunSteps works.
const DefaultStepsJobs = 2000

// StepsConfig configures the step-overhead benchmark.
type StepsConfig struct {
	// Jobs per mode. Defaults to DefaultStepsJobs.
	Jobs int
	// Modes are the step counts per job to compare. Defaults to 1 and 10.
	Modes []int
	// Pool configures the worker pools (one per mode, default config).
	Pool stint.Config
}

// StepsMode is one mode's measure: jobs of Steps steps worked by a pool.
type StepsMode struct {
	Steps     int     `json:"steps"`
	Jobs      int     `json:"jobs"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"jobs_per_second"`
	// MSPerJob is the wall time per job (Seconds / Jobs, in ms).
	MSPerJob float64 `json:"ms_per_job"`
}

// StepsReport compares the modes: Ratio is the last mode's cost per job
// over the first's, and PerStepMS what each step beyond the first adds.
type StepsReport struct {
	Modes     []StepsMode `json:"modes"`
	Ratio     float64     `json:"ratio"`
	PerStepMS float64     `json:"per_step_ms"`
}

// RunSteps measures what recorded steps cost: for each mode it enqueues
// Jobs jobs of that many no-op steps (each a committed step record), works
// them with a fresh pool and times it from the pool's start to the last
// success.
func RunSteps(ctx context.Context, st store.Store, cfg StepsConfig) (StepsReport, error) {
	if cfg.Jobs <= 0 {
		cfg.Jobs = DefaultStepsJobs
	}
	if len(cfg.Modes) == 0 {
		cfg.Modes = []int{1, 10}
	}
	var rep StepsReport
	for _, k := range cfg.Modes {
		m, err := runStepsMode(ctx, st, cfg, k)
		if err != nil {
			return rep, err
		}
		rep.Modes = append(rep.Modes, m)
	}
	first, last := rep.Modes[0], rep.Modes[len(rep.Modes)-1]
	if first.MSPerJob > 0 {
		rep.Ratio = last.MSPerJob / first.MSPerJob
	}
	if last.Steps > first.Steps {
		rep.PerStepMS = (last.MSPerJob - first.MSPerJob) / float64(last.Steps-first.Steps)
	}
	return rep, nil
}

func runStepsMode(ctx context.Context, st store.Store, cfg StepsConfig, steps int) (StepsMode, error) {
	queue := fmt.Sprintf("bench-steps-%d", steps)
	payload := json.RawMessage(fmt.Sprintf(`{"steps": %d}`, steps))
	for done := 0; done < cfg.Jobs; {
		n := min(DefaultBatch, cfg.Jobs-done)
		specs := make([]lifecycle.Spec, n)
		for i := range specs {
			specs[i] = lifecycle.Spec{Kind: StepsKind, Queue: queue, Payload: payload}
		}
		if _, err := st.JobEnqueue(ctx, &store.JobEnqueueParams{Jobs: specs}); err != nil {
			return StepsMode{}, err
		}
		done += n
	}
	mux := stint.NewMux()
	mux.HandleFunc(StepsKind, stepsHandler)
	pc := cfg.Pool
	pc.Queues = map[string]int{queue: stint.DefaultMaxWorkers}
	pc.NoMaintenance = true
	pool, err := stint.NewPool(st, mux, pc)
	if err != nil {
		return StepsMode{}, err
	}
	r := &runner{cfg: Config{Jobs: cfg.Jobs}, pool: pool}
	took, err := r.work(ctx)
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if serr := pool.Stop(stopCtx); err == nil {
		err = serr
	}
	if err != nil {
		return StepsMode{}, err
	}
	return StepsMode{Steps: steps, Jobs: cfg.Jobs, Seconds: took.Seconds, PerSecond: took.PerSecond,
		MSPerJob: took.Seconds * 1000 / float64(cfg.Jobs)}, nil
}

// stepsHandler runs its payload's number of no-op steps.
func stepsHandler(ctx context.Context, j *stint.Job) error {
	var p struct{ Steps int }
	if err := j.Decode(&p); err != nil {
		return err
	}
	for i := range p.Steps {
		if _, err := stint.Step(ctx, j, fmt.Sprintf("s%d", i), func(context.Context) (int, error) { return i, nil }); err != nil {
			return err
		}
	}
	return nil
}
