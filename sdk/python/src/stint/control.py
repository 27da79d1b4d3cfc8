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


class Suspended(Exception):
    """Raised by a durable sleep or wait that gave the job's lease back: let it propagate (re-raise it).

    The worker reports nothing more for the attempt; the job is woken at its
    wake time (or by the signal it waits for) and replays its recorded steps.
    """

    def __init__(self, until: str) -> None:
        super().__init__(f"the job is suspended until {until}; return from the handler")
        self.until = until


class Nondeterministic(Permanent):
    """The handler asked for a step that differs from the one recorded at that place: the job fails permanently."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "nondeterministic")


class StepFailed(Exception):
    """The recorded error of a step run with on_error="continue": raised by the step now and on every replay."""

    def __init__(self, step: str, code: str, message: str) -> None:
        super().__init__(f"step {step!r} failed: {code}: {message}")
        self.step = step
        self.code = code
        self.error_message = message


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


