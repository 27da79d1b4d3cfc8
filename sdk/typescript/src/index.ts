/**
 * stint for TypeScript: a Client that enqueues and inspects jobs, and a
 * Worker that runs them, over a stint server's API (Connect protocol).
 */
export { Client, type EnqueueResult, type JobPage, type ListFilter, type RunPage } from "./client.js";
export { Worker, type Handler, type Logger, type Outcome, type WorkerOptions } from "./worker.js";
export { Job, type CheckpointOptions } from "./job.js";
export { type ChildOutcome, Nondeterministic, SaveFailed, StepFailed, Suspended, type StepOptions } from "./steps.js";
export type { ConnectOptions } from "./transport.js";
export * from "./control.js";
export * from "./errors.js";
export type { JsonObject, JsonValue } from "./json.js";
export type { JobJson, SpecJson, EventJson, JobStateJson } from "./gen/stint/v1/types_pb.js";
export type { RunViewJson, RunJson, RunEventJson, CreateRunRequestJson } from "./gen/stint/v1/runs_pb.js";
export type { StepJson, SignalJson } from "./gen/stint/v1/steps_pb.js";
export * as pb from "./pb.js";
