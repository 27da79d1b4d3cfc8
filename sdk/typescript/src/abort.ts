/**
 * LazyAbort is an AbortController made only when its signal is read. Most
 * handlers never read job.signal, and each AbortSignal is an EventTarget: a
 * busy worker would build and collect one per job for nothing.
 */
export class LazyAbort {
  #ctrl: AbortController | undefined;
  #aborted = false;
  #reason: unknown;

  /** Whether abort was called (the signal, once made, says the same). */
  get aborted(): boolean { return this.#aborted; }
  /** The first abort's reason. */
  get reason(): unknown { return this.#reason; }

  /** The signal, made on first use; already aborted if abort came first. */
  get signal(): AbortSignal {
    if (!this.#ctrl) {
      this.#ctrl = new AbortController();
      if (this.#aborted) this.#ctrl.abort(this.#reason);
    }
    return this.#ctrl.signal;
  }

  /** abort fires the signal with reason; as with AbortController, the first abort wins. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#ctrl?.abort(reason);
  }
}
