"""stint for Python: a Client that enqueues and inspects jobs, and a Worker that runs them,
over a stint server's API (the Connect protocol's JSON encoding; standard library only)."""
from .client import Client, EnqueueResult
from .control import (AbortReason, CancelRequested, DeadLetter, DeadlinePassed, Halt, LeaseLost, Nondeterministic,
                      Permanent, RetryAfter, Shutdown, StepFailed, Suspended, TimeoutExceeded)
from .errors import (InvalidTransitionError, NotFoundError, PermissionDeniedError, RequestConflictError,
                     RevisionConflictError, SignalTakenError, StaleLeaseError, StepConflictError, StepTooLargeError,
                     StintError, UnauthenticatedError, UnavailableError, UnsupportedError, ValidationError,
                     WaitOverError)
from .job import Job
from .transport import Transport
from .worker import Handler, Outcome, Worker

__version__ = "0.1.0"

__all__ = [
    "AbortReason", "CancelRequested", "Client", "DeadLetter", "DeadlinePassed", "EnqueueResult", "Halt", "Handler",
    "InvalidTransitionError", "Job", "LeaseLost", "Nondeterministic", "NotFoundError", "Outcome", "Permanent",
    "PermissionDeniedError", "RequestConflictError", "RetryAfter", "RevisionConflictError", "Shutdown", "SignalTakenError",
    "StaleLeaseError", "StepConflictError", "StepFailed", "StepTooLargeError", "StintError", "Suspended",
    "TimeoutExceeded", "Transport", "UnauthenticatedError", "UnavailableError", "UnsupportedError", "ValidationError",
    "WaitOverError", "Worker",
]
