import { timerDelay } from '../clock.js';
import { GuardrailViolationError } from '../errors.js';
import type { GuardCheck } from '../GuardCheck.js';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';

/** Timers for the wall-clock abort; injectable so tests need no real time. */
export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

/** Milliseconds left on the wall clock as of `wall`, or null when there is no running limit. */
export function remainingMs(wall: GuardCheck | null): number | null {
  if (!wall || wall.limit === null || wall.limit === undefined || wall.observed === undefined) return null;
  return Math.max(0, Math.ceil((wall.limit - wall.observed) * 1000));
}

/**
 * An abort controller made only once its signal is asked for: most calls end with nobody listening,
 * and an AbortController costs more than the rest of a guarded call's bookkeeping.
 */
export class LazyAbort {
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  get aborted(): boolean {
    return this.#aborted;
  }

  get reason(): unknown {
    return this.#reason;
  }

  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}

/** The wall-clock limit of one call in flight; see {@link wallClockDeadline}. */
export interface Deadline {
  /**
   * Rejects with the wall-clock violation once the plan's clock says the limit ran out, or with the
   * store's error once it could not be read.
   */
  readonly expired: Promise<never>;
  /** Ends the watch: a clock check still out then neither re-arms the timer nor aborts anything. */
  stop(): void;
}

/**
 * Watches the plan's wall clock while a call runs: after `limitMs` it asks the service's clock, and only
 * its answer ends the call (a timer may fire a little early; then it is armed again for what is left;
 * a limit since taken off ends the watch). When the limit ran out, `expired` is called with the
 * violation; `failed` when the clock could not be read. A limit past a timer's range is waited for in
 * parts. Returns `stop`, which ends the watch: a clock check still out then neither re-arms the timer,
 * which nothing would clear, nor calls anything.
 */
export function watchWallClock(
  service: AutonomyGuardrailService,
  planId: string,
  limitMs: number,
  timers: Timers,
  expired: (violation: GuardrailViolationError) => void,
  failed: (error: unknown) => void,
): () => void {
  let timer: unknown;
  let over = false;
  const ask = (): void => {
    if (over) return;
    void service.checkWallClock(planId).then((check) => {
      if (over) return;
      if (!check.allowed) return expired(new GuardrailViolationError(check));
      // A limit taken off while the call runs leaves nothing to watch: polling would only fill the log.
      // One on a plan whose clock was set back to not started runs whole from its start.
      if (check.limit === null || check.limit === undefined) return;
      arm(Math.max(1, remainingMs(check) ?? Math.ceil(check.limit * 1000)));
    }, failed);
  };
  const arm = (ms: number): void => {
    timer = timers.setTimeout(ask, timerDelay(ms));
  };
  arm(limitMs);
  return () => {
    over = true;
    if (timer !== undefined) timers.clearTimeout(timer);
  };
}

/**
 * {@link watchWallClock} as a promise: when the limit ran out, `controller` aborts with the violation
 * and `expired` rejects with it; when the clock could not be read, both with the store's error.
 */
export function wallClockDeadline(
  service: AutonomyGuardrailService,
  planId: string,
  limitMs: number,
  timers: Timers,
  controller: { abort(reason: unknown): void },
): Deadline {
  let fail: (error: unknown) => void = () => undefined;
  const expired = new Promise<never>((_, reject) => {
    fail = reject;
  });
  expired.catch(() => undefined);
  // The limit ran out, or the store cannot say whether it did: the call is told to stop either way.
  const cut = (reason: unknown): void => {
    controller.abort(reason);
    fail(reason);
  };
  return { expired, stop: watchWallClock(service, planId, limitMs, timers, cut, cut) };
}
