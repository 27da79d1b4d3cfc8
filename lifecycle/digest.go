package lifecycle

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"slices"
	"strconv"
	"time"
)

// SpecDigest is the digest of a job's immutable spec: every field written at
// enqueue and never changed (tenant, kind, queue, topic, priority, payload,
// context pointer, adapter, env, dedupe key, attempts, timeout, deadline,
// cancel grace, budget, correlation, trace, parent, run, step, replay_of,
// depends_on), as "sha256:<hex>" over a canonical encoding. The enqueued (or
// denied) event records it, so Verify finds a spec column changed behind the
// store's back. An absent value and an empty one digest alike (a nil budget
// is a zero budget), so either layout of a store reads back the same digest.
func SpecDigest(j Job) string {
	d := specHash{h: sha256.New()}
	d.str("id", j.ID)
	d.str("tenant", j.Tenant)
	d.str("kind", j.Kind)
	d.str("queue", j.Queue)
	d.str("topic", j.Topic)
	d.num("priority", int64(j.Priority))
	d.put("payload", j.Payload)
	d.str("context_ptr", j.ContextPtr)
	d.str("adapter_id", j.AdapterID)
	keys := make([]string, 0, len(j.Env))
	for k := range j.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	d.num("env", int64(len(keys)))
	for _, k := range keys {
		d.str("k", k)
		d.str("v", j.Env[k])
	}
	d.str("dedupe_key", j.DedupeKey)
	d.num("max_attempts", int64(j.MaxAttempts))
	d.str("on_exhausted", string(j.OnExhausted))
	d.num("timeout", int64(j.Timeout))
	d.time("deadline", j.Deadline)
	d.num("cancel_grace", int64(j.CancelGrace))
	var b Budget
	if j.Budget != nil {
		b = *j.Budget
	}
	d.num("budget_max_runtime", int64(b.MaxRuntime))
	d.num("budget_max_steps", b.MaxSteps)
	d.num("budget_max_cost", b.MaxCost)
	d.str("correlation_id", j.CorrelationID)
	d.str("trace_id", j.TraceID)
	d.str("parent_job_id", j.ParentJobID)
	d.str("run_id", j.RunID)
	d.num("step_index", int64(j.StepIndex))
	d.str("replay_of", j.ReplayOf)
	d.num("depends_on", int64(len(j.DependsOn)))
	for _, id := range j.DependsOn {
		d.str("id", id)
	}
	return "sha256:" + hex.EncodeToString(d.h.Sum(nil))
}

// specHash writes each field as name, length and bytes, so no two specs
// share an encoding.
type specHash struct{ h hash.Hash }

func (d specHash) put(name string, v []byte) {
	d.h.Write([]byte(name))
	d.h.Write([]byte{0})
	d.h.Write(strconv.AppendInt(nil, int64(len(v)), 10))
	d.h.Write([]byte{0})
	d.h.Write(v)
}

func (d specHash) str(name, v string) { d.put(name, []byte(v)) }

func (d specHash) num(name string, v int64) { d.put(name, strconv.AppendInt(nil, v, 10)) }

// time writes t to the microsecond, the precision both stores keep.
func (d specHash) time(name string, t *time.Time) {
	if t == nil {
		d.put(name, nil)
		return
	}
	d.num(name, t.UnixMicro())
}
