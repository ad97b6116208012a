import { invalid } from './errors.js';
import { handle } from './validation.js';

/** A source of the current time in epoch milliseconds. Inject one wherever time matters. */
export interface Clock {
  now(): number;
}

/** What a `clock` option must be. */
export const clockOption = handle<Clock>(
  'an object with a now() method',
  (value) => typeof (value as Clock | null)?.now === 'function',
);

/**
 * The longest delay a timer takes: Node fires a timer armed for longer after 1 ms (2^31 - 1 ms, about
 * 24.8 days). A longer wait is armed for this long, then again for the rest.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** `ms` as a delay a timer keeps: at most {@link MAX_TIMER_MS}. */
export function timerDelay(ms: number): number {
  return Math.min(ms, MAX_TIMER_MS);
}

/**
 * Waits `ms` on the runtime's timers, however long: past {@link MAX_TIMER_MS}, in parts. An abort of
 * `signal` ends the wait at once and clears its timer, so nothing is left to keep the process alive.
 */
export function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stop = (): void => {
      clearTimeout(timer);
      resolve();
    };
    signal?.addEventListener('abort', stop, { once: true });
    const arm = (left: number): void => {
      timer = setTimeout(() => {
        if (left > MAX_TIMER_MS) return arm(left - MAX_TIMER_MS);
        signal?.removeEventListener('abort', stop);
        resolve();
      }, timerDelay(left));
    };
    arm(ms);
  });
}

/** The real clock: `Date.now()`. */
export const systemClock: Clock = Object.freeze({ now: () => Date.now() });

/**
 * A clock that only moves when told to, for tests and simulations. Bad values are refused with a
 * GuardrailValidationError, and a refused change leaves the time as it was.
 *
 * @example
 * const clock = new ManualClock(Date.parse('2026-11-30T10:00:00Z'));
 * clock.advance(61_000); // a minute and a second later
 */
export class ManualClock implements Clock {
  #ms: number;

  constructor(startMs = 0) {
    this.#ms = ManualClock.#valid(startMs, 'startMs');
  }

  now(): number {
    return this.#ms;
  }

  /** Moves the clock forward by `ms` (>= 0). */
  advance(ms: number): void {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) invalid('ms', 'a finite number >= 0', ms);
    this.#ms = ManualClock.#valid(this.#ms + ms, 'the advanced time');
  }

  /** Sets the clock to `ms` epoch milliseconds. */
  set(ms: number): void {
    this.#ms = ManualClock.#valid(ms, 'ms');
  }

  static #valid(ms: number, name: string): number {
    if (typeof ms !== 'number' || !Number.isFinite(ms)) invalid(name, 'a finite number', ms);
    return ms;
  }
}
