import type { Tool, ToolContext } from '../../executor/tools.js';
import type { JsonValue } from '../../json.js';
import { validateToolInput } from '../planFile.js';

/** Waits `ms` milliseconds; rejects with the signal's reason as soon as it aborts. */
export type SleepFunction = (ms: number, signal: AbortSignal) => Promise<void>;

/** Options of {@link sleepTool}. */
export interface SleepToolOptions {
  /** Default: a real timer, cancelled when the signal aborts. Inject one in tests. */
  readonly sleep?: SleepFunction;
}

/** What a sleep step returns. */
export interface SleepOutput {
  readonly slept_ms: number;
}

/** A real timer that stops waiting, and rejects with the signal's reason, when the signal aborts. */
export const realSleep: SleepFunction = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });

/**
 * The `sleep` tool: waits `seconds` (at most a day), for a deployment to settle or a rate limit to pass.
 * The wait ends early, and the step fails, when the run's signal aborts (its wall-clock limit ran out).
 */
export function sleepTool(options: SleepToolOptions = {}): Tool {
  const sleep = options.sleep ?? realSleep;
  return Object.freeze({
    name: 'sleep',
    description: 'Waits a number of seconds.',
    async run(raw: JsonValue | undefined, ctx: ToolContext): Promise<SleepOutput> {
      const input = validateToolInput('sleep', raw);
      ctx.signal.throwIfAborted();
      const ms = Math.round(input.seconds * 1000);
      await sleep(ms, ctx.signal);
      return Object.freeze({ slept_ms: ms });
    },
  });
}
