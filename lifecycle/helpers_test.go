package lifecycle_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stint-dev/stint/lifecycle"
)

// t0 is the fixed base time every test job is enqueued at.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	testJobID = "job-1"
	worker    = "worker-1"
	leaseTTL  = time.Minute
)

// fataler is what the factories need from a test: *testing.T and *rapid.T both have it.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// allOps lists every operation, enqueue included.
var allOps = []lifecycle.Op{
	lifecycle.OpEnqueue, lifecycle.OpPromote, lifecycle.OpUnblock, lifecycle.OpClaim,
	lifecycle.OpStart, lifecycle.OpHeartbeat, lifecycle.OpCheckpoint, lifecycle.OpComplete,
	lifecycle.OpFail, lifecycle.OpHalt, lifecycle.OpStall, lifecycle.OpRequeue,
	lifecycle.OpDeadLetter, lifecycle.OpCancel, lifecycle.OpCancelHard, lifecycle.OpAckCancel,
	lifecycle.OpForceCancel, lifecycle.OpTimeOut,
}

var allActors = []lifecycle.Actor{lifecycle.ActorClient, lifecycle.ActorOwner, lifecycle.ActorSystem}

func ptr[T any](v T) *T { return &v }

// baseSpec is a valid spec with a payload, an env map and ids, so that
// aliasing and mutation of maps and slices would show.
func baseSpec() lifecycle.Spec {
	return lifecycle.Spec{
		Kind:          "email.send",
		Payload:       json.RawMessage(`{"to":"ada@example.com"}`),
		Env:           map[string]string{"REGION": "eu"},
		CorrelationID: "corr-1",
		TraceID:       "trace-1",
	}
}

// world is a job, the events that built it and the time of its last step.
type world struct {
	job    lifecycle.Job
	events []lifecycle.Event
	now    time.Time
	leases int // leases issued so far, for fresh fencing tokens
}

// enqueue creates the test job from spec at t0.
func enqueue(t fataler, spec lifecycle.Spec) *world {
	t.Helper()
	st, err := lifecycle.New(testJobID, spec, "producer", "req-enqueue", t0)
	if err != nil {
		t.Fatalf("New(%+v): %v", spec, err)
	}
	return &world{job: st.Job, events: []lifecycle.Event{*st.Event}, now: t0}
}

// mustAt applies cmd at when and requires a real (not no-op) step.
func (w *world) mustAt(t fataler, when time.Time, cmd lifecycle.Command) lifecycle.Event {
	t.Helper()
	st, err := lifecycle.Apply(w.job, cmd, when)
	if err != nil {
		t.Fatalf("building the fixture: %s by %s on %s at %s: %v", cmd.Op, cmd.Actor, w.job.State, when.Sub(t0), err)
	}
	if st.Noop() {
		t.Fatalf("building the fixture: %s by %s on %s was a no-op", cmd.Op, cmd.Actor, w.job.State)
	}
	w.job, w.now = st.Job, when
	w.events = append(w.events, *st.Event)
	return *st.Event
}

// must applies cmd a second after the last step.
func (w *world) must(t fataler, cmd lifecycle.Command) lifecycle.Event {
	t.Helper()
	return w.mustAt(t, w.now.Add(time.Second), cmd)
}

