import { GuardrailError, invalid } from '../errors.js';
import { objectWithKeys } from '../guardrails/validate.js';
import type { Sleep } from '../agent/retries.js';
import { isAbortSignal } from '../signals.js';
import type { RunOptions } from './types.js';

// Runs interrupted through a signal: the signal of a run, the error it ends with, the wait it cuts short.

export function runSignal(options: RunOptions): AbortSignal | null {
  const o = objectWithKeys(options, 'options', ['signal']);
  const signal = o['signal'];
  if (signal === undefined) return null;
  if (!isAbortSignal(signal)) invalid('options.signal', 'an AbortSignal', signal);
  return signal;
}

/** The error of a run interrupted through its signal. */
export function interrupted(signal: AbortSignal): GuardrailError {
  const why = signal.reason instanceof Error ? `: ${signal.reason.message}` : '';
  return new GuardrailError('RUN_INTERRUPTED', `the run was interrupted${why}`, { cause: signal.reason });
}

/**
 * Rejects with the run's interruption once `signal` aborts (at once when it has), after calling
 * `onAbort`; `unlisten` stops listening once the wait it bounds is over.
 */
export function untilInterrupted(
  signal: AbortSignal,
  onAbort: (why: GuardrailError) => void = () => undefined,
): { stopped: Promise<never>; unlisten: () => void } {
  let unlisten = (): void => {};
  const stopped = new Promise<never>((_, reject) => {
    const stop = (): void => {
      const why = interrupted(signal);
      onAbort(why);
      reject(why);
    };
    if (signal.aborted) return stop();
    signal.addEventListener('abort', stop, { once: true });
    unlisten = () => signal.removeEventListener('abort', stop);
  });
  stopped.catch(() => undefined);
  return { stopped, unlisten };
}

/** The signal of tools that cannot be aborted: no wall-clock limit is running. */
export const QUIET: AbortSignal = new AbortController().signal;

/**
 * Waits out a retry's backoff; an interruption ends the wait, and the run, at once: resolves with the
 * interruption's error then (no other try), else null.
 */
export async function backoff(
  sleep: Sleep,
  ms: number,
  signal: AbortSignal | null,
): Promise<GuardrailError | null> {
  if (signal === null) {
    await sleep(ms);
    return null;
  }
  if (!signal.aborted) {
    const interruption = untilInterrupted(signal);
    try {
      await Promise.race([sleep(ms, signal), interruption.stopped]);
    } catch (error) {
      if (!signal.aborted) throw error; // the sleep's own failure
    } finally {
      interruption.unlisten();
    }
  }
  return signal.aborted ? interrupted(signal) : null;
}
