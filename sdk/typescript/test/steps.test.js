import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Client, SignalTakenError, StepFailed, ValidationError, Worker } from "../dist/index.js";
import { startServer, waitFor } from "./server.js";

let srv, client;
before(async () => {
  srv = await startServer();
  client = new Client({ url: srv.url, token: srv.tokens.client });
});
after(() => srv?.stop());

const quiet = { info() {}, warn() {}, error() {} };

function worker(queue, opts = {}) {
  return new Worker({ url: srv.url, token: srv.tokens.worker, queues: { [queue]: 4 }, claimWaitMs: 5000, logger: quiet, ...opts });
}

async function inState(id, state) {
  return waitFor(`job ${id} ${state}`, async () => {
    const j = await client.get(id);
    return j.state === state && j;
  });
}

test("a step runs once across a worker restart; sleep and waitSignal hand the lease back", async () => {
  const runs = [];
  const handler = async (job) => {
    const one = await job.step("one", () => { runs.push("one"); return 1; });
    const { received, payload } = await job.waitSignal("go", 3_600_000);
    await job.sleep("nap", 10);
    const two = await job.step("two", async () => { runs.push("two"); return one + 1; });
    return { one, two, received, payload };
  };
  const w1 = worker("t-steps").handle("steps", handler);
  w1.start();
  const { job } = await client.enqueue({ kind: "steps", queue: "t-steps" });
  await inState(job.id, "JOB_STATE_SCHEDULED"); // waiting for its signal, no lease held
  await w1.stop();
  assert.deepEqual(runs, ["one"]);

  // Sent before any worker waits again: kept, and the first one wins.
  await client.signal(job.id, "go", { n: 7 });
  await assert.rejects(client.signal(job.id, "go", { n: 8 }), SignalTakenError);

  const w2 = worker("t-steps").handle("steps", handler);
  w2.start();
  const done = await inState(job.id, "JOB_STATE_SUCCEEDED");
  await w2.stop();
  assert.deepEqual(runs, ["one", "two"]);
  assert.deepEqual(done.result, { one: 1, two: 2, received: true, payload: { n: 7 } });
  assert.equal(done.failures, undefined); // waiting spent no attempt
  const steps = await client.steps(job.id);
  assert.deepEqual(steps.map((s) => `${s.kind}:${s.name}`), ["run:one", "wait:go", "signal:go", "sleep:nap", "run:two"]);
  assert.equal(steps[2].output, '{"received":true,"payload":{"n":7}}');
});

test("a step asked for under another name fails the job nondeterministic; onError continue records the error", async () => {
  const w = worker("t-steps-nd")
    .handle("flip", async (job) => {
      await job.step(job.attempt === 1 ? "first" : "other", () => 1);
      throw new Error("fail the attempt after the step");
    })
    .handle("cont", async (job) => {
      try {
        await job.step("charge", () => { throw Object.assign(new Error("card declined"), { code: "declined" }); }, { onError: "continue" });
      } catch (err) {
        assert.ok(err instanceof StepFailed);
        return { code: err.code, attempt: job.attempt };
      }
      return "unreachable";
    });
  w.start();
  const flipped = (await client.enqueue({ kind: "flip", queue: "t-steps-nd", maxAttempts: 3 })).job;
  const failed = await inState(flipped.id, "JOB_STATE_FAILED");
  assert.equal(failed.lastError.code, "nondeterministic");
  assert.equal(failed.attempt, 2);
  const cont = (await client.enqueue({ kind: "cont", queue: "t-steps-nd" })).job;
  const done = await inState(cont.id, "JOB_STATE_SUCCEEDED");
  await w.stop();
  assert.deepEqual(done.result, { code: "declined", attempt: 1 });
});

test("a bad signal is refused and changes nothing", async () => {
  const { job } = await client.enqueue({ kind: "none", queue: "t-steps-bad" });
  await assert.rejects(client.signal(job.id, ""), ValidationError);
  assert.deepEqual(await client.steps(job.id), []);
});

test("startChild and awaitChild with a worker token: the parent waits without a lease and replays to the same child", async () => {
  const seen = [];
  let release;
  const released = new Promise((resolve) => { release = resolve; });
  const w = worker("t-family")
    .handle("parent", async (job) => {
      const child = await job.startChild("kid", { kind: "kid", queue: "t-family", payload: { n: 20 } });
      seen.push(child);
      const o = await job.awaitChild("await kid", child);
      return { child: o.state, n: o.result.n };
    })
    .handle("kid", async (job) => {
      await released;
      return { n: job.payload.n + 1 };
    });
  w.start();
  const { job } = await client.enqueue({ kind: "parent", queue: "t-family" });
  await inState(job.id, "JOB_STATE_SCHEDULED"); // awaiting its child, no lease held
  release();
  const done = await inState(job.id, "JOB_STATE_SUCCEEDED");
  await w.stop();
  assert.deepEqual(done.result, { child: "succeeded", n: 21 });
  assert.ok(seen.length >= 2 && new Set(seen).size === 1, `children seen: ${seen}`);
  const child = await client.get(seen[0]);
  assert.equal(child.parentJobId, job.id);
  assert.equal(child.stepIndex, 1);
  const steps = await client.steps(job.id);
  assert.deepEqual(steps.map((s) => `${s.kind}:${s.name}`), ["child:kid", "await:await kid"]);
  assert.equal(steps[1].output, `{"job_id":"${seen[0]}","state":"succeeded","result":{"n":21}}`);
});
