import { randomUUID } from "node:crypto";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Job as PBJob, JobJson } from "./gen/stint/v1/types_pb.js";
import type { Owner } from "./gen/stint/v1/worker_pb.js";
import { jobJson, jsonOf } from "./json.js";

/** The worker's side of a job, which the handler's calls go through. */
export interface JobHost {
  heartbeat(job: Job, progress: unknown, phase: string): Promise<void>;
  checkpoint(job: Job, state: unknown, opts: CheckpointOptions): Promise<void>;
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
  /** Fires when the handler should stop; signal.reason says why. */
  readonly signal: AbortSignal;
  /** resultPtr, when set, is recorded with the result (a URI of a large result stored elsewhere). */
  resultPtr = "";
  #host: JobHost;

  constructor(pb: PBJob, signal: AbortSignal, host: JobHost) {
    this.pb = pb;
    this.signal = signal;
    this.#host = host;
  }

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

  /** checkpoint saves state that the next attempt of this job starts from (lastCheckpoint). */
  checkpoint(state: unknown, opts: CheckpointOptions = {}): Promise<void> {
    return this.#host.checkpoint(this, state, opts);
  }
}
