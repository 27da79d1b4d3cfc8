import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { CancelRequested, Client, DeadLetter, DeadlinePassed, Halt, LeaseLost, Permanent, RetryAfter, Shutdown, StaleLeaseError, TimeoutExceeded, Worker } from "../dist/index.js";
import { startServer, waitFor } from "./server.js";

let srv, client;
before(async () => {
  srv = await startServer();
  client = new Client({ url: srv.url, token: srv.tokens.client });
});
after(() => srv?.stop());

const quiet = { info() {}, warn() {}, error() {} };

function worker(queue, opts = {}) {
  const w = new Worker({ url: srv.url, token: srv.tokens.worker, queues: { [queue]: 4 }, claimWaitMs: 5000, logger: quiet, ...opts });
  return w;
}

async function finished(id, state) {
  return waitFor(`job ${id} ${state}`, async () => {
    const j = await client.get(id);
    return j.state === state && j;
  });
}

test("claim, progress, checkpoint and complete", async () => {
  const w = worker("t-complete").handle("add", async (job) => {
    assert.ok(job.leaseId);
    await job.progress({ pct: 50 }, "adding");
    await job.checkpoint({ half: true }, { steps: 1 });
    return { sum: job.payload.a + job.payload.b, attempt: job.attempt };
  });
  w.start();
  const { job } = await client.enqueue({ kind: "add", queue: "t-complete", payload: { a: 2, b: 3 } });
  const done = await finished(job.id, "JOB_STATE_SUCCEEDED");
  await w.stop();
  assert.deepEqual(done.result, { sum: 5, attempt: 1 });
  assert.deepEqual(done.checkpoint, { half: true });
  assert.deepEqual(done.progress, { pct: 50 });
  assert.match(done.lastOwner, /^ts-worker\//);
});

test("RetryAfter retries; Permanent, Halt and DeadLetter end the job", async () => {
  const w = worker("t-fail", { backoff: { baseMs: 10 } })
    .handle("flaky", (job) => {
      if (job.attempt === 1) throw new RetryAfter(10, "not yet");
      return "ok";
    })
    .handle("broken", () => { throw Object.assign(new Error("boom"), { code: "disk_full" }); })
    .handle("perm", () => { throw new Permanent("never works", { code: "bad_input" }); })
    .handle("halt", () => { throw new Halt("enough"); })
    .handle("dlq", () => { throw new DeadLetter("parse_error", "cannot parse"); });
  w.start();
  const ids = {};
  for (const kind of ["flaky", "broken", "perm", "halt", "dlq"]) ids[kind] = (await client.enqueue({ kind, queue: "t-fail", maxAttempts: 2 })).job.id;
  const flaky = await finished(ids.flaky, "JOB_STATE_SUCCEEDED");
  assert.equal(flaky.attempt, 2);
  assert.equal(flaky.failures, 1);
  assert.equal(flaky.lastError.code, "retry_after");
  const broken = await finished(ids.broken, "JOB_STATE_DEAD_LETTERED");
  assert.equal(broken.lastError.code, "disk_full");
  const perm = await finished(ids.perm, "JOB_STATE_FAILED");
  assert.equal(perm.error.code, "bad_input");
  assert.equal(perm.error.class, "ERROR_CLASS_PERMANENT");
  await finished(ids.halt, "JOB_STATE_HALTED");
  assert.equal((await finished(ids.dlq, "JOB_STATE_DEAD_LETTERED")).reasonCode, "parse_error");
  await w.stop();
});

test("a cancel reaches the handler without waiting for a heartbeat", async () => {
  let started;
  const running = new Promise((r) => (started = r));
  let reason;
  // A 10-minute lease heartbeats every 200s: the cancel must come by the notices stream.
  const w = worker("t-cancel", { leaseTtlMs: 600_000 }).handle("wait", async (job) => {
    started();
    await new Promise((r) => job.signal.addEventListener("abort", r));
    reason = job.signal.reason;
    throw reason;
  });
  w.start();
  const { job } = await client.enqueue({ kind: "wait", queue: "t-cancel" });
  await running;
  await client.cancel(job.id);
  await finished(job.id, "JOB_STATE_CANCELLED");
  assert.ok(reason instanceof CancelRequested);
  await w.stop();
});

test("a report with a stale lease is rejected, and the job runs again", async () => {
  const outcomes = [];
  // The worker's raw API (a worker token), to release the lease behind the Worker's back.
  const workerClient = new Client({ url: srv.url, token: srv.tokens.worker });
  const released = new Set();
  const w = worker("t-stale", { onOutcome: (o) => outcomes.push(o) }).handle("stale", async (job) => {
    if (!released.has(job.id)) {
      released.add(job.id);
      // Give the lease back behind the worker's back: what it reports next is stale.
      await workerClient.worker.release({ owner: job.owner(), requeue: true, reason: "test" }).catch(() => {});
      return "first";
    }
    return "second";
  });
  w.start();
  const { job } = await client.enqueue({ kind: "stale", queue: "t-stale" });
  const done = await finished(job.id, "JOB_STATE_SUCCEEDED").finally(() => w.stop());
  assert.equal(done.result, "second");
  assert.equal(done.failures ?? 0, 0);
  const rejected = outcomes.find((o) => o.jobId === job.id && o.error);
  assert.ok(rejected.error instanceof StaleLeaseError, String(rejected.error));
});

test("a timeout aborts the handler and fails the attempt", async () => {
  let reason;
  const w = worker("t-timeout").handle("slow", async (job) => {
    await new Promise((r) => job.signal.addEventListener("abort", r));
    reason = job.signal.reason;
    throw new Error("stopped");
  });
  w.start();
  const { job } = await client.enqueue({ kind: "slow", queue: "t-timeout", timeout: "0.2s", maxAttempts: 1, onExhausted: "JOB_STATE_FAILED" });
  const j = await waitFor("timed out", async () => {
    const j = await client.get(job.id);
    return ["JOB_STATE_TIMED_OUT", "JOB_STATE_FAILED"].includes(j.state) && j;
  });
  assert.ok(reason instanceof TimeoutExceeded, String(reason));
  assert.equal(j.state, "JOB_STATE_TIMED_OUT");
  await w.stop();
});

test("shutdown releases the running job without spending an attempt", async () => {
  let started;
  const running = new Promise((r) => (started = r));
  let reason;
  const w = worker("t-shutdown", { shutdownGraceMs: 0 }).handle("long", async (job) => {
    started();
    await new Promise((r) => job.signal.addEventListener("abort", r));
    reason = job.signal.reason;
    throw reason;
  });
  w.start();
  const { job } = await client.enqueue({ kind: "long", queue: "t-shutdown", maxAttempts: 1 });
  await running;
  await w.stop();
  assert.ok(reason instanceof Shutdown);
  const j = await client.get(job.id);
  assert.equal(j.state, "JOB_STATE_QUEUED");
  assert.equal(j.failures ?? 0, 0);
  // Another worker finishes it: the release spent no attempt.
  const w2 = worker("t-shutdown").handle("long", () => "done");
  w2.start();
  await finished(job.id, "JOB_STATE_SUCCEEDED");
  await w2.stop();
});

test("a hard cancel takes the lease: the signal fires with LeaseLost and nothing is reported", async () => {
  let started;
  const running = new Promise((r) => (started = r));
  let reason;
  const outcomes = [];
  const w = worker("t-lost", { leaseTtlMs: 600_000, onOutcome: (o) => outcomes.push(o) }).handle("wait", async (job) => {
    started();
    await new Promise((r) => job.signal.addEventListener("abort", r));
    reason = job.signal.reason;
    throw reason;
  });
  w.start();
  const { job } = await client.enqueue({ kind: "wait", queue: "t-lost" });
  await running;
  await client.cancel(job.id, { hard: true });
  await waitFor("the handler's abort", () => reason);
  await w.stop();
  assert.ok(reason instanceof LeaseLost, String(reason));
  assert.deepEqual(outcomes.map((o) => o.op), [""]);
  assert.equal((await client.get(job.id)).state, "JOB_STATE_CANCELLED");
});

test("a passed deadline aborts the handler and the job ends timed out", async () => {
  const reasons = [];
  const w = worker("t-deadline").handle("slow", async (job) => {
    await new Promise((r) => (job.signal.aborted ? r() : job.signal.addEventListener("abort", r)));
    reasons.push(job.signal.reason);
    throw job.signal.reason;
  });
  const deadline = new Date(Date.now() + 3000).toISOString();
  const { job } = await client.enqueue({ kind: "slow", queue: "t-deadline", deadline });
  w.start();
  const j = await finished(job.id, "JOB_STATE_TIMED_OUT").finally(() => w.stop());
  assert.equal(j.reasonCode, "deadline");
  assert.ok(reasons[0] instanceof DeadlinePassed, String(reasons));
});

test("one ticker heartbeats every running job: leases are renewed while handlers run", async () => {
  let release;
  const gate = new Promise((r) => (release = r));
  const claimed = [];
  const w = worker("t-beat", { leaseTtlMs: 1500 }).handle("long", async (job) => {
    claimed.push(job.pb.leaseExpiresAt);
    await gate;
    return "ok";
  });
  w.start();
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push((await client.enqueue({ kind: "long", queue: "t-beat" })).job.id);
  // Each lease moves past the one its claim granted: a heartbeat renewed it.
  await waitFor("every lease renewed", async () => {
    if (claimed.length < 3) return false;
    const jobs = await Promise.all(ids.map((id) => client.get(id)));
    const first = new Set(claimed.map((t) => new Date(Number(t.seconds) * 1000 + t.nanos / 1e6).toISOString()));
    return jobs.every((j) => j.leaseExpiresAt && !first.has(new Date(j.leaseExpiresAt).toISOString()));
  });
  release();
  for (const id of ids) await finished(id, "JOB_STATE_SUCCEEDED");
  await w.stop();
});

test("a completion's outcome carries the stored job only with completedJobs", async () => {
  for (const completedJobs of [false, true]) {
    const outcomes = [];
    const queue = `t-completed-${completedJobs}`;
    const w = worker(queue, { completedJobs, onOutcome: (o) => outcomes.push(o) }).handle("add", () => ({ sum: 3 }));
    w.start();
    const { job } = await client.enqueue({ kind: "add", queue });
    await finished(job.id, "JOB_STATE_SUCCEEDED");
    await w.stop();
    const o = outcomes.find((o) => o.jobId === job.id);
    assert.equal(o.op, "complete");
    assert.equal(o.error, undefined);
    if (completedJobs) assert.deepEqual([o.job.state, o.job.result], ["JOB_STATE_SUCCEEDED", { sum: 3 }]);
    else assert.equal(o.job, undefined);
  }
});
