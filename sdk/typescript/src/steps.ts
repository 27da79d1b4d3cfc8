import { create, fromJson } from "@bufbuild/protobuf";
import { type Timestamp, TimestampSchema } from "@bufbuild/protobuf/wkt";
import type { Client as RPCClient } from "@connectrpc/connect";
import { randomUUID } from "node:crypto";
import { Permanent } from "./control.js";
import { InvalidTransitionError, RevisionConflictError, StaleLeaseError, StintError, ValidationError, WaitOverError } from "./errors.js";
import type { Step } from "./gen/stint/v1/steps_pb.js";
import { ErrorClass, type Job, JobState, type SpecJson, SpecSchema } from "./gen/stint/v1/types_pb.js";
import type { Owner, WorkerService } from "./gen/stint/v1/worker_pb.js";
import type { Sender } from "./sender.js";

/** What the step engine needs from the worker running the attempt. */
export interface StepHost {
  rpc: RPCClient<typeof WorkerService>;
  send: Sender;
  /** suspended tells the worker that the job gave its lease back: it reports nothing more for the attempt. */
  suspended(jobId: string): void;
}

/** What the step engine needs from the job. */
export interface StepJob {
  readonly id: string;
  readonly signal: AbortSignal;
  owner(requestId?: string): Owner;
  /** The store's time of the claim (the record's updatedAt). */
  readonly updatedAt: Timestamp | undefined;
  /** When the claim's reply arrived, by performance.now(). */
  readonly claimedAt: number;
}

/**
 * Suspended is thrown by a durable sleep or wait that gave the job's lease
 * back: let it propagate (rethrow it). The worker reports nothing more for
 * the attempt; the job is woken at its wake time (or by the signal it
 * waits for) and replays its recorded steps.
 */
export class Suspended extends Error {
  readonly until: Date;
  constructor(until: Date) {
    super(`the job is suspended until ${until.toISOString()}; return from the handler`);
    this.name = "Suspended";
    this.until = until;
  }
}

/** Nondeterministic: the handler asked for a step that differs from the one recorded at that place; the job fails permanently. */
export class Nondeterministic extends Permanent {
  constructor(message: string) {
    super(message, { code: "nondeterministic" });
    this.name = "Nondeterministic";
  }
}

/** StepFailed is the recorded error of a step run with onError "continue": thrown by the step now and on every replay. */
export class StepFailed extends Error {
  readonly step: string;
  readonly code: string;
  constructor(step: string, code: string, message: string) {
    super(`step ${JSON.stringify(step)} failed: ${code}: ${message}`);
    this.name = "StepFailed";
    this.step = step;
    this.code = code;
  }
}

/** SaveFailed: a step's record could not be saved; the attempt fails with the code checkpoint_save_failed and is retried. */
export class SaveFailed extends Error {
  readonly code = "checkpoint_save_failed";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "SaveFailed";
  }
}

/** StepOptions tune one step. */
export interface StepOptions {
  /**
   * "abort" (the default) fails the attempt with the function's error, and
   * the step runs again next attempt; "continue" records the error as the
   * step's result, thrown as StepFailed now and on every replay.
   */
  onError?: "abort" | "continue";
}

/** ChildOutcome is how an awaited child job ended, as Go's engine records it. */
export interface ChildOutcome {
  job_id: string;
  /** state as the lifecycle names it: "succeeded", "failed", "cancelled", "dead_lettered"... */
  state: string;
  result?: unknown;
  error?: { code: string; message: string; class?: string; attempt?: number };
  reason?: string;
}

/** terminal are the states a job ends in, as the lifecycle names them. */
const terminal = new Set(["succeeded", "failed", "cancelled", "timed_out", "halted", "dead_lettered", "denied"]);

/** outcome is an await step's output, as Go's engine writes it: the child's result JSON text goes in byte for byte. */
function outcome(c: Job, result: string): string {
  let out = `{"job_id":${JSON.stringify(c.id)},"state":${JSON.stringify(JobState[c.state].toLowerCase())}`;
  if (result) out += `,"result":${result}`;
  if (c.error) {
    const e: ChildOutcome["error"] = { code: c.error.code, message: c.error.message };
    if (c.error.class !== ErrorClass.UNSPECIFIED) e.class = ErrorClass[c.error.class].toLowerCase();
    if (c.error.attempt) e.attempt = c.error.attempt;
    out += `,"error":${JSON.stringify(e)}`;
  }
  if (c.reason) out += `,"reason":${JSON.stringify(c.reason)}`;
  return out + "}";
}

const billion = 1_000_000_000n;

