"""Worker: claims jobs and runs their handlers, with heartbeats, cancellation and fencing."""
from __future__ import annotations

import datetime
import logging
import os
import queue as queuelib
import random
import re
import signal
import socket
import threading
import time
import uuid
from typing import Any, Callable, Dict, List, Optional

from .control import (AbortReason, CancelRequested, DeadLetter, DeadlinePassed, Halt, LeaseLost, Permanent,
                      RetryAfter, Shutdown, Suspended, TimeoutExceeded)
from .errors import InvalidTransitionError, NotFoundError, StaleLeaseError, StintError, is_rejection, new_error
from .job import Job
from .transport import Transport, duration

Handler = Callable[[Job], Any]
"""Runs one attempt: what it returns (JSON) is the result; what it raises decides a retry."""

_MAX_MESSAGE = 32 << 10
_CODE = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")


class Outcome:
    """How an attempt's report ended: op is complete, fail, halt, dead_letter, ack_cancel, release, suspend (a durable sleep or wait gave the lease back) or "" (lease lost)."""

    __slots__ = ("job_id", "kind", "op", "job", "error")

    def __init__(self, job_id: str, kind: str, op: str, job: Optional[Dict[str, Any]], error: Optional[BaseException]) -> None:
        self.job_id, self.kind, self.op, self.job, self.error = job_id, kind, op, job, error

    def __repr__(self) -> str:
        return f"Outcome(job_id={self.job_id!r}, op={self.op!r}, error={self.error!r})"


class _Attempt:
    def __init__(self, job: Job, lease_ttl: float, beat: float) -> None:
        now = time.monotonic()
        self.job = job
        self.began = now
        self.lease_until = now + lease_ttl
        self.next_beat = now + beat
        self.lost = False
        self.queue = ""
        self.freed = False  # its slot was given back before its completion was written
        self.done = threading.Event()
        timeout = _seconds(job.record.get("timeout"))
        self.timeout = timeout
        self.timeout_at = now + timeout if timeout else None
        deadline = job.record.get("deadline")
        self.deadline_at = now + (_parse_time(deadline) - time.time()) if deadline else None


