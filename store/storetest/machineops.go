package storetest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"pgregory.net/rapid"

	"github.com/stint-dev/stint/lifecycle"
	"github.com/stint-dev/stint/store"
)

// drawSpec draws a spec: mostly valid, now and then malformed.
func (mc *machine) drawSpec(t *rapid.T) lifecycle.Spec {
	now := mc.m.now
	in := func(label string, ds ...time.Duration) *time.Time {
		d := rapid.SampledFrom(ds).Draw(t, label)
		if d == 0 {
			return nil
		}
		at := now.Add(d)
		return &at
	}
	s := lifecycle.Spec{
		Kind:        rapid.SampledFrom([]string{"k1", "k2"}).Draw(t, "kind"),
		Queue:       rapid.SampledFrom([]string{"a", "b"}).Draw(t, "queue"),
		Priority:    rapid.SampledFrom([]int{-10, 0, 10}).Draw(t, "priority"),
		MaxAttempts: rapid.IntRange(0, 3).Draw(t, "max attempts"),
		Tenant:      rapid.SampledFrom([]string{"", "acme"}).Draw(t, "tenant"),
		DedupeKey:   rapid.SampledFrom([]string{"", "", "", "d1", "d2"}).Draw(t, "dedupe key"),
		RunAt:       in("run at", 0, 0, 0, -time.Minute, time.Minute, 10*time.Minute),
		Deadline:    in("deadline", 0, 0, 0, 5*time.Minute, time.Hour),
		Timeout:     rapid.SampledFrom([]time.Duration{0, 0, time.Minute, 10 * time.Minute}).Draw(t, "timeout"),
		CancelGrace: rapid.SampledFrom([]time.Duration{0, 10 * time.Second}).Draw(t, "cancel grace"),
		OnExhausted: rapid.SampledFrom([]lifecycle.State{"", lifecycle.Failed}).Draw(t, "on exhausted"),
		Payload:     json.RawMessage(rapid.SampledFrom([]string{`{"x": 1}`, `[1,2]`, ``}).Draw(t, "payload")),
	}
	switch rapid.IntRange(0, 59).Draw(t, "special") {
	case 0: // depends_on outside a run, on a job that exists or not: the batch must be refused
		s.DependsOn = []string{"no-such-job"}
		if len(mc.m.ids) > 0 {
			s.DependsOn = []string{mc.m.ids[0]}
		}
	case 1:
		s.DenyReason = "over quota"
	case 2:
		s.Budget = &lifecycle.Budget{MaxSteps: 2}
	case 3: // malformed: the batch must be refused
		s.Payload = json.RawMessage(`{"x":`)
	case 4:
		s.MaxAttempts = -1
	case 5:
		at := now.Add(-time.Second)
		s.Deadline = &at
	}
	return s
}

