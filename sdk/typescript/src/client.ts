import { fromJson, toJson, type DescMessage, type MessageJsonType } from "@bufbuild/protobuf";
import { createClient, type Client as RPCClient } from "@connectrpc/connect";
import { randomUUID } from "node:crypto";
import { AdminService, type ReasonCountJson } from "./gen/stint/v1/admin_pb.js";
import { JobService, ListJobsRequestSchema } from "./gen/stint/v1/jobs_pb.js";
import {
  type CreateRunRequestJson,
  type ListRunsRequestJson,
  RunEventSchema,
  type RunEventJson,
  type RunJson,
  RunSchema,
  RunService,
  type RunViewJson,
  RunViewSchema,
} from "./gen/stint/v1/runs_pb.js";
import { CreateRunRequestSchema, ListRunsRequestSchema } from "./gen/stint/v1/runs_pb.js";
import { SignalSchema, type SignalJson, StepSchema, type StepJson } from "./gen/stint/v1/steps_pb.js";
import { EventSchema, type EventJson, type JobJson, type JobStateJson, type SpecJson, SpecSchema } from "./gen/stint/v1/types_pb.js";
import { WorkerService } from "./gen/stint/v1/worker_pb.js";
import { call } from "./errors.js";
import { jobJson } from "./json.js";
import { type ConnectOptions, transportOf } from "./transport.js";

/** EnqueueResult is an enqueued job, and whether it already existed (same dedupe key or request id). */
export interface EnqueueResult {
  job: JobJson;
  existing: boolean;
}

/** ListFilter selects jobs for list; every field is optional. */
export interface ListFilter {
  states?: JobStateJson[];
  queue?: string;
  kind?: string;
  /** 1 to 1000; defaults to 100. */
  pageSize?: number;
  /** The nextPageToken of the previous page. */
  pageToken?: string;
}

/** JobPage is one page of jobs; nextPageToken is empty on the last page. */
export interface JobPage {
  jobs: JobJson[];
  nextPageToken: string;
}

/** RunPage is one page of runs. */
export interface RunPage {
  runs: RunJson[];
  nextPageToken: string;
}

function each<D extends DescMessage>(schema: D, items: unknown[]): MessageJsonType<D>[] {
  return items.map((m) => toJson(schema, m as never) as MessageJsonType<D>);
}

/**
 * Client enqueues and inspects jobs and runs (a token of role client, or
 * admin for deadLetterCounts). Specs and jobs are in the API's JSON form:
 * camelCase fields, durations as "30s", timestamps as RFC 3339, states as
 * "JOB_STATE_SUCCEEDED". Every error is a StintError.
 */
export class Client {
  /** The generated service clients, for calls this class does not wrap. */
  readonly jobs: RPCClient<typeof JobService>;
  readonly runService: RPCClient<typeof RunService>;
  readonly admin: RPCClient<typeof AdminService>;
  readonly worker: RPCClient<typeof WorkerService>;

  constructor(opts: ConnectOptions) {
    const t = transportOf(opts);
    this.jobs = createClient(JobService, t);
    this.runService = createClient(RunService, t);
    this.admin = createClient(AdminService, t);
    this.worker = createClient(WorkerService, t);
  }

  /**
   * enqueue creates a job, or returns the live job its dedupe key matches.
   * requestId (default: a fresh one) makes a retried call return the first
   * call's job.
   */
  async enqueue(spec: SpecJson, opts: { requestId?: string } = {}): Promise<EnqueueResult> {
    const job = fromJson(SpecSchema, spec as never);
    const res = await call(() => this.jobs.enqueue({ job, requestId: opts.requestId ?? randomUUID() }));
    return { job: jobJson(res.job), existing: res.existing };
  }

  /** enqueueMany creates jobs in one transaction: one invalid spec rejects them all. */
  async enqueueMany(specs: SpecJson[], opts: { requestId?: string } = {}): Promise<EnqueueResult[]> {
    const jobs = specs.map((s) => fromJson(SpecSchema, s as never));
    const res = await call(() => this.jobs.enqueueMany({ jobs, requestId: opts.requestId ?? randomUUID() }));
    return res.results.map((r) => ({ job: jobJson(r.job), existing: r.existing }));
  }

  /** get returns a job; NotFoundError when the caller's tenant has none with that id. */
  async get(id: string): Promise<JobJson> {
    return jobJson((await call(() => this.jobs.getJob({ id }))).job);
  }

