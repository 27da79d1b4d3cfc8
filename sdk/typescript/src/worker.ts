import { create } from "@bufbuild/protobuf";
import { durationFromMs, durationMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { createClient, type Client as RPCClient } from "@connectrpc/connect";
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { LazyAbort } from "./abort.js";
import { Completer } from "./completer.js";
import { AbortReason, CancelRequested, DeadLetter, DeadlinePassed, Halt, LeaseLost, Permanent, RetryAfter, Shutdown, TimeoutExceeded } from "./control.js";
import { errorOf, InvalidTransitionError, newError, NotFoundError, StaleLeaseError, StintError } from "./errors.js";
import { ErrorClass, type Job as PBJob, type JobJson } from "./gen/stint/v1/types_pb.js";
import { BackoffSchema, CompleteRequestSchema, type HeartbeatManyResponse, HeartbeatRequestSchema, WorkerService } from "./gen/stint/v1/worker_pb.js";
import { Job, type CheckpointOptions, type JobHost } from "./job.js";
import { jobJson, valueOf } from "./json.js";
import { sender, type Sender } from "./sender.js";
import { Suspended } from "./steps.js";
import { type ConnectOptions, transportOf } from "./transport.js";

/** Handler runs one attempt of a job. What it returns (JSON) is the job's result; what it throws decides a retry. */
export type Handler = (job: Job) => unknown | Promise<unknown>;

/** Logger receives what the worker notices (rejected reports, unreachable server). */
export interface Logger {
  info(msg: string, ...args: unknown[]): void;
  warn(msg: string, ...args: unknown[]): void;
  error(msg: string, ...args: unknown[]): void;
}

/** Outcome tells how an attempt's report ended: op is complete, fail, halt, dead_letter, ack_cancel, release, suspend (a durable sleep or wait gave the lease back) or "" (lease lost). */
export interface Outcome {
  jobId: string;
  kind: string;
  op: string;
  /** The job as the server stored it, when the report was accepted (for op complete, only with the option completedJobs). */
  job?: JobJson;
  /** Why the report was refused (a StintError such as StaleLeaseError), or the abort reason when nothing was reported. */
  error?: unknown;
}

/** WorkerOptions configure a Worker; only url (and token) are required. */
export interface WorkerOptions extends ConnectOptions {
  /** Each queue worked and the most of its jobs that run at once. Defaults to { default: 10 }. */
  queues?: Record<string, number>;
  /** Names this worker in its leases (after the token's name). Defaults to hostname-pid-random. */
  workerId?: string;
  /** How long a claim lasts without a heartbeat; each running job heartbeats every third of it. Defaults to 60s. */
  leaseTtlMs?: number;
  /** How long one claim long-polls when nothing is ready (at most 60s). Defaults to 30s. */
  claimWaitMs?: number;
  /** How long stop() lets running handlers finish before aborting them with Shutdown. Defaults to 10s. */
  shutdownGraceMs?: number;
  /** The retry schedule of failed attempts; unset fields take the server's defaults (500ms doubling to 60s). */
  backoff?: { baseMs?: number; factor?: number; maxMs?: number };
  /** The most completions written in one call. Defaults to 1000. */
  completeBatch?: number;
  /**
   * Have the server send back each completed job as stored, for
   * Outcome.job of op complete. Defaults to false: a completion's answer
   * then holds no job, which spares the server encoding it and the worker
   * decoding it (the larger part of a no-op job's protobuf work).
   */
  completedJobs?: boolean;
  /** Defaults to warnings and errors on the console. */
  logger?: Logger;
  /** Called after each attempt's report (tests, metrics). */
  onOutcome?: (o: Outcome) => void;
}

const consoleLogger: Logger = { info() {}, warn: console.warn, error: console.error };
const maxMessage = 32 << 10;

/** One attempt, from its claim until its report is written. */
interface Attempt {
  job: Job;
  abort: LazyAbort;
  /** The timeout's and the deadline's, when the job has them. */
  timers: NodeJS.Timeout[] | undefined;
  leaseUntil: number;
  /** When the last heartbeat (or the claim) was sent. */
  lastBeat: number;
  lost: boolean;
  /** A durable sleep or wait gave the lease back: no heartbeats, no report. */
  suspended: boolean;
  done: Promise<void>;
}

/** One queue's claim loop and its slots. */
interface Queue {
  name: string;
  limit: number;
  running: number;
  wake?: () => void;
  abort: AbortController;
}

/**
 * Worker claims jobs from its queues and runs their kinds' handlers, with
 * heartbeats, cancellation, fencing and graceful shutdown: the guarantees
 * of Go's stint.Pool, over the server's API.
 */
export class Worker {
  readonly #opts: Required<Pick<WorkerOptions, "leaseTtlMs" | "claimWaitMs" | "shutdownGraceMs" | "completeBatch">> & WorkerOptions;
  readonly #handlers = new Map<string, Handler>();
  readonly #rpc: RPCClient<typeof WorkerService>;
  readonly #log: Logger;
  readonly #send: Sender;
  readonly #completer: Completer;
  readonly #running = new Map<string, Attempt>();
  readonly #workerId: string;
  /** Every queue's slots: the most completions that wait for a write while their slots are already free again. */
  readonly #slots: number;
  #ticker: NodeJS.Timeout | undefined;
  #queues: Queue[] = [];
  #loops: Promise<void>[] = [];
  #state: "new" | "running" | "stopping" | "stopped" = "new";
  #stopped?: Promise<void>;
  #notices = new AbortController();
  #host: JobHost;

  constructor(opts: WorkerOptions) {
    this.#opts = { leaseTtlMs: 60_000, claimWaitMs: 30_000, shutdownGraceMs: 10_000, completeBatch: 1000, ...opts };
    let slots = 0;
    for (const [q, n] of Object.entries(opts.queues ?? { default: 10 })) {
      if (!Number.isInteger(n) || n < 1) throw new TypeError(`stint: queue ${q}: concurrency ${n}: expected a whole number of at least 1`);
      slots += n;
    }
    this.#slots = slots;
    this.#rpc = createClient(WorkerService, transportOf(opts));
    this.#log = opts.logger ?? consoleLogger;
    this.#workerId = opts.workerId ?? `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
    this.#send = sender(this.#opts.leaseTtlMs, () => this.#state !== "running", (m, e) => this.#log.warn(m, e));
    this.#completer = new Completer(this.#rpc, this.#send, this.#opts.completeBatch, opts.completedJobs ?? false);
    this.#host = {
      heartbeat: (j, p, ph) => this.#heartbeat(j, p, ph), checkpoint: (j, s, o) => this.#checkpoint(j, s, o),
      steps: {
        rpc: this.#rpc, send: this.#send,
        suspended: (id) => {
          const a = this.#running.get(id);
          if (a) a.suspended = true;
        },
      },
    };
  }

  /** handle registers the handler of a kind; the worker claims only the kinds it has handlers for. */
  handle(kind: string, handler: Handler): this {
    if (this.#state !== "new") throw new Error("stint: register handlers before start()");
    this.#handlers.set(kind, handler);
    return this;
  }

  /** start begins claiming; it returns at once. */
  start(): void {
    if (this.#state !== "new") throw new Error("stint: a worker starts once");
    if (this.#handlers.size === 0) throw new Error("stint: no handlers: register one with handle(kind, fn) before start()");
    this.#state = "running";
    for (const [name, limit] of Object.entries(this.#opts.queues ?? { default: 10 })) {
      const q: Queue = { name, limit, running: 0, abort: new AbortController() };
      this.#queues.push(q);
      this.#loops.push(this.#claimLoop(q));
    }
    // One timer for every attempt's heartbeats, rather than one per job.
    this.#ticker = setInterval(() => this.#beat(), Math.max(5, Math.floor(this.#opts.leaseTtlMs / 6))).unref();
    void this.#listen();
  }

  /** run starts the worker and stops it gracefully at SIGINT or SIGTERM; it resolves once stopped. */
  async run(): Promise<void> {
    this.start();
    await new Promise<void>((resolve) => {
      const stop = () => {
        process.off("SIGINT", stop).off("SIGTERM", stop);
        resolve();
      };
      process.on("SIGINT", stop).on("SIGTERM", stop);
    });
    await this.stop();
  }

  /**
   * stop shuts down gracefully: no new claims; jobs claimed but not started
   * are released (requeued, no attempt spent); running handlers get
   * shutdownGraceMs to finish, then their signal aborts with Shutdown and a
   * handler that then throws has its job released the same way. It resolves
   * when every report is written. With timeoutMs, handlers still running
   * then are abandoned (their jobs released from under them).
   */
  stop(opts: { timeoutMs?: number } = {}): Promise<void> {
    this.#stopped ??= this.#stop(opts.timeoutMs);
    return this.#stopped;
  }

  async #stop(timeoutMs?: number): Promise<void> {
    const until = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
    if (this.#state === "new") {
      this.#state = "stopped";
      return;
    }
    this.#state = "stopping";
    for (const q of this.#queues) {
      q.abort.abort();
      q.wake?.();
    }
    await Promise.all(this.#loops);
    const all = () => Promise.all([...this.#running.values()].map((a) => a.done));
    if (this.#running.size > 0 && this.#opts.shutdownGraceMs > 0) {
      await Promise.race([all(), sleep(Math.min(this.#opts.shutdownGraceMs, until - Date.now()))]);
    }
    for (const a of this.#running.values()) a.abort.abort(new Shutdown());
    if (this.#running.size > 0) {
      if (until === Infinity) await all();
      else await Promise.race([all(), sleep(Math.max(0, until - Date.now()))]);
    }
    for (const a of [...this.#running.values()]) {
      // Handlers that never returned: give their jobs back from under them.
      a.lost = true;
      await this.#release(a, "the worker stopped before the handler returned").catch(() => {});
      this.#untrack(a);
    }
    await this.#completer.drain();
    clearInterval(this.#ticker);
    this.#notices.abort();
    this.#state = "stopped";
  }

  /** #claimLoop claims jobs of one queue while it has free slots, long-polling when none are ready. */
  async #claimLoop(q: Queue): Promise<void> {
    const kinds = [...this.#handlers.keys()];
    let requestId = randomUUID();
    let failures = 0;
    while (this.#state === "running") {
      if (q.running >= q.limit) {
        await new Promise<void>((r) => (q.wake = r));
        q.wake = undefined;
        continue;
      }
      const req = {
        queues: [q.name], kinds, limit: Math.min(q.limit - q.running, 1000), start: true, workerId: this.#workerId, requestId,
        leaseTtl: durationFromMs(this.#opts.leaseTtlMs), wait: durationFromMs(this.#opts.claimWaitMs),
      };
      let jobs: PBJob[];
      try {
        jobs = (await this.#rpc.claim(req, { signal: q.abort.signal })).jobs;
        failures = 0;
      } catch (e) {
        if (this.#state !== "running") {
          // The aborted claim may have leased jobs: the same request id
          // returns them, and they go back unstarted.
          jobs = await this.#send("claim", () => this.#rpc.claim({ ...req, wait: undefined })).then((r) => r.jobs, () => []);
        } else {
          const err = errorOf(e);
          failures++;
          this.#log.warn(`stint: claim from queue ${q.name} failed; retrying`, err);
          if (err instanceof StintError && err.code !== "unavailable" && err.code !== "unknown") requestId = randomUUID();
          await sleep(Math.min(50 * 2 ** failures, 5000));
          continue;
        }
      }
      requestId = randomUUID();
      for (const pb of jobs) {
        if (this.#state === "running") this.#run(q, pb);
        else await this.#send("release", () => this.#rpc.release({ owner: ownerOf(pb), reason: "the worker is shutting down", requeue: true })).catch((err) => this.#log.warn("stint: could not release an unstarted job", pb.id, err));
      }
    }
  }

  /** #listen follows the server's notices, so a cancel reaches a handler at once rather than at its next heartbeat. */
  async #listen(): Promise<void> {
    for (let delay = 100; this.#state === "running" || this.#state === "stopping"; delay = Math.min(delay * 2, 5000)) {
      try {
        for await (const n of this.#rpc.notices({}, { signal: this.#notices.signal })) {
          delay = 100;
          const a = n.jobId ? this.#running.get(n.jobId) : undefined;
          if (a) void this.#heartbeat(a.job, undefined, "").catch(() => {});
        }
      } catch (err) {
        if (this.#notices.signal.aborted) return;
        this.#log.info("stint: notices stream ended; reconnecting", errorOf(err));
      }
      await sleep(delay, undefined, { signal: this.#notices.signal }).catch(() => {});
    }
  }

  #run(q: Queue, pb: PBJob): void {
    const abort = new LazyAbort();
    const now = Date.now();
    const a: Attempt = {
      job: new Job(pb, abort, this.#host), abort, timers: undefined, leaseUntil: now + this.#opts.leaseTtlMs, lastBeat: now,
      lost: false, suspended: false, done: Promise.resolve(),
    };
    q.running++;
    this.#running.set(pb.id, a);
    const timeoutMs = pb.timeout ? durationMs(pb.timeout) : 0;
    if (timeoutMs > 0) (a.timers ??= []).push(setTimeout(() => abort.abort(new TimeoutExceeded(timeoutMs)), timeoutMs));
    if (pb.deadline) (a.timers ??= []).push(setTimeout(() => abort.abort(new DeadlinePassed()), Math.max(0, timestampMs(pb.deadline) - now)));
    a.done = this.#attempt(q, a, this.#handlers.get(pb.kind)!, now);
  }

  /**
   * #attempt runs the handler and reports its outcome. The slot is free
   * again once the handler returned and its report is written, or, for a
   * completion, as soon as it is queued (as Go's pool does) while fewer
   * than all slots' worth wait: the attempt is still tracked, and
   * heartbeats, until the completion is written.
   */
  async #attempt(q: Queue, a: Attempt, handler: Handler, began: number): Promise<void> {
    let ok = false;
    let value: unknown;
    let err: unknown;
    try {
      value = await handler(a.job);
      ok = true;
    } catch (e) {
      err = e;
    }
    if (a.timers) for (const t of a.timers) clearTimeout(t);
    let freed = false;
    const free = () => {
      if (freed) return;
      freed = true;
      q.running--;
      q.wake?.();
    };
    try {
      await this.#settle(a, ok, value, err, Date.now() - began, free);
    } catch (e) {
      this.#log.error("stint: could not report a job's outcome; it is retried when its lease expires", a.job.id, e);
    }
    this.#untrack(a);
    free();
  }

  #untrack(a: Attempt): void {
    if (a.timers) for (const t of a.timers) clearTimeout(t);
    if (this.#running.get(a.job.id) === a) this.#running.delete(a.job.id); // not a later attempt of the same job
  }

  /**
   * #beat, every sixth of the lease, renews the lease of each attempt whose
   * last renewal was sent a third of the lease ago or more (so every third
   * to half of it), all in one HeartbeatMany call (per 1000), and gives up
   * the attempts whose lease passed unrenewed.
   */
  #beat(): void {
    const now = Date.now();
    const every = Math.max(10, Math.floor(this.#opts.leaseTtlMs / 3));
    const due: Attempt[] = [];
    for (const a of this.#running.values()) {
      if (a.suspended || a.lost) continue;
      if (now > a.leaseUntil) this.#lose(a, "it was not renewed before it expired");
      else if (now - a.lastBeat >= every) {
        a.lastBeat = now;
        due.push(a);
      }
    }
    for (let i = 0; i < due.length; i += 1000) void this.#heartbeatMany(due.slice(i, i + 1000), now);
  }

  async #heartbeatMany(due: Attempt[], sent: number): Promise<void> {
    const leaseTtl = durationFromMs(this.#opts.leaseTtlMs);
    // Each item keeps its request id across retries, as a lone heartbeat does.
    const heartbeats = due.map((a) => create(HeartbeatRequestSchema, { owner: a.job.owner(), leaseTtl }));
    let res: HeartbeatManyResponse;
    try {
      res = await this.#send("heartbeat", () => this.#rpc.heartbeatMany({ heartbeats }));
    } catch {
      return; // the next tick tries again; the lease check gives up the job if none gets through
    }
    due.forEach((a, i) => {
      const r = res.results[i];
      if (!r) return;
      if (r.errorCode) this.#refused(a, newError(r.errorMessage, r.errorCode, r.errorKind));
      else this.#renewed(a, sent, r.heartbeat?.cancelRequested ?? false);
    });
  }

  /** #renewed records a renewal sent at sent, and passes on a requested cancel. */
  #renewed(a: Attempt, sent: number, cancelRequested: boolean): void {
    a.leaseUntil = sent + this.#opts.leaseTtlMs;
    if (cancelRequested) a.abort.abort(new CancelRequested());
  }

  /** #refused gives up an attempt whose renewal was refused because the job is no longer its. */
  #refused(a: Attempt, err: unknown): void {
    if (err instanceof StaleLeaseError || err instanceof NotFoundError || err instanceof InvalidTransitionError) this.#lose(a, (err as Error).message);
  }

  #lose(a: Attempt, why: string): void {
    a.lost = true;
    a.abort.abort(new LeaseLost(why));
  }

  /** #settle reports an attempt's outcome, decided as Go's pool decides it. */
  async #settle(a: Attempt, ok: boolean, value: unknown, err: unknown, executionMs: number, free: () => void): Promise<void> {
    const reason: unknown = a.abort.aborted ? a.abort.reason : undefined;
    // A durable sleep or wait gave the lease back: nothing more to report.
    if (a.suspended) return this.#outcome(a, "suspend", undefined, ok || err instanceof Suspended ? undefined : err);
    if (a.lost) return this.#outcome(a, "", undefined, reason);
    const ms = BigInt(executionMs);
    if (ok) {
      const req = create(CompleteRequestSchema, { owner: a.job.owner(), result: valueOf(value ?? null), resultPtr: a.job.resultPtr, executionMs: ms });
      const written = this.#completer.add(req);
      if (this.#completer.backlog <= this.#slots) free();
      const c = await written;
      return this.#outcome(a, "complete", c.job, c.error);
    }
    if (reason instanceof CancelRequested) return this.#ackCancel(a);
    if (reason instanceof Shutdown) return this.#release(a, reason.message);
    // Not requeued: the server's timeouts service ends it timed out (a job
    // requeued past its deadline would only be claimed and aborted again).
    if (reason instanceof DeadlinePassed) return this.#release(a, reason.message, false);
    if (reason instanceof TimeoutExceeded) return this.#fail(a, "timeout", `${reason.message}: ${messageOf(err)}`, ErrorClass.TIMEOUT, ms);
    if (reason instanceof AbortReason) return this.#outcome(a, "", undefined, reason);
    if (err instanceof RetryAfter) return this.#fail(a, err.code, err.message, ErrorClass.TRANSIENT, ms, err.delayMs);
    if (err instanceof Permanent) return this.#fail(a, err.code, err.message, ErrorClass.PERMANENT, ms);
    if (err instanceof Halt) return this.#ackIfCancelRequested(a, "halt", () => this.#rpc.halt({ owner: a.job.owner(), reasonCode: "halted", reason: err.message, executionMs: ms }));
    if (err instanceof DeadLetter) return this.#ackIfCancelRequested(a, "dead_letter", () => this.#rpc.deadLetter({ owner: a.job.owner(), reasonCode: err.reasonCode, errorCode: err.reasonCode, errorMessage: clip(err.message) }));
    const code = (err as { code?: unknown })?.code;
    return this.#fail(a, typeof code === "string" && /^[a-z][a-z0-9_.-]{0,63}$/.test(code) ? code : "error", messageOf(err), ErrorClass.UNSPECIFIED, ms);
  }

  async #fail(a: Attempt, code: string, message: string, cls: ErrorClass, executionMs: bigint, retryAfterMs?: number): Promise<void> {
    const b = this.#opts.backoff;
    const backoff = b && create(BackoffSchema, { base: b.baseMs === undefined ? undefined : durationFromMs(b.baseMs), factor: b.factor ?? 0, max: b.maxMs === undefined ? undefined : durationFromMs(b.maxMs) });
    const owner = a.job.owner();
    await this.#report(a, "fail", () => this.#rpc.fail({
      owner, errorCode: code, errorMessage: clip(message), errorClass: cls, executionMs, backoff,
      retryAfter: retryAfterMs && retryAfterMs > 0 ? durationFromMs(retryAfterMs) : undefined,
    }));
  }

  #ackCancel(a: Attempt): Promise<void> {
    const owner = a.job.owner();
    return this.#report(a, "ack_cancel", () => this.#rpc.ackCancel({ owner }));
  }

  /** #release requeues the job at once (no attempt spent); a job whose cancel was requested meanwhile is acknowledged instead. */
  #release(a: Attempt, reason: string, requeue = true): Promise<void> {
    const owner = a.job.owner();
    return this.#ackIfCancelRequested(a, "release", () => this.#rpc.release({ owner, reason, requeue }));
  }

  /** #ackIfCancelRequested acknowledges the cancel when a report was refused because a cancel was requested meanwhile. */
  async #ackIfCancelRequested(a: Attempt, op: string, fn: () => Promise<{ job?: PBJob }>): Promise<void> {
    try {
      const res = await this.#send(op, fn);
      this.#outcome(a, op, res.job, undefined);
    } catch (err) {
      if (err instanceof InvalidTransitionError && /cancel_requested/.test(err.message)) return this.#ackCancel(a);
      this.#outcome(a, op, undefined, err);
    }
  }

  async #report(a: Attempt, op: string, fn: () => Promise<{ job?: PBJob }>): Promise<void> {
    try {
      const res = await this.#send(op, fn);
      this.#outcome(a, op, res.job, undefined);
    } catch (err) {
      this.#outcome(a, op, undefined, err);
    }
  }

  #outcome(a: Attempt, op: string, pb: PBJob | undefined, err: unknown): void {
    if (err instanceof StaleLeaseError) this.#log.warn(`stint: ${op} of job ${a.job.id} was rejected: the job is no longer this worker's`, err.message);
    else if (err && op) this.#log.warn(`stint: ${op} of job ${a.job.id} was rejected`, err);
    const hook = this.#opts.onOutcome;
    if (!hook) return;
    let job: JobJson | undefined;
    // The JSON form costs a conversion: made only when the hook reads it.
    hook({ jobId: a.job.id, kind: a.job.kind, op, error: err, get job() { return (job ??= pb && jobJson(pb)); } });
  }

  async #heartbeat(job: Job, progress: unknown, phase: string): Promise<void> {
    const a = this.#running.get(job.id);
    const sent = Date.now();
    const owner = job.owner();
    try {
      const res = await this.#send("heartbeat", () => this.#rpc.heartbeat({ owner, leaseTtl: durationFromMs(this.#opts.leaseTtlMs), progress: valueOf(progress), phase }));
      if (a) this.#renewed(a, sent, res.cancelRequested);
    } catch (err) {
      if (a) this.#refused(a, err);
      throw err;
    }
  }

  async #checkpoint(job: Job, state: unknown, o: CheckpointOptions): Promise<void> {
    const owner = job.owner();
    const res = await this.#send("checkpoint", () => this.#rpc.checkpoint({
      owner, checkpoint: valueOf(state ?? null), progress: valueOf(o.progress), phase: o.phase ?? "", steps: BigInt(o.steps ?? 0), cost: BigInt(o.cost ?? 0),
    }));
    if (res.job?.checkpoint) job.pb.checkpoint = res.job.checkpoint;
  }
}

function ownerOf(pb: PBJob) {
  return { jobId: pb.id, leaseId: pb.leaseId, requestId: randomUUID() };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function clip(s: string): string {
  return s.length <= maxMessage ? s : s.slice(0, maxMessage) + "... (truncated)";
}