// enqueue sends a batch of one to three specs.
func (mc *machine) enqueue(t *rapid.T) {
	specs := make([]lifecycle.Spec, rapid.IntRange(1, 4).Draw(t, "batch"))
	for i := range specs {
		specs[i] = mc.drawSpec(t)
	}
	rid := mc.pickRequest(t)
	res, err := mc.s.JobEnqueue(mc.ctx, &store.JobEnqueueParams{Jobs: specs, ActorID: "producer", RequestID: rid, Now: mc.at()})
	mc.stats.count("enqueue", err)
	for _, s := range specs {
		if s.Validate(mc.m.now) != nil {
			if p := rejectionProblem(err, store.ErrValidation); p != "" {
				t.Fatalf("enqueue of an invalid spec: %s", p)
			}
			return
		}
	}
	for _, s := range specs {
		if len(s.DependsOn) > 0 { // only a run's jobs wait for others
			if p := rejectionProblem(err, store.ErrValidation); p != "" {
				t.Fatalf("enqueue with depends_on outside a run: %s", p)
			}
			return
		}
	}
	// A request id names one request of one producer and tenant: asking it
	// again for another kind or queue at the same place is a conflict.
	for i, spec := range specs {
		id, ok := mc.m.enqueued[rid+"\x00"+spec.Tenant][i]
		if !ok || rid == "" || mc.m.jobs[id].Tenant != spec.Tenant {
			continue
		}
		if j := mc.m.jobs[id]; j.Kind != spec.Kind || j.Queue != cmp.Or(spec.Queue, lifecycle.DefaultQueue) {
			if p := rejectionProblem(err, store.ErrRequestConflict); p != "" {
				t.Fatalf("enqueue %d reuses request %q for another job: %s", i, rid, p)
			}
			return
		}
	}
	if err != nil || len(res) != len(specs) {
		t.Fatalf("enqueue: %d results for %d specs, err %v", len(res), len(specs), err)
	}
	batch := map[[2]string]lifecycle.Job{}
	for i, spec := range specs {
		if id, ok := mc.m.enqueued[rid+"\x00"+spec.Tenant][i]; ok && rid != "" && mc.m.jobs[id].Tenant == spec.Tenant {
			if !res[i].Existing || !sameJob(res[i].Job, mc.m.jobs[id]) {
				t.Fatalf("enqueue %d repeats request %q: existing=%v %s, want the job it made %s", i, rid, res[i].Existing, asJSON(res[i].Job), asJSON(mc.m.jobs[id]))
			}
			continue
		}
		k := [2]string{spec.Tenant, spec.DedupeKey}
		if spec.DedupeKey != "" {
			want, ok := batch[k]
			if !ok {
				want, ok = mc.m.liveByKey(spec.Tenant, spec.DedupeKey)
			}
			if ok {
				if !res[i].Existing || !sameJob(res[i].Job, want) {
					t.Fatalf("enqueue %d with the live key %v: existing=%v %s, want the live job %s", i, k, res[i].Existing, asJSON(res[i].Job), asJSON(want))
				}
				continue
			}
		}
		id := res[i].Job.ID
		if _, taken := mc.m.jobs[id]; taken || res[i].Existing || id == "" {
			t.Fatalf("enqueue %d: existing=%v id %q; want a new job with a new id", i, res[i].Existing, id)
		}
		s, err := lifecycle.New(id, spec, "producer", rid, mc.m.now)
		if err != nil {
			t.Fatalf("lifecycle.New: %v", err)
		}
		if !sameJob(res[i].Job, s.Job) {
			t.Fatalf("enqueue %d returned %s\nmodel %s", i, asJSON(res[i].Job), asJSON(s.Job))
		}
		mc.m.commit(outcome{job: s.Job, evs: []lifecycle.Event{*s.Event}})
		if rid != "" {
			if mc.m.enqueued[rid+"\x00"+spec.Tenant] == nil {
				mc.m.enqueued[rid+"\x00"+spec.Tenant] = map[int]string{}
			}
			mc.m.enqueued[rid+"\x00"+spec.Tenant][i] = id
		}
		if spec.DedupeKey != "" && !s.Job.State.Terminal() {
			batch[k] = s.Job
		}
	}
}

// claim claims from one or both queues, sometimes starting in the same call.
func (mc *machine) claim(t *rapid.T) {
	queues := rapid.SampledFrom([][]string{{"a"}, {"b"}, {"a", "b"}, {"a", "b"}}).Draw(t, "queues")
	kinds := rapid.SampledFrom([][]string{nil, nil, nil, {"k1"}}).Draw(t, "kinds")
	limit := rapid.IntRange(1, 3).Draw(t, "limit")
	start := rapid.Bool().Draw(t, "start")
	ttl := rapid.SampledFrom([]time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute}).Draw(t, "ttl")
	worker := rapid.SampledFrom([]string{"w1", "w2", "w3"}).Draw(t, "worker")

	var want []string
	for _, j := range mc.m.claimable(queues, kinds) {
		if len(want) == limit {
			break
		}
		probe := lifecycle.Command{Op: lifecycle.OpClaim, Actor: lifecycle.ActorOwner, ActorID: worker, LeaseID: "probe", LeaseTTL: ttl}
		if _, err := lifecycle.Apply(j, probe, mc.m.now); err == nil {
			want = append(want, j.ID)
		}
	}
	jobs, err := mc.s.JobClaim(mc.ctx, &store.JobClaimParams{WorkerID: worker, Queues: queues, Kinds: kinds, Limit: limit, LeaseTTL: ttl, Start: start, Now: mc.at()})
	mc.stats.count("claim", err)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	got := make([]string, len(jobs))
	for i, j := range jobs {
		got[i] = j.ID
	}
	if !slices.Equal(got, want) {
		t.Fatalf("claim of %v kinds %v limit %d took %v, want %v (claim order: priority DESC, created_at, id)", queues, kinds, limit, got, want)
	}
	for _, j := range jobs {
		if j.LeaseID == "" || slices.Contains(mc.m.leases, j.LeaseID) {
			t.Fatalf("claim of %s granted lease %q, which is not a fresh fencing token", j.ID, j.LeaseID)
		}
		c := lifecycle.Command{Op: lifecycle.OpClaim, Actor: lifecycle.ActorOwner, ActorID: worker, LeaseID: j.LeaseID, LeaseTTL: ttl}
		o := mc.m.one(j.ID, c, nil)
		if o.err == nil && start {
			c.Op = lifecycle.OpStart
			next, ev, err := mc.m.step(o.job, c, nil)
			o.job, o.err = next, err
			if ev != nil {
				o.evs = append(o.evs, *ev)
			}
		}
		if o.err != nil || !sameJob(j, o.job) {
			t.Fatalf("claim returned %s\nmodel %s (%v)", asJSON(j), asJSON(o.job), o.err)
		}
		mc.m.commit(o)
		mc.m.leases = append(mc.m.leases, j.LeaseID)
	}
}

