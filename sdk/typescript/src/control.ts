/**
 * What a handler throws to decide its job's outcome, and the reasons its
 * AbortSignal fires with.
 */

/** RetryAfter fails the attempt and schedules the retry after delayMs (instead of the backoff). */
export class RetryAfter extends Error {
  readonly delayMs: number;
  readonly code: string;
  constructor(delayMs: number, message = "retry later", options?: { code?: string; cause?: unknown }) {
    super(message, { cause: options?.cause });
    this.name = "RetryAfter";
    this.delayMs = delayMs;
    this.code = options?.code ?? "retry_after";
  }
}

/** Permanent fails the job without retrying it. */
export class Permanent extends Error {
  readonly code: string;
  constructor(message: string, options?: { code?: string; cause?: unknown }) {
    super(message, { cause: options?.cause });
    this.name = "Permanent";
    this.code = options?.code ?? "permanent";
  }
}

/** Halt ends the job in state halted: stopped on purpose, neither failed nor retried. */
export class Halt extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "Halt";
  }
}

/** DeadLetter moves the job to the dead-letter queue with a reason code (parse_error, policy_violation, ...). */
export class DeadLetter extends Error {
  readonly reasonCode: string;
  constructor(reasonCode: string, message: string) {
    super(message);
    this.name = "DeadLetter";
    this.reasonCode = reasonCode;
  }
}

/** The reason a job's AbortSignal fired. */
export class AbortReason extends Error {}
/** A client asked to cancel the job: stop and return (or throw); the worker acknowledges the cancel. */
export class CancelRequested extends AbortReason {
  constructor() {
    super("a cancel was requested");
    this.name = "CancelRequested";
  }
}
/** The worker lost the job's lease: another worker may run it now, and nothing this attempt reports is accepted. */
export class LeaseLost extends AbortReason {
  constructor(why: string) {
    super("the lease was lost: " + why);
    this.name = "LeaseLost";
  }
}
/** The attempt ran past the job's timeout: it fails (class timeout) and is retried while attempts remain. */
export class TimeoutExceeded extends AbortReason {
  constructor(ms: number) {
    super(`the attempt ran past its timeout of ${ms}ms`);
    this.name = "TimeoutExceeded";
  }
}
/** The job's deadline passed: the job ends timed out. */
export class DeadlinePassed extends AbortReason {
  constructor() {
    super("the job's deadline passed");
    this.name = "DeadlinePassed";
  }
}
/** The worker is shutting down and its grace period is over: a handler that then throws has its job requeued, no attempt spent. */
export class Shutdown extends AbortReason {
  constructor() {
    super("the worker is shutting down");
    this.name = "Shutdown";
  }
}
