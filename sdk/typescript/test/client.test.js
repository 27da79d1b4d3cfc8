import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Client, NotFoundError, PermissionDeniedError, UnauthenticatedError, ValidationError } from "../dist/index.js";
import { startServer } from "./server.js";

let srv, client;
before(async () => {
  srv = await startServer();
  client = new Client({ url: srv.url, token: srv.tokens.client });
});
after(() => srv?.stop());

test("enqueue carries every spec field, and get and list return the job", async () => {
  const runAt = new Date(Date.now() + 3600_000).toISOString();
  const deadline = new Date(Date.now() + 7200_000).toISOString();
  const { job, existing } = await client.enqueue({
    kind: "email", queue: "mail", topic: "job.mail.welcome", priority: 7, payload: { to: "a@example.com", n: 1 },
    contextPtr: "s3://ctx", adapterId: "smtp", env: { REGION: "eu" }, dedupeKey: "welcome-a", runAt, timeout: "30s",
    deadline, maxAttempts: 4, onExhausted: "JOB_STATE_FAILED", cancelGrace: "5s", budget: { maxRuntime: "60s", maxSteps: "10", maxCost: "100" },
    correlationId: "corr-1", traceId: "trace-1",
  });
  assert.equal(existing, false);
  assert.equal(job.state, "JOB_STATE_SCHEDULED");
  const got = await client.get(job.id);
  assert.deepEqual(got.payload, { to: "a@example.com", n: 1 });
  for (const [k, v] of Object.entries({ kind: "email", queue: "mail", topic: "job.mail.welcome", priority: 7, contextPtr: "s3://ctx", adapterId: "smtp", dedupeKey: "welcome-a", timeout: "30s", maxAttempts: 4, onExhausted: "JOB_STATE_FAILED", cancelGrace: "5s", correlationId: "corr-1", traceId: "trace-1" })) {
    assert.deepEqual(got[k], v, k);
  }
  assert.deepEqual(got.env, { REGION: "eu" });
  assert.deepEqual(got.budget, { maxRuntime: "60s", maxSteps: "10", maxCost: "100" });
  assert.equal(Date.parse(got.runAt), Date.parse(runAt));
  assert.equal(Date.parse(got.deadline), Date.parse(deadline));

  const again = await client.enqueue({ kind: "email", queue: "mail", dedupeKey: "welcome-a" });
  assert.equal(again.existing, true);
  assert.equal(again.job.id, job.id);

  const page = await client.list({ queue: "mail", states: ["JOB_STATE_SCHEDULED"] });
  assert.deepEqual(page.jobs.map((j) => j.id), [job.id]);
  const events = await client.events(job.id);
  assert.equal(events[0].type, "EVENT_TYPE_ENQUEUED");
});

test("enqueueMany is one transaction, and a retried request id returns the first jobs", async () => {
  const res = await client.enqueueMany([{ kind: "a", queue: "many" }, { kind: "b", queue: "many" }], { requestId: "batch-1" });
  assert.equal(res.length, 2);
  const again = await client.enqueueMany([{ kind: "a", queue: "many" }, { kind: "b", queue: "many" }], { requestId: "batch-1" });
  assert.deepEqual(again.map((r) => r.job.id), res.map((r) => r.job.id));
  await assert.rejects(client.enqueueMany([{ kind: "ok", queue: "many2" }, { kind: "", queue: "many2" }]), ValidationError);
  assert.equal((await client.list({ queue: "many2" })).jobs.length, 0);
  const all = [];
  for await (const j of client.listAll({ queue: "many", pageSize: 1 })) all.push(j.id);
  assert.equal(all.length, 2);
});

test("cancel, dead letters and replay", async () => {
  const { job } = await client.enqueue({ kind: "x", queue: "cancel" });
  const cancelled = await client.cancel(job.id, { reason: "no longer needed" });
  assert.equal(cancelled.state, "JOB_STATE_CANCELLED");
  const dl = await client.deadLetters({ queue: "cancel" });
  assert.deepEqual(dl.jobs, []);
  const admin = new Client({ url: srv.url, token: srv.tokens.admin });
  assert.ok(Array.isArray(await admin.deadLetterCounts()));
});

test("errors are typed", async () => {
  await assert.rejects(client.get("00000000-0000-0000-0000-000000000000"), (e) => e instanceof NotFoundError && e.code === "not_found" && e.kind === "not_found");
  await assert.rejects(client.enqueue({ kind: "" }), (e) => e instanceof ValidationError && e.code === "invalid_argument");
  await assert.rejects(new Client({ url: srv.url, token: "stint_nope" }).get("x"), UnauthenticatedError);
  await assert.rejects(client.deadLetterCounts(), PermissionDeniedError);
  assert.throws(() => new Client({ url: "localhost:1" }), TypeError);
});

test("runs: create, get, list, events, cancel", async () => {
  const run = await client.createRun({ name: "pipeline", jobs: [{ name: "a", job: { kind: "step", queue: "runs" } }, { name: "b", job: { kind: "step", queue: "runs" }, dependsOn: ["a"] }] });
  assert.equal(run.jobs.length, 2);
  assert.equal((await client.getRun(run.run.id)).run.name, "pipeline");
  assert.ok((await client.listRuns()).runs.some((r) => r.id === run.run.id));
  assert.ok((await client.runEvents(run.run.id)).length >= 1);
  const cancelled = await client.cancelRun(run.run.id, "stop");
  assert.ok(["RUN_STATE_CANCELLED", "RUN_STATE_CANCEL_REQUESTED"].includes(cancelled.run.state));
});
