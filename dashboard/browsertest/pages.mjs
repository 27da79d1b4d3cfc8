// Drives the history, runs, schedules and search pages of stint's
// dashboard in Debian's chromium, after pages_test.go has started stint
// (dev on SQLite, or server on PostgreSQL) and seeded its store. It gets, in
// the environment: DASHBOARD_URL (without the token), TOKEN (an admin
// token), RUN_ID (a run of two steps no worker runs), CHECK_URL (where the
// Go test checks its store when asked), ARTIFACTS (screenshots) and DOCS
// (when set, where the screenshots of docs/dashboard.md go), STEPPED_ID (a
// job of two recorded steps). After each
// action it asks the Go test to check the store; it runs axe-core on every
// page at 1280×800 and at phone width, and drives a schedule by keyboard
// alone. It exits non-zero on the first failed check.
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const env = process.env;
for (const k of ["DASHBOARD_URL", "TOKEN", "RUN_ID", "STEPPED_ID", "CHECK_URL", "ARTIFACTS"]) {
  if (!env[k]) throw new Error(`${k} is not set: run this through pages_test.go`);
}
const base = env.DASHBOARD_URL;
const axePath = createRequire(import.meta.url).resolve("axe-core/axe.min.js");
mkdirSync(env.ARTIFACTS, { recursive: true });
if (env.DOCS) mkdirSync(env.DOCS, { recursive: true });

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
page.setDefaultTimeout(30_000);
const errors = [];
page.on("pageerror", (e) => errors.push(e.message));

async function shot(name) {
  await page.screenshot({ path: join(env.ARTIFACTS, name + ".png"), fullPage: true });
  if (env.DOCS) await page.screenshot({ path: join(env.DOCS, name + ".png"), fullPage: true });
}

// check asks the Go test to read its store; it answers once the store
// agrees (or fails after ten seconds).
async function check(what, args) {
  const res = await fetch(env.CHECK_URL, { method: "POST", body: JSON.stringify({ what, args }) });
  if (!res.ok) throw new Error(`store check ${what} ${JSON.stringify(args)}: ${await res.text()}`);
}

// axe runs axe-core on the page and fails on any serious or critical
// violation.
async function axe(name) {
  if (!(await page.evaluate(() => typeof window.axe !== "undefined"))) await page.addScriptTag({ path: axePath });
  const found = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`);
  });
  if (found.length) throw new Error(`accessibility of ${name}:\n  ${found.join("\n  ")}`);
}

// go shows a page of the dashboard and waits for what it draws.
async function go(hash, ready) {
  await page.evaluate((h) => { location.hash = h; }, hash);
  await page.locator(ready).first().waitFor();
}

// confirm answers the confirmation dialog: by click, or by Enter.
async function confirm(byKeyboard) {
  await page.locator("#confirm[open]").waitFor();
  if (byKeyboard) await page.keyboard.press("Enter");
  else await page.click("[data-testid=confirm-yes]");
  await page.locator("#confirm[open]").waitFor({ state: "detached" });
}

// tabTo presses Tab until the element selected has the focus.
async function tabTo(selector) {
  for (let i = 0; i < 200; i++) {
    if (await page.evaluate((s) => document.activeElement === document.querySelector(s), selector)) return;
    await page.keyboard.press("Tab");
  }
  throw new Error("Tab never reached " + selector);
}

// Every page, what shows it is drawn, and the name of its screenshot (the
// others are taken above, with what the actions did).
const everyPage = [
  ["#/queues", "[data-testid=queues]", "queues"], ["#/history", "[data-testid=chart]"], ["#/jobs", "[data-testid=jobs]", "jobs"],
  ["#/search?kind=browser.search", "[data-testid=search-results]"], ["#/runs", "[data-testid=runs]"],
  [`#/run/${env.RUN_ID}`, "[data-testid=run-dag]"], ["#/schedules", "[data-testid=schedules]"],
  ["#/dlq", "main h2", "dead-letters"], ["#/stalled", "[data-testid=stalled]", "stalled"],
  ["#/workers", "[data-testid=workers]", "workers"], ["#/outbox", "[data-testid=outbox-dead]", "outbox"],
];

