"""Client: enqueue and inspect jobs and runs."""
from __future__ import annotations

import json
import uuid
from typing import Any, Dict, Iterator, List, Optional, Sequence

from .transport import Transport

Job = Dict[str, Any]
"""A job in the API's JSON form: camelCase fields, durations as "30s", timestamps
as RFC 3339 strings, states as "JOB_STATE_SUCCEEDED" (zero fields are left out)."""

Spec = Dict[str, Any]
"""A job spec in the API's JSON form: {"kind": ..., "queue": ..., "payload": {...},
"timeout": "30s", "runAt": "2030-01-01T00:00:00Z", "maxAttempts": 5, ...}.
Snake_case keys (max_attempts) are accepted too."""


class EnqueueResult:
    """An enqueued job and whether it already existed (same dedupe key or request id)."""

    __slots__ = ("job", "existing")

    def __init__(self, job: Job, existing: bool) -> None:
        self.job = job
        self.existing = existing

    def __repr__(self) -> str:
        return f"EnqueueResult(job={self.job.get('id')!r}, existing={self.existing})"


class Client:
    """Enqueues and inspects jobs and runs (a token of role client; admin for dead_letter_counts).

    Every error is a StintError (NotFoundError, ValidationError, ...).
    """

    def __init__(self, url: str, token: Optional[str] = None, transport: Optional[Transport] = None) -> None:
        self.transport = transport or Transport(url, token)

    def close(self) -> None:
        """Closes the calling thread's connection."""
        self.transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _call(self, method: str, body: Dict[str, Any]) -> Dict[str, Any]:
        return self.transport.call(method, {k: v for k, v in body.items() if v is not None})

    def enqueue(self, spec: Spec, request_id: Optional[str] = None) -> EnqueueResult:
        """Creates a job, or returns the live job its dedupe key matches.

        request_id (default: a fresh one) makes a retried call return the first call's job.
        """
        res = self._call("JobService/Enqueue", {"job": spec, "requestId": request_id or str(uuid.uuid4())})
        return EnqueueResult(res.get("job", {}), bool(res.get("existing")))

    def enqueue_many(self, specs: Sequence[Spec], request_id: Optional[str] = None) -> List[EnqueueResult]:
        """Creates jobs in one transaction: one invalid spec rejects them all."""
        res = self._call("JobService/EnqueueMany", {"jobs": list(specs), "requestId": request_id or str(uuid.uuid4())})
        return [EnqueueResult(r.get("job", {}), bool(r.get("existing"))) for r in res.get("results", [])]

    def get(self, job_id: str) -> Job:
        """Returns a job; NotFoundError when the caller's tenant has none with that id."""
        return self._call("JobService/GetJob", {"id": job_id}).get("job", {})

    def list(self, states: Optional[Sequence[str]] = None, queue: Optional[str] = None, kind: Optional[str] = None,
             page_size: Optional[int] = None, page_token: Optional[str] = None) -> Dict[str, Any]:
        """Returns one page of jobs in id order: {"jobs": [...], "nextPageToken": "..."} (empty on the last page)."""
        res = self._call("JobService/ListJobs", {"states": list(states) if states else None, "queue": queue, "kind": kind,
                                                 "pageSize": page_size, "pageToken": page_token})
        return {"jobs": res.get("jobs", []), "nextPageToken": res.get("nextPageToken", "")}

    def list_all(self, states: Optional[Sequence[str]] = None, queue: Optional[str] = None, kind: Optional[str] = None,
                 page_size: Optional[int] = None) -> Iterator[Job]:
        """Yields every job the filter selects, page by page."""
        token: Optional[str] = None
        while True:
            page = self.list(states, queue, kind, page_size, token)
            yield from page["jobs"]
            token = page["nextPageToken"]
            if not token:
                return

    def events(self, job_id: str) -> List[Dict[str, Any]]:
        """Returns a job's audit log in order."""
        return self._call("JobService/ListEvents", {"jobId": job_id}).get("events", [])

    def cancel(self, job_id: str, hard: bool = False, reason: str = "", request_id: Optional[str] = None) -> Job:
        """Cancels softly (a running job's handler is told and acknowledges) or, with hard, at once."""
        return self._call("JobService/CancelJob", {"id": job_id, "hard": hard, "reason": reason,
                                                   "requestId": request_id or str(uuid.uuid4())}).get("job", {})

    def dead_letters(self, queue: Optional[str] = None, kind: Optional[str] = None, page_size: Optional[int] = None,
                     page_token: Optional[str] = None) -> Dict[str, Any]:
        """Returns a page of the dead-lettered jobs."""
        return self.list(["JOB_STATE_DEAD_LETTERED"], queue, kind, page_size, page_token)

    def replay(self, job_id: str) -> Job:
        """Enqueues a new job that repeats a dead-lettered one, and returns it."""
        return self._call("JobService/ReplayJob", {"id": job_id}).get("job", {})

    def signal(self, job_id: str, name: str, payload: Any = None) -> Dict[str, Any]:
        """Sends the signal name (with a JSON payload) to a live job: the first of a name wins
        (SignalTakenError after it); a job waiting for it wakes. Returns the signal as kept."""
        body: Dict[str, Any] = {"id": job_id, "name": name}
        if payload is not None:
            body["payload"] = json.dumps(payload, separators=(",", ":"))
        return self._call("JobService/SignalJob", body).get("signal", {})

    def steps(self, job_id: str) -> List[Dict[str, Any]]:
        """A job's recorded steps in order (a halted job's partial result); each step's "output" is its
        result as JSON text (json.loads it)."""
        return self._call("JobService/ListSteps", {"id": job_id}).get("steps", [])

    def dead_letter_counts(self) -> List[Dict[str, Any]]:
        """Counts the tenant's dead-lettered jobs by reason code (an admin token)."""
        return self._call("AdminService/DeadLetters", {}).get("reasons", [])

    def create_run(self, jobs: Sequence[Dict[str, Any]], name: str = "", run_id: Optional[str] = None,
                   on_failure: Optional[str] = None, timeout: Optional[str] = None) -> Dict[str, Any]:
        """Creates a run: jobs ({"name", "job": spec, "dependsOn": [...]}) started as their dependencies finish."""
        return self._call("RunService/CreateRun", {"id": run_id, "name": name, "onFailure": on_failure,
                                                   "timeout": timeout, "jobs": list(jobs)}).get("run", {})

    def get_run(self, run_id: str) -> Dict[str, Any]:
        """Returns a run and its jobs: {"run": {...}, "jobs": [...]}."""
        return self._call("RunService/GetRun", {"id": run_id}).get("run", {})

    def list_runs(self, states: Optional[Sequence[str]] = None, page_size: Optional[int] = None,
                  page_token: Optional[str] = None) -> Dict[str, Any]:
        """Returns one page of runs: {"runs": [...], "nextPageToken": "..."}."""
        res = self._call("RunService/ListRuns", {"states": list(states) if states else None, "pageSize": page_size,
                                                 "pageToken": page_token})
        return {"runs": res.get("runs", []), "nextPageToken": res.get("nextPageToken", "")}

    def run_events(self, run_id: str) -> List[Dict[str, Any]]:
        """Returns a run's log in order."""
        return self._call("RunService/ListRunEvents", {"runId": run_id}).get("events", [])

    def cancel_run(self, run_id: str, reason: str = "") -> Dict[str, Any]:
        """Cancels a run and its unfinished jobs."""
        return self._call("RunService/CancelRun", {"id": run_id, "reason": reason}).get("run", {})

    def rerun_run(self, run_id: str, failed_only: bool = False) -> Dict[str, Any]:
        """Starts a new run repeating one (only its failed jobs, with failed_only)."""
        return self._call("RunService/RerunRun", {"id": run_id, "failedOnly": failed_only}).get("run", {})
