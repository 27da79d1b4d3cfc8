"""Typed errors for the API's answers, as the Go and TypeScript SDKs map them."""
from __future__ import annotations

from typing import Dict, Optional, Type

#: The error metadata key naming the server's condition (stale_lease, ...).
ERROR_KIND_HEADER = "Stint-Error"


class StintError(Exception):
    """Every error the API answers with.

    ``code`` is the Connect code's name (``not_found``, ``failed_precondition``, ...);
    ``kind`` the store condition the server named (``stale_lease``, ``validation``, ...)
    or ``""``.
    """

    def __init__(self, message: str, code: str = "unknown", kind: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.kind = kind

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class ValidationError(StintError):
    """The request was invalid; nothing changed. Fix it rather than retry it."""


class NotFoundError(StintError):
    """No such job (or run) in the caller's tenant."""


class StaleLeaseError(StintError):
    """The lease (fencing token) is no longer the job's: another worker, or nobody, owns it now."""


class InvalidTransitionError(StintError):
    """The job's state does not allow the operation."""


class RevisionConflictError(StintError):
    """The job changed between read and write; read it again and retry."""


class RequestConflictError(StintError):
    """The request id was used before for a different request."""


class StepTooLargeError(ValidationError):
    """A step's recorded output (or a signal's payload) is over 256 KiB: record a reference to large data instead."""


class StepConflictError(RevisionConflictError):
    """Another attempt recorded a step at that place: the job is no longer this attempt's."""


class WaitOverError(InvalidTransitionError):
    """What a suspend would wait for (a signal) is already there: read it instead of waiting."""


class SignalTakenError(InvalidTransitionError):
    """A signal of that name was already sent to the job: the first one wins."""


class UnsupportedError(StintError):
    """The server or its store does not support the operation."""


class UnauthenticatedError(StintError):
    """The token is missing, unknown or revoked."""


class PermissionDeniedError(StintError):
    """The token's role may not call the service."""


class UnavailableError(StintError):
    """The server could not be reached or is unavailable: the call may be retried."""


_BY_KIND: Dict[str, Type[StintError]] = {
    "step_too_large": StepTooLargeError,
    "step_conflict": StepConflictError,
    "wait_over": WaitOverError,
    "signal_taken": SignalTakenError,
    "validation": ValidationError,
    "not_found": NotFoundError,
    "stale_lease": StaleLeaseError,
    "invalid_transition": InvalidTransitionError,
    "revision_conflict": RevisionConflictError,
    "request_conflict": RequestConflictError,
    "unsupported": UnsupportedError,
}

_BY_CODE: Dict[str, Type[StintError]] = {
    "invalid_argument": ValidationError,
    "not_found": NotFoundError,
    "already_exists": RequestConflictError,
    "aborted": RevisionConflictError,
    "unimplemented": UnsupportedError,
    "unauthenticated": UnauthenticatedError,
    "permission_denied": PermissionDeniedError,
    "unavailable": UnavailableError,
}

# Codes whose outcome is unknown: the call may have gone through.
_UNCERTAIN = {"unavailable", "unknown", "internal", "deadline_exceeded", "canceled"}


def new_error(message: str, code: str, kind: Optional[str] = "") -> StintError:
    """The StintError subclass of a code and kind (as CompleteMany reports them per item)."""
    cls = _BY_KIND.get(kind or "") or _BY_CODE.get(code) or StintError
    return cls(message, code, kind or "")


def is_rejection(err: BaseException) -> bool:
    """Whether the server decided: a call that is not worth retrying as it is."""
    return isinstance(err, StintError) and err.code not in _UNCERTAIN