function nsOf(t: Timestamp | undefined): bigint {
  return t ? t.seconds * billion + BigInt(t.nanos) : 0n;
}

function timestampOf(ns: bigint): Timestamp {
  return create(TimestampSchema, { seconds: ns / billion, nanos: Number(ns % billion) });
}

function dateOf(ns: bigint): Date {
  return new Date(Number(ns / 1_000_000n));
}

/** timer is a sleep or wait's recorded output, as Go's engine writes it (for_ms left out when zero). */
function timer(ms: number): string {
  const n = Math.floor(ms);
  return n > 0 ? JSON.stringify({ for_ms: n }) : "{}";
}

/** Steps is the step state of one attempt: the recorded steps (read at the first step) and the place of the next one. */
export class Steps {
  #recorded: Promise<Step[]> | undefined;
  #next = 1;

  constructor(
    private readonly host: StepHost,
    private readonly job: StepJob,
  ) {}

  /** take claims the next place for a step of name and kind: its record on a replay, else undefined. */
  async take(name: string, kind: string): Promise<[number, Step | undefined]> {
    if (!name) throw new TypeError("stint: a step needs a name");
    const seq = this.#next++;
    this.#recorded ??= this.host.send("steps", () => this.host.rpc.getSteps({ owner: this.job.owner() })).then(
      (r) => r.steps,
      (err) => {
        if (err instanceof StaleLeaseError || err instanceof InvalidTransitionError) throw err;
        throw new SaveFailed(`read the job's recorded steps: ${(err as Error).message}`, { cause: err });
      },
    );
    const recorded = await this.#recorded;
    if (seq > recorded.length) return [seq, undefined];
    const rec = recorded[seq - 1];
    if (rec.name !== name || (rec.kind || "run") !== kind) {
      throw new Nondeterministic(`step ${seq} is ${rec.kind} ${JSON.stringify(rec.name)} in the job's record, but the handler now asks for ${kind} ${JSON.stringify(name)} there; ` +
        "handlers must ask for the same steps in the same order on every attempt (docs/steps.md)");
    }
    return [seq, rec];
  }

  /** record records a step, fenced on the lease; its retries keep one request id, so a lost reply records nothing twice. */
  async record(seq: number, name: string, kind: string, output: string, durationMs = 0, error?: { code: string; message: string }): Promise<Step> {
    const owner = this.job.owner(randomUUID());
    const req = { owner, seq, name, kind, output: error ? "" : output, durationMs: BigInt(Math.max(0, Math.round(durationMs))),
      status: error ? "error" : "ok", errorCode: error?.code ?? "", errorMessage: error?.message ?? "" };
    try {
      const res = await this.host.send("step", () => this.host.rpc.recordStep(req));
      return res.step!;
    } catch (err) {
      if (err instanceof StaleLeaseError || err instanceof RevisionConflictError || err instanceof InvalidTransitionError) throw err;
      // Too large, say: it will not fit next time either.
      if (err instanceof ValidationError) throw new Permanent(`step ${seq} ${JSON.stringify(name)}: ${err.message}`, { code: "checkpoint_save_failed", cause: err });
      if (err instanceof StintError) throw new SaveFailed(`step ${seq} ${JSON.stringify(name)}: ${err.message}`, { cause: err });
      throw err;
    }
  }

  async run<T>(name: string, fn: () => T | Promise<T>, opts: StepOptions = {}): Promise<T> {
    let [seq, rec] = await this.take(name, "run");
    if (!rec) {
      this.job.signal.throwIfAborted();
      const began = performance.now();
      let value: T | undefined;
      let failed = false;
      let failure: unknown;
      try {
        value = await fn();
      } catch (err) {
        failed = true;
        failure = err;
      }
      if (!failed) {
        rec = await this.record(seq, name, "run", JSON.stringify(value ?? null), performance.now() - began);
      } else {
        if (opts.onError !== "continue" || this.job.signal.aborted) throw failure;
        const code = (failure as { code?: unknown })?.code;
        rec = await this.record(seq, name, "run", "", performance.now() - began, {
          code: typeof code === "string" && /^[a-z][a-z0-9_.-]{0,63}$/.test(code) ? code : "error",
          message: failure instanceof Error ? failure.message : String(failure) });
      }
    }
    if (rec.status === "error") throw new StepFailed(name, rec.error?.code ?? "error", rec.error?.message ?? "");
    return (rec.output ? JSON.parse(rec.output) : null) as T;
  }

  /** storeNowNs estimates the store's clock: its time of this attempt's claim plus what passed here since. */
  storeNowNs(): bigint {
    return nsOf(this.job.updatedAt) + BigInt(Math.floor((performance.now() - this.job.claimedAt) * 1e6));
  }

  /** timerStep records (or replays) a sleep or wait's timer and returns its end, in ns since the epoch. */
  async timerStep(name: string, kind: string, output: string): Promise<bigint> {
    let [seq, rec] = await this.take(name, kind);
    if (!rec) {
      this.job.signal.throwIfAborted();
      rec = await this.record(seq, name, kind, output);
    }
    const t = JSON.parse(rec.output || "{}") as { for_ms?: number; until?: string };
    if (t.until) return BigInt(Date.parse(t.until)) * 1_000_000n;
    return nsOf(rec.recordedAt) + BigInt(t.for_ms ?? 0) * 1_000_000n;
  }

  /** suspend gives the lease back until untilNs (or the signal, or the child's end) and throws Suspended. */
  async suspend(untilNs: bigint, signal = "", child = ""): Promise<never> {
    const owner = this.job.owner(randomUUID());
    await this.host.send("suspend", () => this.host.rpc.suspend({ owner, until: timestampOf(untilNs), signal, child }));
    this.host.suspended(this.job.id);
    throw new Suspended(dateOf(untilNs));
  }

  async sleep(name: string, ms: number): Promise<void> {
    const until = await this.timerStep(name, "sleep", timer(ms));
    if (this.storeNowNs() < until) await this.suspend(until);
  }

  async sleepUntil(name: string, at: Date): Promise<void> {
    const until = await this.timerStep(name, "sleep", JSON.stringify({ until: at.toISOString() }));
    if (this.storeNowNs() < until) await this.suspend(until);
  }

  async waitSignal(name: string, timeoutMs: number): Promise<{ received: boolean; payload?: unknown }> {
    const until = await this.timerStep(name, "wait", timer(timeoutMs));
    let [seq, rec] = await this.take(name, "signal");
    while (!rec) {
      const res = await this.host.send("signal", () => this.host.rpc.getSignal({ owner: this.job.owner(), name }));
      if (res.found || this.storeNowNs() >= until) {
        const payload = res.signal?.payload ?? "";
        // The payload's JSON text goes into the record byte for byte.
        const out = res.found && payload ? `{"received":true,"payload":${payload}}` : JSON.stringify({ received: res.found });
        rec = await this.record(seq, name, "signal", out);
        break;
      }
      try {
        await this.suspend(until, name);
      } catch (err) {
        if (!(err instanceof WaitOverError)) throw err; // the signal came meanwhile: read it
      }
    }
    const o = JSON.parse(rec.output || "{}") as { received?: boolean; payload?: unknown };
    return o.received ? { received: true, payload: o.payload } : { received: false };
  }

  async startChild(name: string, spec: SpecJson): Promise<string> {
    let [seq, rec] = await this.take(name, "child");
    if (!rec) {
      this.job.signal.throwIfAborted();
      const job = fromJson(SpecSchema, spec as never);
      // The child and its record in one call, fenced on the lease; one request id for its retries.
      const owner = this.job.owner(randomUUID());
      try {
        const res = await this.host.send("child", () => this.host.rpc.startChild({ owner, seq, name, job }));
        rec = res.step!;
      } catch (err) {
        // No longer this attempt's job; or a bad spec, the handler's to fix.
        if (err instanceof StaleLeaseError || err instanceof RevisionConflictError || err instanceof InvalidTransitionError || err instanceof ValidationError) throw err;
        if (err instanceof StintError) throw new SaveFailed(`step ${seq} ${JSON.stringify(name)}: ${err.message}`, { cause: err });
        throw err;
      }
    }
    const out = JSON.parse(rec.output || "{}") as { job_id?: string };
    if (!out.job_id) throw new Nondeterministic(`step ${seq} ${JSON.stringify(name)} holds no child job`);
    return out.job_id;
  }

  async awaitChild(name: string, childId: string, pollMs: number): Promise<ChildOutcome> {
    let [seq, rec] = await this.take(name, "await");
    while (!rec) {
      const res = await this.host.send("child", () => this.host.rpc.getChild({ owner: this.job.owner(), childId }));
      if (res.child && terminal.has(JobState[res.child.state].toLowerCase())) {
        rec = await this.record(seq, name, "await", outcome(res.child, res.result));
        break;
      }
      try {
        await this.suspend(this.storeNowNs() + BigInt(Math.floor(pollMs)) * 1_000_000n, "", childId);
      } catch (err) {
        if (!(err instanceof WaitOverError)) throw err; // the child ended meanwhile: read it
      }
    }
    return JSON.parse(rec.output || "{}") as ChildOutcome;
  }
}