// owner sends one owner operation.
func (mc *machine) owner(t *rapid.T) {
	id := mc.pickLeased(t)
	op := mc.pickOwnerOp(t, mc.m.jobs[id].State)
	before := mc.m.jobs[id]
	p := store.OwnerParams{JobID: id, LeaseID: mc.pickLease(t, id), RequestID: mc.pickRequest(t), Now: mc.at()}
	c, call := mc.ownerCall(t, op, p)
	o := mc.m.one(id, c, nil)
	if op == "release_requeue" {
		o = mc.m.releaseRequeue(id, c)
	}
	got, err := call()
	mc.settle(t, op, o, got, err)
	mc.fenced(t, op, before, p.LeaseID, o)
}

// ownerCall draws the rest of owner operation op's params and returns the
// command the store derives from them and the call that sends them.
func (mc *machine) ownerCall(t *rapid.T, op string, p store.OwnerParams) (lifecycle.Command, func() (store.Job, error)) {
	c := lifecycle.Command{Actor: lifecycle.ActorOwner, LeaseID: p.LeaseID, RequestID: p.RequestID}
	switch op {
	case "start":
		c.Op = lifecycle.OpStart
		return c, func() (store.Job, error) { return mc.s.JobStart(mc.ctx, &p) }
	case "heartbeat":
		hp := store.JobHeartbeatParams{OwnerParams: p,
			LeaseTTL: rapid.SampledFrom([]time.Duration{0, 30 * time.Second, 2 * time.Minute}).Draw(t, "ttl"),
			Phase:    rapid.SampledFrom([]string{"", "uploading"}).Draw(t, "phase")}
		c.Op, c.LeaseTTL, c.Phase = lifecycle.OpHeartbeat, hp.LeaseTTL, hp.Phase
		return c, func() (store.Job, error) { return mc.s.JobHeartbeat(mc.ctx, &hp) }
	case "checkpoint":
		cp := store.JobCheckpointParams{OwnerParams: p, Steps: int64(rapid.IntRange(0, 2).Draw(t, "steps"))}
		if rapid.Bool().Draw(t, "with checkpoint") {
			cp.Checkpoint = json.RawMessage(`{"page":1}`)
		}
		c.Op, c.Checkpoint, c.UsageDelta = lifecycle.OpCheckpoint, cp.Checkpoint, lifecycle.Usage{Steps: cp.Steps}
		return c, func() (store.Job, error) { return mc.s.JobCheckpoint(mc.ctx, &cp) }
	case "fail":
		fp := store.JobFailParams{OwnerParams: p, Error: lifecycle.JobError{
			Code: rapid.SampledFrom([]string{"network", "compile_error", "timeout", "boom"}).Draw(t, "code"), Message: "it broke"}}
		if rapid.IntRange(0, 3).Draw(t, "retry after") == 0 {
			at := mc.m.now.Add(time.Minute)
			fp.RetryAt = &at
		}
		e := fp.Error
		c.Op, c.Error, c.RetryAt = lifecycle.OpFail, &e, fp.RetryAt
		return c, func() (store.Job, error) { return mc.s.JobFail(mc.ctx, &fp) }
	case "halt":
		c.Op, c.ReasonCode, c.Reason = lifecycle.OpHalt, "step_limit", "enough"
		return c, func() (store.Job, error) {
			return mc.s.JobHalt(mc.ctx, &store.JobHaltParams{OwnerParams: p, ReasonCode: "step_limit", Reason: "enough"})
		}
	case "release", "release_requeue":
		c.Op, c.Reason = lifecycle.OpStall, "draining"
		rp := store.JobReleaseParams{OwnerParams: p, Reason: "draining", Requeue: op == "release_requeue"}
		return c, func() (store.Job, error) { return mc.s.JobRelease(mc.ctx, &rp) }
	case "ack_cancel":
		c.Op = lifecycle.OpAckCancel
		return c, func() (store.Job, error) { return mc.s.JobAckCancel(mc.ctx, &p) }
	case "dead_letter":
		dp := store.JobDeadLetterParams{OwnerParams: p, ReasonCode: rapid.SampledFrom([]string{lifecycle.ReasonParseError, "bogus"}).Draw(t, "reason")}
		c.Op, c.ReasonCode = lifecycle.OpDeadLetter, dp.ReasonCode
		if p.LeaseID == "" { // the Store's rule: no lease means the system dead-letters
			c.Actor = lifecycle.ActorSystem
		}
		return c, func() (store.Job, error) { return mc.s.JobDeadLetter(mc.ctx, &dp) }
	}
	t.Fatalf("no owner operation %q", op)
	return c, nil
}

