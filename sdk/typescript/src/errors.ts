import { Code, ConnectError } from "@connectrpc/connect";

/** The error metadata key naming the server's condition (stale_lease, ...). */
export const ERROR_KIND_HEADER = "Stint-Error";

/**
 * StintError is every error the API answers with: its Connect code name
 * (not_found, failed_precondition, ...) and, when the server named one, the
 * store condition behind it (kind: validation, not_found, stale_lease,
 * invalid_transition, revision_conflict, request_conflict, unsupported).
 */
export class StintError extends Error {
  /** The Connect code's name, such as "failed_precondition". */
  readonly code: string;
  /** The store condition, such as "stale_lease"; empty when none was named. */
  readonly kind: string;
  constructor(message: string, code: string, kind: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.kind = kind;
  }
}

/** The request was invalid; nothing changed. Fix the request, do not retry it. */
export class ValidationError extends StintError {}
/** No such job (or run) in the caller's tenant. */
export class NotFoundError extends StintError {}
/** The lease (fencing token) is no longer the job's: another worker owns it now, or nobody does. */
export class StaleLeaseError extends StintError {}
/** The job's state does not allow the operation (for example completing a cancelled job). */
export class InvalidTransitionError extends StintError {}
/** The job changed between read and write; read it again and retry. */
export class RevisionConflictError extends StintError {}
/** The request id was used before for a different request. */
export class RequestConflictError extends StintError {}
/** A step's recorded output (or a signal's payload) is over 256 KiB: record a reference to large data instead. */
export class StepTooLargeError extends ValidationError {}
/** Another attempt recorded a step at that place: the job is no longer this attempt's. */
export class StepConflictError extends RevisionConflictError {}
/** What a suspend would wait for (a signal) is already there: read it instead of waiting. */
export class WaitOverError extends InvalidTransitionError {}
/** A signal of that name was already sent to the job: the first one wins. */
export class SignalTakenError extends InvalidTransitionError {}
/** The server or its store does not support the operation. */
export class UnsupportedError extends StintError {}
/** The token is missing, unknown or revoked. */
export class UnauthenticatedError extends StintError {}
/** The token's role may not call the service. */
export class PermissionDeniedError extends StintError {}
/** The server could not be reached or answered that it is unavailable: the call may be retried. */
export class UnavailableError extends StintError {}

const byKind: Record<string, new (m: string, c: string, k: string, o?: { cause?: unknown }) => StintError> = {
  step_too_large: StepTooLargeError,
  step_conflict: StepConflictError,
  wait_over: WaitOverError,
  signal_taken: SignalTakenError,
  validation: ValidationError,
  not_found: NotFoundError,
  stale_lease: StaleLeaseError,
  invalid_transition: InvalidTransitionError,
  revision_conflict: RevisionConflictError,
  request_conflict: RequestConflictError,
  unsupported: UnsupportedError,
};

const byCode: Partial<Record<Code, new (m: string, c: string, k: string, o?: { cause?: unknown }) => StintError>> = {
  [Code.InvalidArgument]: ValidationError,
  [Code.NotFound]: NotFoundError,
  [Code.AlreadyExists]: RequestConflictError,
  [Code.Aborted]: RevisionConflictError,
  [Code.Unimplemented]: UnsupportedError,
  [Code.Unauthenticated]: UnauthenticatedError,
  [Code.PermissionDenied]: PermissionDeniedError,
  [Code.Unavailable]: UnavailableError,
};

/** codeName turns a Connect code into its wire name (failed_precondition). */
export function codeName(code: Code): string {
  return Code[code].replace(/[A-Z]/g, (c, i) => (i ? "_" : "") + c.toLowerCase());
}

/** errorOf maps a Connect error's code and kind to the matching StintError; other values pass through. */
export function errorOf(err: unknown): unknown {
  if (err instanceof StintError) return err;
  if (!(err instanceof ConnectError)) return err;
  const kind = err.metadata.get(ERROR_KIND_HEADER) ?? "";
  return newError(err.rawMessage, codeName(err.code), kind, err);
}

/** newError builds the StintError of a code name and kind (as CompleteMany reports them per item). */
export function newError(message: string, code: string, kind: string, cause?: unknown): StintError {
  let ctor = byKind[kind];
  if (!ctor) {
    const c = (Object.values(Code) as unknown[]).find((v) => typeof v === "number" && codeName(v as Code) === code);
    ctor = (c !== undefined && byCode[c as Code]) || StintError;
  }
  return new ctor(message, code, kind, { cause });
}

/** isRejection says whether the server decided (the call is not worth retrying as is). */
export function isRejection(err: unknown): boolean {
  return err instanceof StintError && !(err instanceof UnavailableError) && err.code !== "unknown" && err.code !== "deadline_exceeded" && err.code !== "internal" && err.code !== "canceled";
}

/** call runs an API call and turns its Connect error into a StintError. */
export async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw errorOf(err);
  }
}
