// Drives the bus page of stint's dashboard in Debian's chromium, after
// bus_test.go has started `stint dev --nats-url` and published a JobRequest
// that no bus worker takes. It gets, in the environment: DASHBOARD_URL,
// TOKEN, WORKER (the name of the bus worker's durable consumer, never
// pulled), CHECK_URL (where the Go test checks the store and the bus),
// ARTIFACTS and DOCS (screenshots). It checks the page shows the bridge
// connected, the request enqueued and dispatched, its events published,
// and the worker's consumer one message behind; runs axe-core at 1280×800
// and at phone width; and reaches the page by keyboard. It exits non-zero
// on the first failed check.
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const env = process.env;
for (const k of ["DASHBOARD_URL", "TOKEN", "WORKER", "CHECK_URL", "ARTIFACTS"]) {
  if (!env[k]) throw new Error(`${k} is not set: run this through bus_test.go`);
}
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

async function check(what, args) {
  const res = await fetch(env.CHECK_URL, { method: "POST", body: JSON.stringify({ what, args }) });
  if (!res.ok) throw new Error(`store check ${what} ${JSON.stringify(args)}: ${await res.text()}`);
}

async function axe(name) {
  if (!(await page.evaluate(() => typeof window.axe !== "undefined"))) await page.addScriptTag({ path: axePath });
  const found = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`);
  });
  if (found.length) throw new Error(`accessibility of ${name}:\n  ${found.join("\n  ")}`);
}

try {
  await page.goto(env.DASHBOARD_URL + "#token=" + env.TOKEN);
  await page.locator("#who").filter({ hasText: "admin" }).waitFor();
  // The nav offers the page (a bridge runs), and the keyboard reaches it.
  await page.locator("#nav-bus:not([hidden])").waitFor();
  await page.locator("nav a").first().focus();
  for (let i = 0; i < 40 && !(await page.evaluate(() => document.activeElement && document.activeElement.id === "nav-bus")); i++) {
    await page.keyboard.press("Tab");
  }
  await page.keyboard.press("Enter");
  await page.locator("[data-testid=bus-connected]").filter({ hasText: "connected" }).waitFor();
  if ((await page.locator("[data-testid=bus-connected]").textContent()).trim() !== "connected") throw new Error("the bridge shows as not connected");
  // The request: enqueued, dispatched, its events published; the store agrees.
  await page.locator("[data-testid=bus-enqueued]").filter({ hasText: /^1$/ }).waitFor();
  await page.locator("[data-testid=bus-dispatched]").filter({ hasText: /^1$/ }).waitFor();
  await page.waitForFunction(() => Number(document.querySelector("[data-testid=bus-published]").textContent.replace(/,/g, "")) >= 2);
  await check("bus-job", { job_id: "browser-1", state: "running" });
  // The bus worker's consumer is one message behind (nobody pulls it).
  const worker = page.locator("[data-testid=bus-consumer]").filter({ hasText: env.WORKER });
  await worker.locator("[data-testid=bus-consumer-pending]").filter({ hasText: /^1$/ }).waitFor();
  await check("bus-lag", { consumer: env.WORKER, pending: "1" });
  await axe("bus");
  await shot("bus");
  await page.setViewportSize({ width: 390, height: 844 });
  await axe("bus at phone width");
  await shot("bus-phone");
  if (errors.length) throw new Error("page errors: " + errors.join("; "));
  console.log("bus page: ok");
} catch (e) {
  await shot("bus-failure").catch(() => {});
  console.error(e);
  process.exitCode = 1;
} finally {
  await browser.close();
}