// pickOwnerOp draws an owner operation: mostly one the table allows from
// state, else any.
func (mc *machine) pickOwnerOp(t *rapid.T, state lifecycle.State) string {
	all := []string{"start", "heartbeat", "checkpoint", "fail", "halt", "release", "release_requeue", "ack_cancel", "dead_letter"}
	ops := map[string]lifecycle.Op{"start": lifecycle.OpStart, "heartbeat": lifecycle.OpHeartbeat, "checkpoint": lifecycle.OpCheckpoint,
		"fail": lifecycle.OpFail, "halt": lifecycle.OpHalt, "release": lifecycle.OpStall, "release_requeue": lifecycle.OpStall,
		"ack_cancel": lifecycle.OpAckCancel, "dead_letter": lifecycle.OpDeadLetter}
	var fit []string
	for _, name := range all {
		if hasRow(ops[name], lifecycle.ActorOwner, state) {
			fit = append(fit, name)
		}
	}
	if len(fit) == 0 || rapid.IntRange(0, 3).Draw(t, "any owner op") == 0 {
		return rapid.SampledFrom(all).Draw(t, "owner op")
	}
	return rapid.SampledFrom(fit).Draw(t, "owner op")
}

// complete sends JobComplete with one or two items.
func (mc *machine) complete(t *rapid.T) {
	n := rapid.IntRange(1, 2).Draw(t, "items")
	ps := make([]store.JobCompleteParams, n)
	for i := range ps {
		id := mc.pickLeased(t)
		ps[i] = store.JobCompleteParams{
			OwnerParams: store.OwnerParams{JobID: id, LeaseID: mc.pickLease(t, id), RequestID: mc.pickRequest(t), Now: mc.at()},
			Result:      json.RawMessage(rapid.SampledFrom([]string{`{"ok":true}`, `42`, ``, `{bad`}).Draw(t, "result")),
		}
		if len(ps[i].Result) == 0 {
			ps[i].Result = nil
		}
	}
	// The model takes the items in order on its own copy, like the store's
	// one transaction, and commits them together.
	scratch := *mc.m
	scratch.jobs = maps.Clone(mc.m.jobs)
	var want []outcome
	var befores []lifecycle.Job
	for _, p := range ps {
		befores = append(befores, scratch.jobs[p.JobID])
		c := lifecycle.Command{Op: lifecycle.OpComplete, Actor: lifecycle.ActorOwner, LeaseID: p.LeaseID, RequestID: p.RequestID, Result: p.Result}
		o := scratch.one(p.JobID, c, nil)
		if o.err == nil {
			scratch.jobs[p.JobID] = o.job
		}
		want = append(want, o)
	}
	res, err := mc.s.JobComplete(mc.ctx, ps)
	mc.stats.count("complete", err)
	if err != nil || len(res) != n {
		t.Fatalf("complete: %d results for %d items, err %v", len(res), n, err)
	}
	for i, o := range want {
		if o.err != nil {
			if p := rejectionProblem(res[i].Err, kindOf(o.err)); p != "" {
				t.Fatalf("complete item %d: %s (model: %v)", i, p, o.err)
			}
			continue
		}
		if res[i].Err != nil || !sameJob(res[i].Job, o.job) {
			t.Fatalf("complete item %d: %v, returned %s\nmodel %s", i, res[i].Err, asJSON(res[i].Job), asJSON(o.job))
		}
		mc.m.commit(o)
		mc.fenced(t, "complete", befores[i], ps[i].LeaseID, o)
	}
}

