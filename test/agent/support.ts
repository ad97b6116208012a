import { vi } from 'vitest';
import {
  AutonomyGuardrailService,
  GuardrailError,
  ManualClock,
  RunGuard,
  type AutonomyGuardrailServiceOptions,
  type GuardrailsInit,
  type GuardrailStore,
  type RunGuardOptions,
} from '../../src/index.js';
import { FakeTimers } from '../support/executor.js';
import { LOCAL_STORES, T0, trailOf } from '../support/service.js';

export { FakeTimers, LOCAL_STORES, T0 };

export const PLAN = 'plan';

export type GuardOptions = Partial<Omit<RunGuardOptions, 'service' | 'planId'>>;

/** Options of the service {@link guarded} makes, but those it sets. */
export type ServiceOptions = Partial<Omit<AutonomyGuardrailServiceOptions, 'store' | 'clock' | 'ids'>>;

/**
 * A RunGuard over a service on `store` (with `serviceOptions`), a ManualClock at T0, approval ids a1,
 * a2, …, fake timers and a sleep that only records its delays; `plan` configured by `init`.
 */
export async function guarded(
  makeStore: () => Promise<GuardrailStore>,
  init: GuardrailsInit,
  options: GuardOptions = {},
  serviceOptions: ServiceOptions = {},
) {
  const clock = new ManualClock(T0);
  let n = 0;
  const service = new AutonomyGuardrailService({
    ...serviceOptions,
    store: await makeStore(),
    clock,
    ids: () => `a${++n}`,
  });
  await service.configureGuardrails(PLAN, init);
  const timers = new FakeTimers();
  const delays: number[] = [];
  const guard = new RunGuard({
    service,
    planId: PLAN,
    timers,
    sleep: async (ms) => void delays.push(ms),
    ...options,
  });
  return { clock, service, guard, timers, delays };
}

/** The event types of the plan's audit log, oldest first. */
export async function eventTypes(service: AutonomyGuardrailService): Promise<string[]> {
  return (await trailOf(service, PLAN)).entries.map((e) => e.eventType);
}

/** A run function that counts its calls and returns `output`. */
export function counted<T>(output: T): { calls: number; run: () => T } {
  const c = {
    calls: 0,
    run: () => {
      c.calls++;
      return output;
    },
  };
  return c;
}

/** Lets pending promise callbacks run until `ready` holds (bounded, with no timers). */
export async function settledUntil(ready: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !ready(); i++) await new Promise<void>((r) => setImmediate(r));
  if (!ready()) throw new Error('the condition never held');
}

/** A run that never settles, keeping the signal it was given (`signal()`), as a hung call would. */
export function hanging(): {
  run: (ctx: { signal: AbortSignal }) => Promise<never>;
  signal: () => AbortSignal | undefined;
} {
  let seen: AbortSignal | undefined;
  return {
    run: (ctx) => {
      seen = ctx.signal;
      return new Promise<never>(() => undefined);
    },
    signal: () => seen,
  };
}

/** Makes the service's next wall-clock check fail as a store out of reach does; returns that error. */
export function clockLostOnce(service: AutonomyGuardrailService): GuardrailError {
  const lost = new GuardrailError('STORE_UNAVAILABLE', 'connect ECONNREFUSED 127.0.0.1:5432');
  vi.spyOn(service, 'checkWallClock').mockRejectedValueOnce(lost);
  return lost;
}