// claim claims the job with a fresh lease and returns the lease id.
func (w *world) claim(t fataler) string {
	t.Helper()
	w.leases++
	lease := fmt.Sprintf("lease-%d", w.leases)
	w.mustAt(t, later(w.now.Add(time.Second), w.job.RunAt), claimCmd(lease))
	return lease
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func claimCmd(lease string) lifecycle.Command {
	return lifecycle.Command{Op: lifecycle.OpClaim, Actor: lifecycle.ActorOwner, ActorID: worker, LeaseID: lease, LeaseTTL: leaseTTL}
}

func ownerCmd(op lifecycle.Op, lease string) lifecycle.Command {
	return lifecycle.Command{Op: op, Actor: lifecycle.ActorOwner, ActorID: worker, LeaseID: lease, LeaseTTL: leaseTTL}
}

func systemCmd(op lifecycle.Op) lifecycle.Command {
	return lifecycle.Command{Op: op, Actor: lifecycle.ActorSystem, ActorID: "maintenance"}
}

func clientCmd(op lifecycle.Op) lifecycle.Command {
	return lifecycle.Command{Op: op, Actor: lifecycle.ActorClient, ActorID: "operator"}
}

func failCmd(lease string, code string, class lifecycle.ErrorClass) lifecycle.Command {
	c := ownerCmd(lifecycle.OpFail, lease)
	c.Error = &lifecycle.JobError{Code: code, Message: "it broke: " + code, Class: class}
	return c
}

func completeCmd(lease string) lifecycle.Command {
	c := ownerCmd(lifecycle.OpComplete, lease)
	c.Result = json.RawMessage(`{"sent":true}`)
	return c
}

func deadLetterCmd(actor lifecycle.Actor, lease string) lifecycle.Command {
	c := lifecycle.Command{Op: lifecycle.OpDeadLetter, Actor: actor, ActorID: "maintenance", LeaseID: lease, ReasonCode: lifecycle.ReasonParseError, Reason: "payload is not an email"}
	return c
}

// reach builds a job in state s through New and legal commands only. spec is
// the base; reach adds what the path to s needs (run_at, depends_on, ...).
func reach(t fataler, spec lifecycle.Spec, s lifecycle.State) *world {
	t.Helper()
	switch s {
	case lifecycle.Queued:
		return enqueue(t, spec)
	case lifecycle.Scheduled:
		spec.RunAt = ptr(t0.Add(10 * time.Minute))
		return enqueue(t, spec)
	case lifecycle.Blocked:
		spec.DependsOn = []string{"job-0"}
		return enqueue(t, spec)
	case lifecycle.Denied:
		spec.DenyReason = "tenant is over its quota"
		return enqueue(t, spec)
	case lifecycle.Claimed:
		w := reach(t, spec, lifecycle.Queued)
		w.claim(t)
		return w
	case lifecycle.Running:
		w := reach(t, spec, lifecycle.Claimed)
		w.must(t, ownerCmd(lifecycle.OpStart, w.job.LeaseID))
		return w
	case lifecycle.CancelRequested:
		w := reach(t, spec, lifecycle.Running)
		w.must(t, clientCmd(lifecycle.OpCancel))
		return w
	case lifecycle.Stalled:
		// By the reaper, on expiry: the lost lease counts as a failed
		// attempt (a release by the owner would not).
		w := reach(t, spec, lifecycle.Running)
		w.mustAt(t, *w.job.LeaseExpiresAt, systemCmd(lifecycle.OpStall))
		return w
	case lifecycle.Retrying:
		w := reach(t, spec, lifecycle.Running)
		w.must(t, failCmd(w.job.LeaseID, "network", lifecycle.ClassTransient))
		return w
	case lifecycle.Succeeded:
		w := reach(t, spec, lifecycle.Running)
		w.must(t, completeCmd(w.job.LeaseID))
		return w
	case lifecycle.Failed:
		w := reach(t, spec, lifecycle.Running)
		w.must(t, failCmd(w.job.LeaseID, "compile_error", lifecycle.ClassPermanent))
		return w
	case lifecycle.Cancelled:
		w := reach(t, spec, lifecycle.Queued)
		w.must(t, clientCmd(lifecycle.OpCancel))
		return w
	case lifecycle.TimedOut:
		spec.MaxAttempts = 1
		w := reach(t, spec, lifecycle.Running)
		w.must(t, failCmd(w.job.LeaseID, "timeout", lifecycle.ClassTimeout))
		return w
	case lifecycle.Halted:
		w := reach(t, spec, lifecycle.Running)
		w.must(t, ownerCmd(lifecycle.OpHalt, w.job.LeaseID))
		return w
	case lifecycle.DeadLettered:
		w := reach(t, spec, lifecycle.Queued)
		w.must(t, deadLetterCmd(lifecycle.ActorSystem, ""))
		return w
	}
	t.Fatalf("reach: no path to state %q", s)
	return nil
}

// applyPure calls Apply and fails the test if Apply changed its input in any
// way, including through its maps, slices and pointers.
func applyPure(t *testing.T, job lifecycle.Job, cmd lifecycle.Command, now time.Time) (lifecycle.Step, error) {
	t.Helper()
	before := deepCopy(job)
	st, err := lifecycle.Apply(job, cmd, now)
	if !reflect.DeepEqual(before, job) {
		t.Errorf("Apply(%s by %s on %s) modified its input job:\nbefore %+v\nafter  %+v", cmd.Op, cmd.Actor, before.State, before, job)
	}
	return st, err
}

// isRejection reports whether err wraps one of the sentinels a rejected
// command may carry.
func isRejection(err error) bool {
	return errors.Is(err, lifecycle.ErrInvalidTransition) ||
		errors.Is(err, lifecycle.ErrStaleLease) ||
		errors.Is(err, lifecycle.ErrValidation)
}

// deepCopy copies v with reflection, following every exported pointer, map
// and slice, so that a comparison after a call sees any write through them.
func deepCopy[T any](v T) T {
	return copyValue(reflect.ValueOf(v)).Interface().(T)
}

func copyValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Elem().Type())
		n.Elem().Set(copyValue(v.Elem()))
		return n
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			n.SetMapIndex(copyValue(it.Key()), copyValue(it.Value()))
		}
		return n
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			n.Index(i).Set(copyValue(v.Index(i)))
		}
		return n
	case reflect.Struct:
		n := reflect.New(v.Type()).Elem()
		n.Set(v)
		for i := range v.NumField() {
			if n.Field(i).CanSet() {
				n.Field(i).Set(copyValue(v.Field(i)))
			}
		}
		return n
	}
	return v
}

// sharedRefs lists the exported fields (by path) through which a and b share
// memory: the same non-nil pointer, map or slice backing array.
func sharedRefs(a, b reflect.Value, path string) []string {
	var out []string
	switch a.Kind() {
	case reflect.Pointer, reflect.Map:
		if !a.IsNil() && !b.IsNil() && a.Pointer() == b.Pointer() {
			return []string{path}
		}
		if a.Kind() == reflect.Pointer && !a.IsNil() && !b.IsNil() {
			out = append(out, sharedRefs(a.Elem(), b.Elem(), path)...)
		}
	case reflect.Slice:
		if a.Len() > 0 && b.Len() > 0 && a.Pointer() == b.Pointer() {
			return []string{path}
		}
	case reflect.Struct:
		for i := range a.NumField() {
			f := a.Type().Field(i)
			if f.IsExported() {
				out = append(out, sharedRefs(a.Field(i), b.Field(i), path+"."+f.Name)...)
			}
		}
	}
	return out
}