// cancel sends a soft or hard cancel, sometimes with an expected rev.
func (mc *machine) cancel(t *rapid.T) {
	id := mc.pickJob(t)
	p := store.JobCancelParams{JobID: id, Hard: rapid.Bool().Draw(t, "hard"), ActorID: "operator", RequestID: mc.pickRequest(t), ExpectedRev: mc.pickRev(t, id), Now: mc.at()}
	c := lifecycle.Command{Op: lifecycle.OpCancel, Actor: lifecycle.ActorClient, ActorID: p.ActorID, RequestID: p.RequestID}
	if p.Hard {
		c.Op = lifecycle.OpCancelHard
	}
	o := mc.m.one(id, c, p.ExpectedRev)
	got, err := mc.s.JobCancel(mc.ctx, &p)
	mc.settle(t, string(c.Op), o, got, err)
}

// apply sends any command of the table through JobApply, mostly as the
// system, sometimes by an actor the op does not allow.
func (mc *machine) apply(t *rapid.T) {
	ops := []lifecycle.Op{lifecycle.OpPromote, lifecycle.OpUnblock, lifecycle.OpStall, lifecycle.OpRequeue, lifecycle.OpDeadLetter,
		lifecycle.OpForceCancel, lifecycle.OpTimeOut, lifecycle.OpHalt, lifecycle.OpClaim, lifecycle.OpHeartbeat, lifecycle.OpCancel}
	id := mc.pickJob(t)
	c := lifecycle.Command{
		Op:         rapid.SampledFrom(ops).Draw(t, "op"),
		Actor:      rapid.SampledFrom([]lifecycle.Actor{lifecycle.ActorSystem, lifecycle.ActorSystem, lifecycle.ActorSystem, lifecycle.ActorOwner, lifecycle.ActorClient}).Draw(t, "actor"),
		ActorID:    "admin",
		RequestID:  mc.pickRequest(t),
		LeaseTTL:   time.Minute,
		ReasonCode: rapid.SampledFrom([]string{lifecycle.ReasonPolicyViolation, "bogus"}).Draw(t, "reason"),
		Deadline:   rapid.Bool().Draw(t, "deadline"),
	}
	if c.Actor == lifecycle.ActorOwner {
		c.LeaseID = mc.pickLease(t, id)
		if c.Op == lifecycle.OpClaim {
			c.LeaseID = fmt.Sprintf("lease-apply-%d", len(mc.m.leases))
		}
	}
	exp := mc.pickRev(t, id)
	o := mc.m.one(id, c, exp)
	got, err := mc.s.JobApply(mc.ctx, &store.JobApplyParams{JobID: id, Command: c, ExpectedRev: exp, Now: mc.at()})
	mc.settle(t, "apply "+string(c.Op)+" by "+string(c.Actor), o, got, err)
	if err == nil && c.Op == lifecycle.OpClaim && len(o.evs) > 0 {
		mc.m.leases = append(mc.m.leases, c.LeaseID)
	}
}

// maintain runs one maintenance pass, sometimes with a small limit.
func (mc *machine) maintain(t *rapid.T) {
	names := slices.Sorted(maps.Keys(maintenancePasses))
	name := rapid.SampledFrom(names).Draw(t, "pass")
	limit := rapid.SampledFrom([]int{0, 0, 1, 2}).Draw(t, "limit")
	due := map[string]outcome{}
	for id, c := range mc.m.due(name) {
		if o := mc.m.one(id, c, nil); o.err == nil && len(o.evs) > 0 {
			due[id] = o
		}
	}
	n, err := maintenancePasses[name](mc.s, mc.ctx, &store.MaintainParams{Limit: limit, Now: mc.at()})
	mc.stats.count("maintain "+name, err)
	if err != nil {
		t.Fatalf("maintenance %s: %v", name, err)
	}
	changed := 0
	for _, id := range slices.Sorted(maps.Keys(due)) {
		row, err := mc.s.JobGet(mc.ctx, id)
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		switch {
		case sameJob(row, due[id].job):
			mc.m.commit(due[id])
			changed++
		case !sameJob(row, mc.m.jobs[id]):
			t.Fatalf("maintenance %s left job %s as %s\nwant it unchanged %s\nor %s", name, id, asJSON(row), asJSON(mc.m.jobs[id]), asJSON(due[id].job))
		}
	}
	if changed != n || (limit > 0 && n > limit) || ((limit == 0 || limit >= len(due)) && n != len(due)) {
		t.Fatalf("maintenance %s (limit %d) reported %d changes and changed %d jobs; %d were due", name, limit, n, changed, len(due))
	}
}

// clock moves the store's time on (never back).
func (mc *machine) clock(t *rapid.T) {
	d := rapid.SampledFrom([]time.Duration{time.Millisecond, time.Second, 10 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour}).Draw(t, "jump")
	mc.m.now = mc.m.now.Add(d)
}
