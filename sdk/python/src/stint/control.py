"""What a handler raises to decide its job's outcome, and why its job was aborted."""
from __future__ import annotations



class RetryAfter(Exception):
    """Fail the attempt and retry after ``delay`` seconds (instead of the backoff)."""

    def __init__(self, delay: float, message: str = "retry later", code: str = "retry_after") -> None:
        super().__init__(message)
        self.delay = delay
        self.code = code


class Permanent(Exception):
    """Fail the job without retrying it."""

    def __init__(self, message: str, code: str = "permanent") -> None:
        super().__init__(message)
        self.code = code


class Halt(Exception):
    """End the job in state halted: stopped on purpose, neither failed nor retried."""


class DeadLetter(Exception):
    """Move the job to the dead-letter queue with a reason code (parse_error, policy_violation, ...)."""

    def __init__(self, reason_code: str, message: str) -> None:
        super().__init__(message)
        self.reason_code = reason_code


class AbortReason(Exception):
    """Why a running job was aborted (``job.aborted`` is set, ``job.abort_reason`` says why)."""


class CancelRequested(AbortReason):
    """A client asked to cancel the job: return or raise; the worker acknowledges the cancel."""

    def __init__(self) -> None:
        super().__init__("a cancel was requested")


class LeaseLost(AbortReason):
    """The worker lost the job's lease: nothing this attempt reports is accepted any more."""

    def __init__(self, why: str) -> None:
        super().__init__("the lease was lost: " + why)


class TimeoutExceeded(AbortReason):
    """The attempt ran past the job's timeout: it fails (class timeout) and is retried while attempts remain."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the attempt ran past its timeout of {seconds:g}s")


class DeadlinePassed(AbortReason):
    """The job's deadline passed: the job ends timed out."""

    def __init__(self) -> None:
        super().__init__("the job's deadline passed")


class Shutdown(AbortReason):
    """The worker is shutting down and its grace period is over; a handler that then raises has its job requeued, no attempt spent."""

    def __init__(self) -> None:
        super().__init__("the worker is shutting down")


