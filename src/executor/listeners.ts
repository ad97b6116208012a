import { invalid } from '../errors.js';
import type { ExecutorEvents } from './types.js';

// Who listens to an executor's progress. Events are frozen; a listener that throws is ignored, so
// reporting can never break a run.

/** Every event an executor emits, in the order a run meets them. */
export const EXECUTOR_EVENTS: readonly (keyof ExecutorEvents)[] = [
  'started',
  'decision',
  'violation',
  'awaiting_confirmation',
  'completed',
];

export type Listener<K extends keyof ExecutorEvents> = (event: ExecutorEvents[K]) => void;

export class Listeners {
  readonly #byEvent = new Map<keyof ExecutorEvents, Set<(e: never) => void>>();

  /** Adds `listener` to `event`; returns a function that removes it. */
  add<K extends keyof ExecutorEvents>(event: K, listener: Listener<K>): () => void {
    if (!EXECUTOR_EVENTS.includes(event)) invalid('event', `one of ${EXECUTOR_EVENTS.join(', ')}`, event);
    const set = this.#byEvent.get(event) ?? new Set();
    this.#byEvent.set(event, set);
    set.add(listener as (e: never) => void);
    return () => void set.delete(listener as (e: never) => void);
  }

  /** Whether anyone listens to `event`. */
  listening(event: keyof ExecutorEvents): boolean {
    return (this.#byEvent.get(event)?.size ?? 0) > 0;
  }

  emit<K extends keyof ExecutorEvents>(event: K, payload: ExecutorEvents[K]): void {
    const listeners = this.#byEvent.get(event);
    if (!listeners || listeners.size === 0) return;
    const frozen = Object.freeze(payload);
    for (const listener of listeners) {
      try {
        (listener as Listener<K>)(frozen as ExecutorEvents[K]);
      } catch {
        // Reporting must never break a run.
      }
    }
  }
}
