import type { Client as RPCClient } from "@connectrpc/connect";
import type { CompleteRequest } from "./gen/stint/v1/worker_pb.js";
import type { WorkerService } from "./gen/stint/v1/worker_pb.js";
import type { Job as PBJob } from "./gen/stint/v1/types_pb.js";
import { newError } from "./errors.js";
import type { Sender } from "./sender.js";

/** What one completion came to: the job as stored (when asked for), or why it was refused. */
export type Completion = { job: PBJob | undefined; error?: undefined } | { job?: undefined; error: unknown };

interface Pending {
  req: CompleteRequest;
  done: (c: Completion) => void;
}

/**
 * Completer writes completions with CompleteMany: whatever is queued when
 * the writer is free goes in one call (never held back to fill a batch), so
 * a busy worker sends few requests and an idle one answers at once. The
 * first write after an idle spell starts once the current turn of the
 * event loop is over (setImmediate), so the completions of one claimed
 * batch, whose handlers all return in that turn, go together.
 */
export class Completer {
  #queue: Pending[] = [];
  #writing: Promise<void> | undefined;

  /** jobs: whether the server sends each stored job back (else it omits them: less to encode and decode). */
  constructor(
    private readonly rpc: RPCClient<typeof WorkerService>,
    private readonly send: Sender,
    private readonly batch: number,
    private readonly jobs: boolean,
  ) {}

  /** backlog is how many completions wait for a write (not counting the one under way). */
  get backlog(): number {
    return this.#queue.length;
  }

  /** add queues a completion and resolves when it is written or refused. */
  add(req: CompleteRequest): Promise<Completion> {
    return new Promise((done) => {
      this.#queue.push({ req, done });
      this.#writing ??= new Promise<void>((r) => setImmediate(r)).then(() => this.#write()).finally(() => (this.#writing = undefined));
    });
  }

  /** drain resolves when every queued completion is written. */
  async drain(): Promise<void> {
    while (this.#writing) await this.#writing;
  }

  async #write(): Promise<void> {
    while (this.#queue.length > 0) {
      const items = this.#queue.splice(0, this.batch);
      const completions = items.map((p) => p.req);
      try {
        // Each item keeps its request id across retries: a batch whose
        // answer was lost is repeated without completing anything twice.
        const res = await this.send("complete", () => this.rpc.completeMany({ completions, omitJobs: !this.jobs }));
        for (let i = 0; i < items.length; i++) {
          const r = res.results[i];
          if (!r) items[i].done({ error: newError("the server answered no result for this completion", "internal", "") });
          else if (r.errorCode) items[i].done({ error: newError(r.errorMessage, r.errorCode, r.errorKind) });
          else items[i].done({ job: r.job });
        }
      } catch (err) {
        for (const p of items) p.done({ error: err });
      }
    }
  }
}
