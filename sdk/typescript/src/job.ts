import { randomUUID } from "node:crypto";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Job as PBJob, JobJson, SpecJson } from "./gen/stint/v1/types_pb.js";
import type { Owner } from "./gen/stint/v1/worker_pb.js";
import { jobJson, jsonOf } from "./json.js";
import { type ChildOutcome, type StepHost, type StepOptions, Steps } from "./steps.js";

/** The worker's side of a job, which the handler's calls go through. */
export interface JobHost {
  heartbeat(job: Job, progress: unknown, phase: string): Promise<void>;
  checkpoint(job: Job, state: unknown, opts: CheckpointOptions): Promise<void>;
  steps: StepHost;
}

/** CheckpointOptions go with a checkpoint: usage to add and progress to show. */
export interface CheckpointOptions {
  /** steps and cost add to the job's usage, checked against its budget. */
  steps?: number;
  cost?: number;
  progress?: unknown;
  phase?: string;
}

/**
 * Job is what a handler gets: the claimed job, its fencing token, and an
 * AbortSignal that fires (with a CancelRequested, LeaseLost,
 * TimeoutExceeded, DeadlinePassed or Shutdown reason) when the work should
 * stop.
 */
export class Job {
  /** The job as claimed, in its protobuf form. */
  readonly pb: PBJob;
  /** resultPtr, when set, is recorded with the result (a URI of a large result stored elsewhere). */
  resultPtr = "";
  /** When the claim's reply arrived, by performance.now(): the record's updatedAt is the store's time of it. */
  readonly claimedAt = performance.now();
  #abort: { readonly signal: AbortSignal };
  #host: JobHost;
  #steps: Steps | undefined;

  /** abort is what makes the signal (an AbortController, or the worker's lazy one). */
  constructor(pb: PBJob, abort: { readonly signal: AbortSignal }, host: JobHost) {
    this.pb = pb;
    this.#abort = abort;
    this.#host = host;
  }

  /** Fires when the handler should stop; signal.reason says why. */
  get signal(): AbortSignal { return this.#abort.signal; }

  /** updatedAt is the store's time of the claim. */
  get updatedAt() { return this.pb.updatedAt; }

  get id(): string { return this.pb.id; }
  get kind(): string { return this.pb.kind; }
  get queue(): string { return this.pb.queue; }
  /** attempt counts from 1. */
  get attempt(): number { return this.pb.attempt; }
  get maxAttempts(): number { return this.pb.maxAttempts; }
  /** leaseId is the fencing token every report of this attempt presents. */
  get leaseId(): string { return this.pb.leaseId; }
  /** payload is the job's JSON payload (an object; {} when none was given). */
  get payload(): any {
    return this.pb.payload ?? {};
  }
  /** lastCheckpoint is the state the previous attempt saved, or undefined. */
  get lastCheckpoint(): any { return jsonOf(this.pb.checkpoint); }
  /** deadline of the whole job, if it has one. */
  get deadline(): Date | undefined { return this.pb.deadline ? new Date(timestampMs(this.pb.deadline)) : undefined; }
  /** record is the job in the API's JSON form. */
  record(): JobJson { return jobJson(this.pb); }

  /** owner is the Owner of a new report: the job, its lease, a fresh request id. */
  owner(requestId: string = randomUUID()): Owner {
    return { $typeName: "stint.v1.Owner", jobId: this.pb.id, leaseId: this.pb.leaseId, requestId };
  }

  /** progress records progress (any JSON value) and an optional phase, with a heartbeat. */
  progress(value: unknown, phase = ""): Promise<void> {
    return this.#host.heartbeat(this, value, phase);
  }

  // Durable steps (docs/steps.md).

  #stepState(): Steps {
    return (this.#steps ??= new Steps(this.#host.steps, this));
  }

  /**
   * step runs fn at most once to success for this job, across attempts, and
   * returns its result. The result (JSON) is recorded, fenced by the lease,
   * before step resolves; on a later attempt step returns the recorded
   * result without calling fn. Steps are ordered: every attempt must ask
   * for the same names in the same order (else the job fails with the code
   * nondeterministic).
   */
  step<T>(name: string, fn: () => T | Promise<T>, opts: StepOptions = {}): Promise<T> {
    return this.#stepState().run(name, fn, opts);
  }

  /**
   * sleep sleeps durably: the first time it records the sleep, gives the
   * lease back and throws Suspended (let it propagate); the job is woken ms
   * after that record, by the server's clock, and the call then resolves (a
   * worker restart in between changes nothing). It costs no attempt.
   */
  sleep(name: string, ms: number): Promise<void> {
    return this.#stepState().sleep(name, ms);
  }

  /** sleepUntil sleeps durably until a time (by the server's clock), as sleep does. */
  sleepUntil(name: string, at: Date): Promise<void> {
    return this.#stepState().sleepUntil(name, at);
  }

  /**
   * waitSignal waits durably, up to timeoutMs, for the signal name
   * (Client.signal, `stint jobs signal`): { received: true, payload } when
   * it came (one sent before the wait counts; the first of a name wins),
   * { received: false } when the timeout passed first. While it waits the
   * job holds no lease: it throws Suspended (let it propagate) and the job
   * replays to here when woken.
   */
  waitSignal(name: string, timeoutMs: number): Promise<{ received: boolean; payload?: unknown }> {
    return this.#stepState().waitSignal(name, timeoutMs);
  }

  /**
   * startChild enqueues spec (as Client.enqueue takes it) as a child job,
   * once, as the step name, and returns its id (the same one on every
   * replay). Its parentJobId is this job and its stepIndex the step's
   * place; the child and the step's record are written in one call fenced
   * by the lease (WorkerService/StartChild), so a worker token may call it.
   */
  startChild(name: string, spec: SpecJson): Promise<string> {
    return this.#stepState().startChild(name, spec);
  }

  /**
   * awaitChild waits durably, as the step name, for the child childId (one
   * this job started) to end, and returns how it ended. While it waits the
   * job holds no lease: it throws Suspended (let it propagate); the child's
   * end wakes the job, and pollMs bounds each wait.
   */
  awaitChild(name: string, childId: string, pollMs = 3_600_000): Promise<ChildOutcome> {
    return this.#stepState().awaitChild(name, childId, pollMs);
  }

  /** checkpoint saves state that the next attempt of this job starts from (lastCheckpoint). */
  checkpoint(state: unknown, opts: CheckpointOptions = {}): Promise<void> {
    return this.#host.checkpoint(this, state, opts);
  }
}
