import { setTimeout as sleep } from "node:timers/promises";
import { errorOf, isRejection } from "./errors.js";

/** Sender runs one API call, retrying it while its outcome is unknown. */
export type Sender = <T>(what: string, fn: () => Promise<T>) => Promise<T>;

/**
 * sender retries a call that failed without the server's decision (the
 * network, an unavailable server) with backoff from 50ms doubling to 5s,
 * for at most limitMs; the callers keep the request id, so a repeated call
 * that had in fact gone through changes nothing more. A rejection (stale
 * lease, invalid transition, ...) is thrown at once, as a StintError.
 */
export function sender(limitMs: number, stopped: () => boolean, log: (msg: string, err: unknown) => void): Sender {
  return async (what, fn) => {
    const until = Date.now() + limitMs;
    for (let delay = 50; ; delay = Math.min(delay * 2, 5000)) {
      try {
        return await fn();
      } catch (e) {
        const err = errorOf(e);
        if (isRejection(err) || Date.now() + delay > until || (stopped() && what === "claim")) throw err;
        log(`stint: ${what} failed; retrying in ${delay}ms`, err);
        await sleep(delay * (0.5 + Math.random() / 2));
      }
    }
  };
}
