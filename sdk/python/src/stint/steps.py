"""Durable steps over the worker API (docs/steps.md): the step state of one attempt."""
from __future__ import annotations

import calendar
import json
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, TypeVar

from .control import Nondeterministic, Permanent, StepFailed, Suspended
from .errors import InvalidTransitionError, RevisionConflictError, StaleLeaseError, StintError, ValidationError, WaitOverError

if TYPE_CHECKING:
    from .job import Job

T = TypeVar("T")

#: Reason code of an attempt whose step could not be recorded.
SAVE_FAILED = "checkpoint_save_failed"


class SaveFailed(Exception):
    """A step's record could not be saved: the attempt fails (code checkpoint_save_failed) and is retried."""

    code = SAVE_FAILED


def parse_ns(ts: str) -> int:
    """An RFC 3339 timestamp as the API writes it ("2026-01-02T03:04:05.123456789Z") in nanoseconds since the epoch."""
    main, _, frac = ts.rstrip("Z").partition(".")
    secs = calendar.timegm(time.strptime(main, "%Y-%m-%dT%H:%M:%S"))
    return secs * 1_000_000_000 + int((frac + "000000000")[:9])


def format_ns(ns: int) -> str:
    """Nanoseconds since the epoch as an RFC 3339 timestamp in UTC."""
    secs, frac = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{frac:09d}Z"


#: The states a job ends in, as the lifecycle names them.
TERMINAL = frozenset({"succeeded", "failed", "cancelled", "timed_out", "halted", "dead_lettered", "denied"})


def _state(api: str) -> str:
    """A job state as the API writes it (JOB_STATE_SUCCEEDED) as the lifecycle names it (succeeded)."""
    return api.removeprefix("JOB_STATE_").lower()


def _outcome(child: Dict[str, Any], result: str) -> str:
    """The output of an await step, as Go's engine writes it: job_id, state, then result (the JSON text, byte for
    byte), error and reason when set."""
    out = '{"job_id":' + _json(child.get("id", "")) + ',"state":' + _json(_state(child.get("state", "")))
    if result:
        out += ',"result":' + result
    e = child.get("error")
    if e:
        err: Dict[str, Any] = {"code": e.get("code", ""), "message": e.get("message", "")}
        cls = e.get("class", "").removeprefix("ERROR_CLASS_").lower()
        if cls and cls != "unspecified":
            err["class"] = cls
        if e.get("attempt"):
            err["attempt"] = int(e["attempt"])
        out += ',"error":' + _json(err)
    if child.get("reason"):
        out += ',"reason":' + _json(child["reason"])
    return out + "}"


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _for(seconds: float) -> Dict[str, Any]:
    """The output of a timer for seconds, as Go's engine writes it (for_ms, left out when zero)."""
    ms = int(seconds * 1000)
    return {"for_ms": ms} if ms > 0 else {}


