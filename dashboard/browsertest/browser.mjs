// Drives stint's dashboard, served by a real `stint dev`, in Debian's
// chromium. browser_test.go starts stint dev and passes, in the
// environment: DASHBOARD_URL (without the token), TOKEN (the dev admin
// token), QUEUED_ID (a queued job to cancel), DEAD_KIND (the kind of the
// dead letters to replay) and RUN_ID (a run of two steps) and ARTIFACTS (where
// screenshots go). It prints
// one JSON line {"cancelled": id, "replayed": [ids], "paused": queue} for the Go test, which
// checks the store itself, and exits non-zero on the first failed check.
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const { DASHBOARD_URL: base, TOKEN: token, QUEUED_ID: queuedID, DEAD_KIND: deadKind, ARTIFACTS: artifacts } = process.env;
for (const [k, v] of Object.entries({ DASHBOARD_URL: base, TOKEN: token, QUEUED_ID: queuedID, DEAD_KIND: deadKind, ARTIFACTS: artifacts })) {
  if (!v) throw new Error(`${k} is not set: run this through browser_test.go`);
}
mkdirSync(artifacts, { recursive: true });

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
page.setDefaultTimeout(30_000);
const shot = (name) => page.screenshot({ path: join(artifacts, name + ".png"), fullPage: true });
const out = {};

try {
  // A wrong token is refused: the sign-in form stays, with the reason.
  await page.goto(base + "#token=stint_wrong");
  await page.locator("#login-error").filter({ hasText: "unknown or revoked token" }).waitFor();
  await shot("01-wrong-token");

  // The right one signs in and lands on the queues.
  await page.fill("#token", token);
  await page.click("#login-form button");
  await page.locator("[data-testid=queue-row]").first().waitFor();
  await page.locator("#who").filter({ hasText: "admin" }).waitFor();
  await page.locator("[data-testid=throughput]").first().waitFor();
  await shot("02-queues");

  // Jobs: the filter narrows the list to the queued job's queue and kind.
  await page.click("nav a[data-page=jobs]");
  await page.locator("[data-testid=job-row]").first().waitFor();
  await shot("03-jobs");
  await page.selectOption("#filter-form select[name=state]", "dead_lettered");
  await page.click("#filter-form button");
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll("[data-testid=job-row]")];
    return rows.length > 0 && rows.every((r) => r.textContent.includes("dead_lettered"));
  });
  await shot("04-jobs-filtered");
  // Find by id.
  await page.goto(base + "#/jobs?id=" + queuedID);
  await page.waitForFunction((id) => {
    const rows = [...document.querySelectorAll("[data-testid=job-row]")];
    return rows.length === 1 && rows[0].textContent.includes(id);
  }, queuedID);

  // A job's page, and its cancel button.
  await page.click("[data-testid=job-link]");
  await page.locator("[data-testid=job-id]").filter({ hasText: queuedID }).waitFor();
  await page.locator("[data-testid=events] tr").nth(1).waitFor();
  await shot("05-job");
  await page.click("[data-testid=cancel]");
  await page.locator("h2 .state-cancelled").waitFor();
  await page.locator("[data-testid=cancel]").waitFor({ state: "detached" });
  await shot("06-job-cancelled");
  out.cancelled = queuedID;

  // Dead letters grouped by reason; replay everything of the group.
  await page.click("nav a[data-page=dlq]");
  await page.locator("[data-testid=dlq-group]").first().waitFor();
  await shot("07-dlq");
  const ids = await page.$$eval("[data-testid=dlq-row]", (rows, kind) =>
    rows.filter((r) => r.textContent.includes(kind)).map((r) => r.querySelector("[data-testid=job-link]").textContent), deadKind);
  if (ids.length === 0) throw new Error("no dead letter of kind " + deadKind + " on the DLQ page");
  for (const id of ids) await page.check(`.pick[value="${id}"]`);
  const replay = page.waitForResponse((r) => r.url().endsWith("api/dlq/replay") && r.status() === 200);
  await page.click("[data-testid=replay-selected]");
  out.replayed = (await (await replay).json()).replayed;
  if (out.replayed.length !== ids.length) throw new Error(`replayed ${out.replayed.length} of ${ids.length}`);
  out.dead = ids;

  // Stalled and workers render.
  await page.click("nav a[data-page=stalled]");
  await page.locator("[data-testid=stalled]").waitFor();
  await shot("08-stalled");
  await page.click("nav a[data-page=workers]");
  await page.locator("[data-testid=workers]").waitFor();
  await shot("09-workers");

  // The outbox: the dead webhook message, and its replay button.
  await page.click("nav a[data-page=outbox]");
  const deadRow = page.locator("[data-testid=outbox-dead] [data-testid=outbox-row]").first();
  await deadRow.waitFor();
  await shot("09b-outbox");
  const outboxReplay = page.waitForResponse((r) => /api\/outbox\/\d+\/replay$/.test(r.url()) && r.status() === 200);
  await deadRow.locator("[data-testid=outbox-replay]").click();
  out.outbox_replayed = (await (await outboxReplay).json()).id;

  // A run drawn as its DAG: two steps and the arrow between them.
  await page.goto(base + "#/run/" + process.env.RUN_ID);
  await page.waitForFunction(() => document.querySelectorAll("[data-testid=run-node]").length === 2 &&
    document.querySelectorAll("[data-testid=run-dag] line").length === 1);
  await shot("10-run");

  // Live updates: the queues page redraws by itself.
  await page.click("nav a[data-page=queues]");
  const first = await page.textContent("#live");
  await page.waitForFunction((t) => document.querySelector("#live").textContent !== t, first);

  // Flow control: pausing the default queue from the page shows its badge.
  const flowRow = page.locator("[data-testid=flow-row][data-queue=default]");
  await flowRow.locator("[data-testid=pause]").click();
  await flowRow.locator("[data-testid=paused]").waitFor();
  await flowRow.locator("[data-testid=resume]").waitFor();
  await shot("11-queue-paused");
  out.paused = "default";
} catch (e) {
  await shot("failure").catch(() => {});
  console.error(e);
  await browser.close();
  process.exit(1);
}
await browser.close();
console.log(JSON.stringify(out));
