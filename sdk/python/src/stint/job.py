"""Job: what a handler gets."""
from __future__ import annotations

import threading
import uuid
from typing import TYPE_CHECKING, Any, Dict, Optional

from .control import AbortReason

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

    def _abort(self, reason: AbortReason) -> None:
        with self._lock:
            if self.abort_reason is None:
                self.abort_reason = reason
                self.aborted.set()