class Steps:
    """The recorded steps of a job (read at its first step) and the place of the next one."""

    def __init__(self, job: "Job") -> None:
        self.job = job
        self._lock = threading.Lock()
        self._recorded: Optional[List[Dict[str, Any]]] = None
        self._next = 1

    def _send(self, what: str, method: str, body: Dict[str, Any]) -> Dict[str, Any]:
        return self.job._worker._send(what, method, dict(body, owner=self.job.owner()))

    def take(self, name: str, kind: str) -> Tuple[int, Optional[Dict[str, Any]]]:
        """Takes the next place for a step of name and kind: its record on a replay, else None."""
        if not name:
            raise ValueError("stint: a step needs a name")
        with self._lock:
            if self._recorded is None:
                try:
                    self._recorded = self._send("steps", "WorkerService/GetSteps", {}).get("steps", [])
                except StintError as err:
                    if isinstance(err, (StaleLeaseError, InvalidTransitionError)):
                        raise
                    raise SaveFailed(f"read the job's recorded steps: {err}") from err
            seq = self._next
            self._next += 1
            if seq <= len(self._recorded):
                rec = self._recorded[seq - 1]
                if rec.get("name") != name or rec.get("kind", "run") != kind:
                    raise Nondeterministic(
                        f"step {seq} is {rec.get('kind')} {rec.get('name')!r} in the job's record, but the handler now asks for "
                        f"{kind} {name!r} there; handlers must ask for the same steps in the same order on every attempt (docs/steps.md)")
                return seq, rec
            return seq, None

    def record(self, seq: int, name: str, kind: str, output: Optional[str], ms: int = 0,
               error: Optional[Tuple[str, str]] = None) -> Dict[str, Any]:
        """Records a step, fenced on the lease; the same request id on a retry returns the record as it was."""
        body: Dict[str, Any] = {"seq": seq, "name": name, "kind": kind, "durationMs": str(ms)}
        if error is not None:
            body.update(status="error", errorCode=error[0], errorMessage=error[1])
        elif output is not None:
            body["output"] = output
        try:
            # One request id for the call and its retries (_send repeats the body).
            rec = self._send("step", "WorkerService/RecordStep", body)["step"]
        except (StaleLeaseError, RevisionConflictError, InvalidTransitionError):
            raise  # the job is no longer this attempt's
        except ValidationError as err:  # too large, say: it will not fit next time either
            raise Permanent(f"step {seq} {name!r}: {err.message}", SAVE_FAILED) from err
        except StintError as err:
            raise SaveFailed(f"step {seq} {name!r}: {err}") from err
        return rec

    # -- the calls of Job --

    def run(self, name: str, fn: Callable[[], T], on_error: str = "abort") -> T:
        seq, rec = self.take(name, "run")
        if rec is None:
            self.job.raise_if_aborted()
            began = time.monotonic()
            try:
                value = fn()
            except Exception as err:  # noqa: BLE001 - on_error decides
                if on_error != "continue" or self.job.aborted.is_set():
                    raise
                code = getattr(err, "code", None)
                code = code if isinstance(code, str) and code else "error"
                rec = self.record(seq, name, "run", None, int((time.monotonic() - began) * 1000), (code, str(err) or type(err).__name__))
            else:
                rec = self.record(seq, name, "run", _json(value), int((time.monotonic() - began) * 1000))
        if rec.get("status") == "error":
            e = rec.get("error") or {}
            raise StepFailed(name, e.get("code", "error"), e.get("message", ""))
        return json.loads(rec["output"]) if rec.get("output") else None

    def store_now_ns(self) -> int:
        """The store's clock, estimated: its time of this attempt's claim plus what passed here since."""
        return parse_ns(self.job.record["updatedAt"]) + int((time.monotonic() - self.job._claimed) * 1e9)

    def timer(self, name: str, kind: str, timer: Dict[str, Any]) -> int:
        """Records (or replays) a sleep or wait's timer; returns its end in nanoseconds since the epoch."""
        seq, rec = self.take(name, kind)
        if rec is None:
            self.job.raise_if_aborted()
            rec = self.record(seq, name, kind, _json(timer))
        t = json.loads(rec.get("output") or "{}")
        if t.get("until"):
            return parse_ns(t["until"])
        return parse_ns(rec["recordedAt"]) + int(t.get("for_ms", 0)) * 1_000_000

    def suspend(self, until_ns: int, signal: str = "", child: str = "") -> None:
        """Gives the lease back until until_ns (or the signal, or the child's end); raises Suspended."""
        until = format_ns(until_ns)
        body: Dict[str, Any] = {"until": until}
        if signal:
            body["signal"] = signal
        if child:
            body["child"] = child
        self._send("suspend", "WorkerService/Suspend", body)
        self.job._suspended = True
        raise Suspended(until)

    def sleep(self, name: str, seconds: float) -> None:
        until = self.timer(name, "sleep", _for(seconds))
        if self.store_now_ns() < until:
            self.suspend(until)

    def sleep_until(self, name: str, epoch_seconds: float) -> None:
        until = self.timer(name, "sleep", {"until": format_ns(int(epoch_seconds * 1e6) * 1000)})
        if self.store_now_ns() < until:
            self.suspend(until)

    def wait_signal(self, name: str, timeout: float) -> Tuple[bool, Any]:
        until = self.timer(name, "wait", _for(timeout))
        seq, rec = self.take(name, "signal")
        while rec is None:
            res = self._send("signal", "WorkerService/GetSignal", {"name": name})
            found = bool(res.get("found"))
            if found or self.store_now_ns() >= until:
                payload = (res.get("signal") or {}).get("payload", "")
                # The payload's JSON text goes into the record byte for byte.
                out = '{"received":true,"payload":' + payload + "}" if found and payload else _json({"received": found})
                rec = self.record(seq, name, "signal", out)
                break
            try:
                self.suspend(until, name)
            except WaitOverError:
                continue  # the signal came meanwhile: read it
        o = json.loads(rec.get("output") or "{}")
        return bool(o.get("received")), o.get("payload")

    def start_child(self, name: str, spec: Dict[str, Any]) -> str:
        seq, rec = self.take(name, "child")
        if rec is None:
            self.job.raise_if_aborted()
            try:
                # The child and its record in one call, fenced on the lease; one request id for its retries.
                rec = self._send("child", "WorkerService/StartChild", {"seq": seq, "name": name, "job": spec})["step"]
            except (StaleLeaseError, RevisionConflictError, InvalidTransitionError, ValidationError):
                raise  # no longer this attempt's job; or a bad spec, the handler's to fix
            except StintError as err:
                raise SaveFailed(f"step {seq} {name!r}: {err}") from err
        out = json.loads(rec.get("output") or "{}")
        if not out.get("job_id"):
            raise Nondeterministic(f"step {seq} {name!r} holds no child job")
        return str(out["job_id"])

    def await_child(self, name: str, child_id: str, poll: float) -> Dict[str, Any]:
        seq, rec = self.take(name, "await")
        while rec is None:
            res = self._send("child", "WorkerService/GetChild", {"childId": child_id})
            child = res.get("child") or {}
            if _state(child.get("state", "")) in TERMINAL:
                rec = self.record(seq, name, "await", _outcome(child, res.get("result", "")))
                break
            try:
                self.suspend(self.store_now_ns() + int(poll * 1e9), child=child_id)
            except WaitOverError:
                continue  # the child ended meanwhile: read it
        return json.loads(rec.get("output") or "{}")