try {
  await page.goto(base + "#token=" + env.TOKEN);
  await page.locator("#who").filter({ hasText: "admin" }).waitFor();

  // History: four charts over the last hour, then a day of one queue.
  await go("#/history", "[data-testid=chart]");
  await page.waitForFunction(() => document.querySelectorAll("[data-testid=chart]").length === 4);
  await page.locator("[data-testid=history-totals]").filter({ hasText: "dead-lettered" }).waitFor();
  await shot("history");
  await page.click("[data-testid=window-day]");
  await page.locator("[data-testid=window-day][aria-current=page]").waitFor();
  await page.selectOption("#history-form select[name=queue]", "deadq");
  await page.click("#history-form button[type=submit]");
  await page.locator("[data-testid=history-queue]").filter({ hasText: "deadq" }).waitFor();
  await page.locator("[data-testid=history-totals]").filter({ hasText: "2 dead-lettered" }).waitFor();

  // Search by a payload field; cancel what it finds, after its count.
  await go("#/search?kind=browser.search&path=customer.id&value=c-1", "[data-testid=search-count]");
  await page.waitForFunction(() => document.querySelectorAll("[data-testid=search-row]").length === 3);
  await page.locator("[data-testid=search-count]").filter({ hasText: "3 jobs match: 3 live" }).waitFor();
  await shot("search");
  await page.click("[data-testid=bulk-cancel]");
  await confirm(false);
  await page.locator("[data-testid=bulk-result]").filter({ hasText: "Cancelled 3 jobs" }).waitFor();
  await check("jobs", { kind: "browser.search", state: "cancelled", count: "3" });
  await check("jobs", { kind: "browser.search", state: "queued", count: "2" });

  // The search form puts its filters in the address; replay the dead letters it finds.
  await go("#/search", "#search-form");
  await page.fill("#search-form input[name=kind]", "browser.dead");
  await page.selectOption("#search-form select[name=state]", ["dead_lettered"]);
  await page.click("[data-testid=search-submit]");
  await page.waitForFunction(() => location.hash.includes("kind=browser.dead") && location.hash.includes("state=dead_lettered"));
  await page.locator("[data-testid=search-count]").filter({ hasText: "2 dead-lettered" }).waitFor();
  await page.click("[data-testid=bulk-replay]");
  await confirm(false);
  await page.locator("[data-testid=bulk-result]").filter({ hasText: "Replayed 2 jobs" }).waitFor();
  await check("jobs", { kind: "browser.dead", state: "queued", replay_of: "yes", count: "2" });

  // Runs: find the run by name, open it, cancel it, rerun what failed.
  await go("#/runs?name=ETL", "[data-testid=run-row]");
  await page.waitForFunction(() => document.querySelectorAll("[data-testid=run-row]").length === 1);
  await shot("runs");
  await page.click("[data-testid=run-row] [data-testid=run-link]");
  await page.waitForFunction(() => document.querySelectorAll("[data-testid=run-node]").length === 2);
  await shot("run");
  // A member job links back to its run.
  await page.click("[data-testid=run-job] [data-testid=job-link]");
  await page.locator("[data-testid=events] tr").nth(1).waitFor();
  await shot("job");
  await page.click("[data-testid=run-link]");
  await page.locator("[data-testid=run-cancel]").click();
  await confirm(false);
  await check("run-cancelled", { run: env.RUN_ID });
  await page.locator("[data-testid=run-rerun-failed]").click();
  await confirm(false);
  await page.waitForFunction((id) => location.hash.startsWith("#/run/") && !location.hash.endsWith(id), env.RUN_ID);
  const rerun = decodeURIComponent(await page.evaluate(() => location.hash.slice("#/run/".length)));
  await check("run-rerun", { run: env.RUN_ID, rerun });

  // Schedules: add one, then pause it with the keyboard alone, resume it,
  // and remove it (confirmed with Enter).
  await go("#/schedules", "[data-testid=schedules]");
  if (!(await page.locator("#schedule-add[open]").count())) await page.click("#schedule-add summary");
  await page.fill("#schedule-form input[name=name]", "browser-nightly");
  await page.fill("#schedule-form input[name=expr]", "0 3 * * *");
  await page.fill("#schedule-form input[name=kind]", "report.daily");
  await page.fill("#schedule-form textarea[name=payload]", '{"report": "daily"}');
  await page.click("[data-testid=schedule-add]");
  const row = "[data-testid=schedule-row][data-name=browser-nightly]";
  await page.locator(row).waitFor();
  await check("schedule", { name: "browser-nightly", expr: "0 3 * * *", kind: "report.daily", state: "active" });
  await shot("schedules");
  await page.locator("h2").click(); // start from the page, not the form
  await tabTo(`${row} [data-testid=schedule-pause]`);
  await page.keyboard.press("Enter");
  await page.locator(`${row} [data-testid=schedule-paused]`).waitFor();
  await check("schedule", { name: "browser-nightly", expr: "0 3 * * *", kind: "report.daily", state: "paused" });
  await page.click(`${row} [data-testid=schedule-resume]`);
  await page.locator(`${row} [data-testid=schedule-pause]`).waitFor();
  await check("schedule", { name: "browser-nightly", expr: "0 3 * * *", kind: "report.daily", state: "active" });
  await page.click(`${row} [data-testid=schedule-remove]`);
  await confirm(true);
  await page.locator(row).waitFor({ state: "detached" });
  await check("schedule", { name: "browser-nightly", state: "removed" });

  // A job run as durable steps shows them on its page as a timeline.
  await go(`#/job/${env.STEPPED_ID}`, "[data-testid=steps]");
  await page.waitForFunction(() => [...document.querySelectorAll("[data-testid=step-row]")].map((r) => r.cells[1].textContent).join() === "fetch,charge");
  await page.locator("[data-testid=step-row]").nth(1).filter({ hasText: "card_declined" }).waitFor();
  await axe("a job's steps");
  await shot("job-steps");

  // Every page: no serious accessibility violation at 1280×800 or at
  // phone width, where nothing may overflow the screen sideways.
  for (const [width, height] of [[1280, 800], [390, 844]]) {
    await page.setViewportSize({ width, height });
    for (const [hash, ready, name] of everyPage) {
      await go(hash, ready);
      if (name && width === 1280) await shot(name);
      await axe(`${hash} at ${width}px`);
      const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      if (over > 1) throw new Error(`${hash} at ${width}px is ${over}px wider than the screen`);
    }
  }
  await go("#/history", "[data-testid=chart]");
  await shot("history-phone");
  await go("#/search?kind=browser.search", "[data-testid=search-results]");
  await shot("search-phone");
  if (errors.length) throw new Error("errors in the page: " + errors.join("; "));
} catch (e) {
  await page.screenshot({ path: join(env.ARTIFACTS, "failure.png"), fullPage: true }).catch(() => {});
  console.error(e);
  await browser.close();
  process.exit(1);
}
await browser.close();
console.log(JSON.stringify({ ok: true }));
