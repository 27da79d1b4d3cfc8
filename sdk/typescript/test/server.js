// A real `stint server` for the tests: built from this checkout (or taken
// from STINT_BIN), on a fresh SQLite file (or PostgreSQL with
// STINT_DATABASE_URL), on a free loopback port.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";

const repo = resolve(import.meta.dirname, "../../..");

/** stintBinary returns STINT_BIN, or builds cmd/stint into a temp dir once. */
export function stintBinary() {
  if (process.env.STINT_BIN) return process.env.STINT_BIN;
  const dir = mkdtempSync(join(tmpdir(), "stint-bin-"));
  const bin = join(dir, "stint");
  execFileSync("go", ["build", "-o", bin, "./cmd/stint"], { cwd: repo, stdio: ["ignore", "inherit", "inherit"] });
  process.env.STINT_BIN = bin;
  return bin;
}

/** startServer starts a server and returns its url, tokens of tenant acme, and stop(). */
export async function startServer() {
  const bin = stintBinary();
  const dir = mkdtempSync(join(tmpdir(), "stint-ts-"));
  const db = ["--db", join(dir, "stint.db")];
  const token = (role) => execFileSync(bin, [...db, "tokens", "create", "--tenant", "acme", "--role", role, "--name", `ts-${role}`], { stdio: ["ignore", "pipe", "ignore"] }).toString().trim();
  const tokens = { client: token("client"), worker: token("worker"), admin: token("admin") };
  const proc = spawn(bin, [...db, "server", "--listen", "127.0.0.1:0"], { stdio: ["ignore", "pipe", process.env.STINT_TEST_VERBOSE ? "inherit" : "ignore"] });
  const lines = createInterface({ input: proc.stdout });
  const url = await new Promise((ok, fail) => {
    proc.once("exit", (code) => fail(new Error(`stint server exited (${code}) before listening`)));
    lines.on("line", (l) => {
      const m = /^stint server listening on (\S+)/.exec(l);
      if (m) ok(m[1]);
    });
  });
  return {
    url, tokens,
    async stop() {
      proc.kill("SIGTERM");
      await new Promise((r) => (proc.exitCode !== null ? r() : proc.once("exit", r)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** waitFor polls fn until it returns a truthy value, for at most 30s. */
export async function waitFor(what, fn, timeoutMs = 30_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