  /** list returns one page of jobs in id order. */
  async list(filter: ListFilter = {}): Promise<JobPage> {
    const res = await call(() =>
      this.jobs.listJobs(fromJson(ListJobsRequestSchema, JSON.parse(JSON.stringify(filter)))),
    );
    return { jobs: res.jobs.map(jobJson), nextPageToken: res.nextPageToken };
  }

  /** listAll yields every job the filter selects, page by page. */
  async *listAll(filter: Omit<ListFilter, "pageToken"> = {}): AsyncGenerator<JobJson> {
    let pageToken = "";
    do {
      const page = await this.list({ ...filter, pageToken });
      yield* page.jobs;
      pageToken = page.nextPageToken;
    } while (pageToken);
  }

  /** events returns a job's audit log in order. */
  async events(jobId: string): Promise<EventJson[]> {
    return each(EventSchema, (await call(() => this.jobs.listEvents({ jobId }))).events);
  }

  /** cancel cancels softly (a running job's handler is told and acknowledges) or, with hard, at once. */
  async cancel(id: string, opts: { hard?: boolean; reason?: string; requestId?: string } = {}): Promise<JobJson> {
    const res = await call(() => this.jobs.cancelJob({ id, hard: opts.hard ?? false, reason: opts.reason ?? "", requestId: opts.requestId ?? randomUUID() }));
    return jobJson(res.job);
  }

  /** deadLetters returns a page of the dead-lettered jobs (optionally of one queue or kind). */
  deadLetters(filter: Omit<ListFilter, "states"> = {}): Promise<JobPage> {
    return this.list({ ...filter, states: ["JOB_STATE_DEAD_LETTERED"] });
  }

  /** replay enqueues a new job that repeats a dead-lettered one, and returns it. */
  async replay(id: string): Promise<JobJson> {
    return jobJson((await call(() => this.jobs.replayJob({ id }))).job);
  }

  /**
   * signal sends the signal name (with a JSON payload) to a live job: the
   * first of a name wins (SignalTakenError after it); a job waiting for it
   * wakes. It returns the signal as kept.
   */
  async signal(id: string, name: string, payload?: unknown): Promise<SignalJson> {
    const res = await call(() => this.jobs.signalJob({ id, name, payload: payload === undefined ? "" : JSON.stringify(payload) }));
    return toJson(SignalSchema, res.signal!) as SignalJson;
  }

  /** steps returns a job's recorded steps in order (a halted job's partial result); each output is its result as JSON text. */
  async steps(id: string): Promise<StepJson[]> {
    return each(StepSchema, (await call(() => this.jobs.listSteps({ id }))).steps);
  }

  /** deadLetterCounts counts the tenant's dead-lettered jobs by reason code (an admin token). */
  async deadLetterCounts(): Promise<ReasonCountJson[]> {
    const res = await call(() => this.admin.deadLetters({}));
    return res.reasons.map((r) => ({ reasonCode: r.reasonCode, count: r.count.toString() }));
  }

  /** createRun creates a run: jobs with names and dependencies, started as their dependencies finish. */
  async createRun(req: CreateRunRequestJson): Promise<RunViewJson> {
    const res = await call(() => this.runService.createRun(fromJson(CreateRunRequestSchema, req as never)));
    return toJson(RunViewSchema, res.run!) as RunViewJson;
  }

  /** getRun returns a run and its jobs. */
  async getRun(id: string): Promise<RunViewJson> {
    const res = await call(() => this.runService.getRun({ id }));
    return toJson(RunViewSchema, res.run!) as RunViewJson;
  }

  /** listRuns returns one page of runs. */
  async listRuns(req: ListRunsRequestJson = {}): Promise<RunPage> {
    const res = await call(() => this.runService.listRuns(fromJson(ListRunsRequestSchema, req as never)));
    return { runs: each(RunSchema, res.runs), nextPageToken: res.nextPageToken };
  }

  /** runEvents returns a run's log in order. */
  async runEvents(runId: string): Promise<RunEventJson[]> {
    return each(RunEventSchema, (await call(() => this.runService.listRunEvents({ runId }))).events);
  }

  /** cancelRun cancels a run and its unfinished jobs. */
  async cancelRun(id: string, reason = ""): Promise<RunViewJson> {
    const res = await call(() => this.runService.cancelRun({ id, reason }));
    return toJson(RunViewSchema, res.run!) as RunViewJson;
  }

  /** rerunRun starts a new run repeating one (only its failed jobs, with failedOnly). */
  async rerunRun(id: string, opts: { failedOnly?: boolean } = {}): Promise<RunViewJson> {
    const res = await call(() => this.runService.rerunRun({ id, failedOnly: opts.failedOnly ?? false }));
    return toJson(RunViewSchema, res.run!) as RunViewJson;
  }
}
