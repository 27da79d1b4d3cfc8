// The TypeScript side of the conformance scenarios: a Worker with the
// scenario handlers, driven by sdk/conformance (see doc.go there).
import { Client, RetryAfter, Worker } from "../../typescript/dist/index.js";

const { STINT_URL: url, STINT_TOKEN: token, STINT_QUEUE: queue } = process.env;
const say = (line) => process.stdout.write(line + "\n");
const reasons = { CancelRequested: "cancel", Shutdown: "shutdown", LeaseLost: "lease_lost", TimeoutExceeded: "timeout", DeadlinePassed: "deadline" };
const raw = new Client({ url, token });
const released = new Set();
// Bench mode (STINT_BENCH=N): a no-op handler; "benched" once N completions were accepted.
const bench = Number(process.env.STINT_BENCH || 0);
let completed = 0;

const w = new Worker({
  url, token, queues: { [queue]: Number(process.env.STINT_CONCURRENCY || 4) }, leaseTtlMs: 600_000, claimWaitMs: 5000, shutdownGraceMs: 0,
  logger: { info() {}, warn() {}, error: console.error },
  onOutcome: (o) => {
    if (o.error && o.op) say(`rejected ${o.jobId} ${o.error.kind || o.error.code || "error"}`);
    else if (bench && o.op === "complete" && ++completed === bench) say("benched");
  },
});
w.handle("noop", () => null);
w.handle("echo", (job) => ({ echo: job.payload, lang: "typescript", attempt: job.attempt }));
w.handle("flaky", (job) => {
  if (job.attempt <= job.payload.fail) throw Object.assign(new Error(`attempt ${job.attempt} fails on purpose`), { code: "flaky" });
  if (job.payload.retryAfterMs && job.attempt === 1) throw new RetryAfter(job.payload.retryAfterMs);
  return { attempt: job.attempt };
});
w.handle("block", async (job) => {
  say(`started ${job.id}`);
  await new Promise((r) => (job.signal.aborted ? r() : job.signal.addEventListener("abort", r)));
  say(`aborted ${job.id} ${reasons[job.signal.reason?.name] ?? "unknown"}`);
  throw job.signal.reason;
});
w.handle("stale", async (job) => {
  if (released.has(job.id)) return "second";
  released.add(job.id);
  await raw.worker.release({ owner: job.owner(), requeue: true, reason: "conformance: the lease goes stale" });
  return "first";
});
w.handle("steps", async (job) => {
  const one = await job.step("one", () => { say(`ran ${job.id} one`); return 1; });
  const { received, payload } = await job.waitSignal("go", 3_600_000);
  await job.sleep("nap", 10);
  const two = await job.step("two", () => { say(`ran ${job.id} two`); return one + 1; });
  return { one, two, received, payload, lang: "typescript" };
});
w.start();
say("ready");
process.stdin.resume();
process.stdin.on("end", async () => {
  await w.stop();
  say("stopped");
  process.exit(0);
});