class Worker:
    """Claims jobs from its queues and runs their kinds' handlers (threads): the guarantees of Go's stint.Pool over the API.

    Handlers run on a pool of threads that grows to the most jobs that ran
    at once (at most the slots); a thread is not started per job.
    """

    def __init__(self, url: str, token: Optional[str] = None, queues: Optional[Dict[str, int]] = None,
                 worker_id: Optional[str] = None, lease_ttl: float = 60.0, claim_wait: float = 30.0,
                 shutdown_grace: float = 10.0, backoff: Optional[Dict[str, float]] = None, complete_batch: int = 1000,
                 logger: Optional[logging.Logger] = None, on_outcome: Optional[Callable[[Outcome], None]] = None,
                 transport: Optional[Transport] = None, completed_jobs: bool = False) -> None:
        """queues maps each queue to the most of its jobs that run at once (default {"default": 10}).

        lease_ttl, claim_wait and shutdown_grace are seconds; backoff is
        {"base": s, "factor": f, "max": s} (unset: the server's 500ms doubling to 60s).
        completed_jobs has the server send back each completed job as stored,
        for Outcome.job of op complete; by default a completion's answer holds
        no job, which spares the server encoding it and the worker decoding it.
        """
        self.queues = dict(queues or {"default": 10})
        for q, n in self.queues.items():
            if not isinstance(n, int) or n < 1:
                raise ValueError(f"stint: queue {q}: concurrency {n!r}: expected a whole number of at least 1")
        self.worker_id = worker_id or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.lease_ttl, self.claim_wait, self.shutdown_grace = lease_ttl, claim_wait, shutdown_grace
        self.backoff = backoff
        self.complete_batch = complete_batch
        self.completed_jobs = completed_jobs
        self.log = logger or logging.getLogger("stint")
        self.on_outcome = on_outcome
        self.transport = transport or Transport(url, token, timeout=max(75.0, claim_wait + 15))
        self._handlers: Dict[str, Handler] = {}
        self._running: Dict[str, _Attempt] = {}
        self._lock = threading.Condition()
        self._state = "new"
        self._threads: List[threading.Thread] = []
        self._handler_threads: List[threading.Thread] = []  # the handler pool
        self._work: "queuelib.SimpleQueue[Optional[_Attempt]]" = queuelib.SimpleQueue()
        self._idle = 0  # handler threads waiting for work, under _lock
        self._busy_in: Dict[str, int] = {q: 0 for q in self.queues}  # slots taken per queue, under _lock
        self._slots = sum(self.queues.values())
        self._completions: "queuelib.Queue[Any]" = queuelib.Queue()
        self._stream_conn: Any = None
        self._stopped = threading.Event()
        self._claimers: List[Transport] = []

    # -- registration and lifecycle --

    def handle(self, kind: str, handler: Optional[Handler] = None) -> Any:
        """Registers the handler of a kind (also usable as a decorator: @worker.handle("email"))."""
        if handler is None:
            return lambda fn: self.handle(kind, fn) and fn
        if self._state != "new":
            raise RuntimeError("stint: register handlers before start()")
        self._handlers[kind] = handler
        return self

    def start(self) -> None:
        """Begins claiming; returns at once."""
        if self._state != "new":
            raise RuntimeError("stint: a worker starts once")
        if not self._handlers:
            raise RuntimeError("stint: no handlers: register one with handle(kind, fn) before start()")
        self._state = "running"
        for q, limit in self.queues.items():
            claimer = self.transport.clone()  # its own connection, interrupted at stop
            self._claimers.append(claimer)
            self._spawn(f"stint-claim-{q}", self._claim_loop, q, limit, claimer)
        self._spawn("stint-heartbeats", self._beat_loop)
        self._spawn("stint-notices", self._listen)
        self._spawn("stint-completer", self._complete_loop)

    def run(self) -> None:
        """Starts the worker and stops it gracefully at SIGINT or SIGTERM (call from the main thread)."""
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        self.start()
        while not stop.wait(1):
            pass
        self.stop()

    def stop(self, timeout: Optional[float] = None) -> None:
        """Shuts down gracefully: no new claims; claimed jobs not started are released (requeued, no attempt spent);
        running handlers get shutdown_grace seconds, then are aborted with Shutdown, and a handler that then raises has
        its job released the same way. With timeout, handlers still running then are abandoned (their jobs released).
        """
        with self._lock:
            if self._state != "running":
                self._state = "stopped"
                return
            self._state = "stopping"
            self._lock.notify_all()
        for c in self._claimers:
            c.interrupt()
        until = None if timeout is None else time.monotonic() + timeout
        for t in self._threads:
            if t.name.startswith("stint-claim-"):
                t.join()
        with self._lock:
            grace_end = time.monotonic() + self.shutdown_grace
            while self._running and time.monotonic() < grace_end:
                self._lock.wait(grace_end - time.monotonic())
            left = list(self._running.values())
        for a in left:
            a.job._abort(Shutdown())
        for a in left:
            a.done.wait(None if until is None else max(0.0, until - time.monotonic()))
        with self._lock:
            stuck = list(self._running.values())
        for a in stuck:
            a.lost = True
            self._release(a, "the worker stopped before the handler returned")
        self._state = "stopped"
        for _ in list(self._handler_threads):
            self._work.put(None)  # a stuck handler's thread takes its None when (if) it returns
        self._completions.put(None)
        self._stopped.set()
        conn = self._stream_conn
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self._threads:
            if not t.name.startswith("stint-claim-"):
                t.join(5)
        for c in self._claimers:
            c.close()
        self.transport.close()

    def _spawn(self, name: str, fn: Callable[..., None], *args: Any) -> threading.Thread:
        t = threading.Thread(target=fn, args=args, name=name, daemon=True)
        self._threads.append(t)
        t.start()
        return t

    # -- calls --

    def _send(self, what: str, method: str, body: Dict[str, Any], transport: Optional[Transport] = None) -> Dict[str, Any]:
        """Calls the API, retrying while the outcome is unknown (same body, so the same request id) for at most a lease."""
        transport = transport or self.transport
        until = time.monotonic() + self.lease_ttl
        delay = 0.05
        while True:
            try:
                return transport.call(method, body)
            except StintError as err:
                if is_rejection(err) or time.monotonic() + delay > until or (what == "claim" and self._state != "running"):
                    raise
                self.log.warning("stint: %s failed; retrying in %.2fs: %s", what, delay, err)
                time.sleep(delay * (0.5 + random.random() / 2))
                delay = min(delay * 2, 5.0)

    # -- claiming and running --

    def _claim_loop(self, q: str, limit: int, claimer: Transport) -> None:
        kinds = list(self._handlers)
        request_id = str(uuid.uuid4())
        failures = 0
        while True:
            with self._lock:
                while self._state == "running" and self._busy(q) >= limit:
                    self._lock.wait()
                if self._state != "running":
                    return
                free = limit - self._busy(q)
            body = {"queues": [q], "kinds": kinds, "limit": min(free, 1000), "start": True, "workerId": self.worker_id,
                    "requestId": request_id, "leaseTtl": duration(self.lease_ttl), "wait": duration(self.claim_wait)}
            try:
                jobs = self._send("claim", "WorkerService/Claim", body, claimer).get("jobs", [])
                failures = 0
            except StintError as err:
                if self._state != "running":
                    # The interrupted claim may have leased jobs: the same
                    # request id returns them, and they go back unstarted.
                    body["wait"] = None
                    try:
                        jobs = self._send("claim", "WorkerService/Claim", {k: v for k, v in body.items() if v}).get("jobs", [])
                    except StintError:
                        jobs = []
                    for rec in jobs:
                        self._release(_Attempt(Job(rec, self), self.lease_ttl, 0), "the worker is shutting down")
                    return
                failures += 1
                self.log.warning("stint: claim from queue %s failed; retrying: %s", q, err)
                if is_rejection(err):
                    request_id = str(uuid.uuid4())
                time.sleep(min(0.05 * 2 ** failures, 5.0))
                continue
            request_id = str(uuid.uuid4())
            for rec in jobs:
                if self._state == "running":
                    self._run(rec, q)
                else:  # claimed as the worker stopped: back unstarted
                    self._release(_Attempt(Job(rec, self), self.lease_ttl, 0), "the worker is shutting down")

    def _busy(self, q: str) -> int:
        return self._busy_in[q]

    def _run(self, rec: Dict[str, Any], q: str) -> None:
        job = Job(rec, self)
        a = _Attempt(job, self.lease_ttl, self.lease_ttl / 3)
        a.queue = q
        with self._lock:
            self._running[job.id] = a
            self._busy_in[q] += 1
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1  # that thread takes a
        if not spawn:
            self._work.put(a)
            return
        t = threading.Thread(target=self._handle_loop, args=(a,), name=f"stint-handler-{len(self._handler_threads) + 1}", daemon=True)
        self._handler_threads.append(t)
        t.start()

    def _handle_loop(self, a: Optional[_Attempt]) -> None:
        """One thread of the handler pool: runs attempts until stop() sends None."""
        while a is not None:
            queued = self._attempt(a)
            with self._lock:
                self._idle += 1
                # A completion frees its slot once queued (as Go's pool does)
                # while fewer than all slots' worth wait, else once written;
                # only now, so that the pool never has more busy threads than
                # slots.
                if queued and not a.done.is_set() and self._completions.qsize() <= self._slots:
                    a.freed = True
                    self._busy_in[a.queue] -= 1
                    self._lock.notify_all()
            a = self._work.get()

    def _attempt(self, a: _Attempt) -> bool:
        """Runs the handler and reports; True when a completion was queued (the completer finishes the attempt)."""
        handler = self._handlers[a.job.kind]
        ok, value, err = False, None, None
        try:
            value = handler(a.job)
            ok = True
        except BaseException as e:  # noqa: B902 - a handler's every exception decides its job
            err = e
        try:
            if ok and not a.lost and not a.job._suspended:
                self._complete(a, value, int((time.monotonic() - a.began) * 1000))
                return True
            self._settle(a, ok, value, err, int((time.monotonic() - a.began) * 1000))
        except Exception:  # noqa: BLE001
            self.log.exception("stint: could not report job %s's outcome; it is retried when its lease expires", a.job.id)
        self._finish(a)
        return False

    def _finish(self, a: _Attempt) -> None:
        """Untracks an attempt whose report is written, and frees its slot if its completion did not already."""
        with self._lock:
            if a.done.is_set():
                return
            if self._running.get(a.job.id) is a:  # not a later attempt of the same job
                del self._running[a.job.id]
            if not a.freed:
                self._busy_in[a.queue] -= 1
            a.done.set()
            self._lock.notify_all()

    def _settle(self, a: _Attempt, ok: bool, value: Any, err: Optional[BaseException], ms: int) -> None:
        reason = a.job.abort_reason
        if a.job._suspended:
            # A durable sleep or wait gave the lease back: nothing more to report.
            return self._outcome(a, "suspend", None, None if isinstance(err, Suspended) or ok else err)
        if a.lost:
            return self._outcome(a, "", None, reason)
        if isinstance(reason, CancelRequested):
            return self._report(a, "ack_cancel", "WorkerService/AckCancel", {})
        if isinstance(reason, Shutdown):
            return self._release(a, str(reason))
        if isinstance(reason, DeadlinePassed):
            # Not requeued: the server's timeouts service ends it timed out (a job
            # requeued past its deadline would only be claimed and aborted again).
            return self._release(a, str(reason), requeue=False)
        if isinstance(reason, TimeoutExceeded):
            return self._fail(a, "timeout", f"{reason}: {err}", "ERROR_CLASS_TIMEOUT", ms)
        if isinstance(reason, AbortReason):
            return self._outcome(a, "", None, reason)
        if isinstance(err, RetryAfter):
            return self._fail(a, err.code, str(err), "ERROR_CLASS_TRANSIENT", ms, err.delay)
        if isinstance(err, Permanent):
            return self._fail(a, err.code, str(err), "ERROR_CLASS_PERMANENT", ms)
        if isinstance(err, Halt):
            return self._ack_if_cancel_requested(a, "halt", "WorkerService/Halt", {"reasonCode": "halted", "reason": str(err), "executionMs": ms})
        if isinstance(err, DeadLetter):
            return self._ack_if_cancel_requested(a, "dead_letter", "WorkerService/DeadLetter", {
                "reasonCode": err.reason_code, "errorCode": err.reason_code, "errorMessage": _clip(str(err))})
        code = getattr(err, "code", None)
        code = code if isinstance(code, str) and _CODE.match(code) else "error"
        return self._fail(a, code, str(err) or type(err).__name__, None, ms)

    def _complete(self, a: _Attempt, value: Any, ms: int) -> None:
        """Queues a completion; the completer reports it and finishes the attempt."""
        item = {"a": a, "req": {"owner": a.job.owner(), "result": value, "resultPtr": a.job.result_ptr or None, "executionMs": ms}}
        self._completions.put(item)

    def _complete_loop(self) -> None:
        """Writes completions with CompleteMany: whatever is queued when the writer is free goes in one call."""
        while True:
            first = self._completions.get()
            if first is None:
                return
            items = [first]
            while len(items) < self.complete_batch:
                try:
                    nxt = self._completions.get_nowait()
                except queuelib.Empty:
                    break
                if nxt is None:
                    self._completions.put(None)
                    break
                items.append(nxt)
            outcomes: List[Any] = []
            try:
                res = self._send("complete", "WorkerService/CompleteMany",
                                 {"completions": [{k: v for k, v in i["req"].items() if v is not None} for i in items],
                                  "omitJobs": not self.completed_jobs})
                results = res.get("results", [])
                for i, item in enumerate(items):
                    r = results[i] if i < len(results) else {"errorCode": "internal", "errorMessage": "no result for this completion"}
                    if r.get("errorCode"):
                        outcomes.append((None, new_error(r.get("errorMessage", ""), r["errorCode"], r.get("errorKind", ""))))
                    else:
                        outcomes.append((r.get("job"), None))
            except StintError as err:
                outcomes = [(None, err)] * len(items)
            for item, (job, error) in zip(items, outcomes):
                try:
                    self._outcome(item["a"], "complete", job, error)
                except Exception:  # noqa: BLE001 - on_outcome's own failure
                    self.log.exception("stint: on_outcome failed for job %s", item["a"].job.id)
                self._finish(item["a"])

    def _fail(self, a: _Attempt, code: str, message: str, cls: Optional[str], ms: int, retry_after: Optional[float] = None) -> None:
        body: Dict[str, Any] = {"errorCode": code, "errorMessage": _clip(message), "executionMs": ms}
        if cls:
            body["errorClass"] = cls
        if retry_after and retry_after > 0:
            body["retryAfter"] = duration(retry_after)
        if self.backoff:
            body["backoff"] = {k: (duration(v) if k in ("base", "max") else v) for k, v in self.backoff.items()}
        self._report(a, "fail", "WorkerService/Fail", body)

    def _release(self, a: _Attempt, reason: str, requeue: bool = True) -> None:
        """Gives the lease back, requeued at once by default (no attempt spent); a job whose cancel was requested meanwhile is acknowledged instead."""
        self._ack_if_cancel_requested(a, "release", "WorkerService/Release", {"reason": reason, "requeue": requeue})

    def _ack_if_cancel_requested(self, a: _Attempt, op: str, method: str, body: Dict[str, Any]) -> None:
        try:
            res = self._send(op, method, dict(body, owner=a.job.owner()))
            self._outcome(a, op, res.get("job"), None)
        except InvalidTransitionError as err:
            if "cancel_requested" in err.message:
                return self._report(a, "ack_cancel", "WorkerService/AckCancel", {})
            self._outcome(a, op, None, err)
        except StintError as err:
            self._outcome(a, op, None, err)

    def _report(self, a: _Attempt, op: str, method: str, body: Dict[str, Any]) -> None:
        try:
            res = self._send(op, method, dict(body, owner=a.job.owner()))
            self._outcome(a, op, res.get("job"), None)
        except StintError as err:
            self._outcome(a, op, None, err)

    def _outcome(self, a: _Attempt, op: str, job: Optional[Dict[str, Any]], err: Optional[BaseException]) -> None:
        if isinstance(err, StaleLeaseError):
            self.log.warning("stint: %s of job %s was rejected: the job is no longer this worker's: %s", op, a.job.id, err)
        elif err is not None and op:
            self.log.warning("stint: %s of job %s was rejected: %s", op, a.job.id, err)
        if self.on_outcome:
            self.on_outcome(Outcome(a.job.id, a.job.kind, op, job, err))

    # -- heartbeats, timeouts, notices --

    def _beat_loop(self) -> None:
        """Heartbeats each running job every third of its lease, and aborts jobs past their lease, timeout or deadline."""
        tick = min(0.1, self.lease_ttl / 6)
        while not self._stopped.wait(tick):
            now = time.monotonic()
            with self._lock:
                attempts = list(self._running.values())
            for a in attempts:
                if a.lost or a.done.is_set() or a.job._suspended:
                    continue
                if now > a.lease_until:
                    self._lose(a, "it was not renewed before it expired")
                elif a.deadline_at is not None and now >= a.deadline_at:
                    a.job._abort(DeadlinePassed())
                elif a.timeout_at is not None and now >= a.timeout_at:
                    a.job._abort(TimeoutExceeded(a.timeout or 0))
                if now >= a.next_beat:
                    a.next_beat = now + self.lease_ttl / 3
                    try:
                        self._heartbeat(a.job, None, "")
                    except StintError:
                        pass

    def _listen(self) -> None:
        """Follows the server's notices, so a cancel reaches a handler at once rather than at its next heartbeat."""
        delay = 0.1
        while self._state in ("running", "stopping"):
            try:
                for n in self.transport.stream("WorkerService/Notices", {}, on_connect=self._set_stream):
                    delay = 0.1
                    a = self._running.get(n.get("jobId", ""))
                    if a is not None:
                        try:
                            self._heartbeat(a.job, None, "")
                        except StintError:
                            pass
            except StintError as err:
                if self._stopped.is_set():
                    return
                self.log.debug("stint: notices stream ended; reconnecting: %s", err)
            if self._stopped.wait(delay):
                return
            delay = min(delay * 2, 5.0)

    def _set_stream(self, conn: Any) -> None:
        self._stream_conn = conn

    def _lose(self, a: _Attempt, why: str) -> None:
        a.lost = True
        a.job._abort(LeaseLost(why))

    def _heartbeat(self, job: Job, progress: Any, phase: str) -> None:
        a = self._running.get(job.id)
        sent = time.monotonic()
        body: Dict[str, Any] = {"owner": job.owner(), "leaseTtl": duration(self.lease_ttl)}
        if progress is not None:
            body["progress"] = progress
        if phase:
            body["phase"] = phase
        try:
            res = self._send("heartbeat", "WorkerService/Heartbeat", body)
        except (StaleLeaseError, NotFoundError, InvalidTransitionError) as err:
            if a is not None:
                self._lose(a, err.message)
            raise
        if a is not None:
            a.lease_until = sent + self.lease_ttl
            if res.get("cancelRequested"):
                job._abort(CancelRequested())

    def _checkpoint(self, job: Job, state: Any, steps: int, cost: int, progress: Any, phase: str) -> None:
        body: Dict[str, Any] = {"owner": job.owner(), "checkpoint": state, "steps": str(steps), "cost": str(cost)}
        if progress is not None:
            body["progress"] = progress
        if phase:
            body["phase"] = phase
        res = self._send("checkpoint", "WorkerService/Checkpoint", body)
        if "checkpoint" in res.get("job", {}):
            job.record["checkpoint"] = res["job"]["checkpoint"]


def _clip(s: str) -> str:
    return s if len(s) <= _MAX_MESSAGE else s[:_MAX_MESSAGE] + "... (truncated)"


def _seconds(d: Optional[str]) -> Optional[float]:
    """A JSON duration ("1.5s") in seconds."""
    return float(d[:-1]) if d else None


def _parse_time(ts: str) -> float:
    """An RFC 3339 timestamp (as the API writes it) in seconds since the epoch."""
    main, _, frac = ts.rstrip("Z").partition(".")
    t = datetime.datetime.strptime(main, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()
    return t + (float("0." + frac) if frac else 0.0)
