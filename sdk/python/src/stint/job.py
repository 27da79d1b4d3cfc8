"""Job: what a handler gets."""
from __future__ import annotations

import threading
import time
import uuid
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple, TypeVar

from .control import AbortReason
from .steps import Steps

T = TypeVar("T")

if TYPE_CHECKING:
    from .worker import Worker


class Job:
    """The claimed job, its fencing token, and whether the work should stop.

    ``aborted`` is set (and ``abort_reason`` says why: CancelRequested, LeaseLost,
    TimeoutExceeded, DeadlinePassed or Shutdown) when the handler should return.
    A long handler checks it, waits on it (``job.sleep``), or calls
    ``raise_if_aborted()``.
    """

    def __init__(self, record: Dict[str, Any], worker: "Worker") -> None:
        self.record = record
        self.aborted = threading.Event()
        self.abort_reason: Optional[AbortReason] = None
        #: A URI of a large result stored elsewhere, recorded with the result.
        self.result_ptr = ""
        self._worker = worker
        self._lock = threading.Lock()
        #: When the claim's reply arrived (monotonic): the record's updatedAt is the store's time of it.
        self._claimed = time.monotonic()
        #: Set once a durable sleep or wait gave the lease back.
        self._suspended = False
        self._steps: Optional[Steps] = None

    @property
    def id(self) -> str:
        return self.record["id"]

    @property
    def kind(self) -> str:
        return self.record.get("kind", "")

    @property
    def queue(self) -> str:
        return self.record.get("queue", "")

    @property
    def attempt(self) -> int:
        """The attempt number, from 1."""
        return int(self.record.get("attempt", 0))

    @property
    def max_attempts(self) -> int:
        return int(self.record.get("maxAttempts", 0))

    @property
    def lease_id(self) -> str:
        """The fencing token every report of this attempt presents."""
        return self.record.get("leaseId", "")

    @property
    def payload(self) -> Dict[str, Any]:
        """The job's JSON payload ({} when none was given)."""
        return self.record.get("payload") or {}

    @property
    def last_checkpoint(self) -> Any:
        """The state the previous attempt saved with checkpoint(), or None."""
        return self.record.get("checkpoint")

    def owner(self, request_id: Optional[str] = None) -> Dict[str, str]:
        """The Owner of a report: the job, its lease, a request id (fresh by default)."""
        return {"jobId": self.id, "leaseId": self.lease_id, "requestId": request_id or str(uuid.uuid4())}

    def sleep(self, seconds: float) -> bool:
        """Waits; returns False at once when the job is aborted, True after seconds otherwise."""
        return not self.aborted.wait(seconds)

    def raise_if_aborted(self) -> None:
        """Raises the abort reason if the job was aborted."""
        if self.abort_reason is not None:
            raise self.abort_reason

    def progress(self, value: Any, phase: str = "") -> None:
        """Records progress (any JSON value) and an optional phase, with a heartbeat."""
        self._worker._heartbeat(self, value, phase)

    def checkpoint(self, state: Any, steps: int = 0, cost: int = 0, progress: Any = None, phase: str = "") -> None:
        """Saves state that the next attempt of this job starts from (last_checkpoint); steps and cost add to its usage."""
        self._worker._checkpoint(self, state, steps, cost, progress, phase)

    # -- durable steps (docs/steps.md) --

    def _step_state(self) -> Steps:
        with self._lock:
            if self._steps is None:
                self._steps = Steps(self)
            return self._steps

    def step(self, name: str, fn: Callable[[], T], on_error: str = "abort") -> T:
        """Runs fn at most once to success for this job, across attempts, and returns its result.

        The result (JSON) is recorded, fenced by the lease, before step returns; on
        a later attempt step returns the recorded result without calling fn. Steps
        are ordered: every attempt must ask for the same names in the same order
        (else the job fails with the code nondeterministic). on_error "abort" (the
        default) fails the attempt with fn's exception, and the step runs again next
        attempt; "continue" records the exception as the step's result, raised as
        StepFailed now and on every replay.
        """
        if on_error not in ("abort", "continue"):
            raise ValueError(f"stint: on_error {on_error!r}: expected 'abort' or 'continue'")
        return self._step_state().run(name, fn, on_error)

    def sleep_for(self, name: str, seconds: float) -> None:
        """Sleeps durably: the first time it records the sleep, gives the lease back and raises Suspended
        (let it propagate); the job is woken seconds after that record, by the server's clock, and this
        call then returns (a worker restart in between changes nothing). Costs no attempt."""
        self._step_state().sleep(name, seconds)

    def sleep_until(self, name: str, epoch_seconds: float) -> None:
        """Sleeps durably until a time (seconds since the epoch, by the server's clock), as sleep_for does."""
        self._step_state().sleep_until(name, epoch_seconds)

    def wait_signal(self, name: str, timeout: float) -> Tuple[bool, Any]:
        """Waits durably, up to timeout seconds, for the signal name (Client.signal, `stint jobs signal`).

        Returns (True, payload) when the signal came (one sent before the wait counts; the first of
        a name wins), (False, None) when the timeout passed first. While it waits the job holds no
        lease: the call raises Suspended (let it propagate) and the job replays to here when woken.
        """
        return self._step_state().wait_signal(name, timeout)

    def start_child(self, name: str, spec: Dict[str, Any]) -> str:
        """Enqueues spec (as Client.enqueue takes it) as a child job, once, as the step name, and returns its id
        (the same one on every replay). Its parentJobId is this job and its stepIndex the step's place; the
        child and the step's record are written in one call fenced by the lease (WorkerService/StartChild)."""
        return self._step_state().start_child(name, spec)

    def await_child(self, name: str, child_id: str, poll: float = 3600) -> Dict[str, Any]:
        """Waits durably, as the step name, for the child child_id (one this job started) to end, and returns
        how it ended: {"job_id", "state" ("succeeded", "failed"...), "result", "error", "reason"}. While it waits
        the job holds no lease: the call raises Suspended (let it propagate); the child's end wakes the job,
        and poll seconds bound each wait."""
        return self._step_state().await_child(name, child_id, poll)

    def _abort(self, reason: AbortReason) -> None:
        with self._lock:
            if self.abort_reason is None:
                self.abort_reason = reason
                self.aborted.set()
