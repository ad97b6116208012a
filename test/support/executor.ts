import {
  AutonomyGuardrailService,
  GuardrailValidationError,
  ManualClock,
  MemoryStore,
  PlanExecutor,
  type AutonomyGuardrails,
  type Decision,
  type GuardrailsInit,
  type GuardrailStore,
  type JsonValue,
  type Plan,
  type PlanExecutorOptions,
  type Timers,
  type Tool,
  type ToolContext,
} from '../../src/index.js';

export const T0 = Date.parse('2026-11-30T10:00:00.000Z');
export const T0_ISO = '2026-11-30T10:00:00.000Z';
export const PLAN_ID = 'plan';

/** Timers that fire only when told to; each call of setTimeout is kept with its delay. */
export class FakeTimers implements Timers {
  readonly armed: { fn: () => void; ms: number; cleared: boolean }[] = [];

  setTimeout(fn: () => void, ms: number): unknown {
    const timer = { fn, ms, cleared: false };
    this.armed.push(timer);
    return timer;
  }

  clearTimeout(handle: unknown): void {
    const timer = this.armed.find((t) => t === handle);
    if (timer) timer.cleared = true;
  }

  /** Timers armed and not cleared. */
  get pending(): { fn: () => void; ms: number; cleared: boolean }[] {
    return this.armed.filter((t) => !t.cleared);
  }

  /** Fires every pending timer once. */
  fire(): void {
    for (const timer of this.pending) {
      timer.cleared = true;
      timer.fn();
    }
  }
}

/** A sleep that records each delay and moves the clock forward by it instead of waiting. */
export function recordingSleep(clock: ManualClock | null): {
  delays: number[];
  sleep: (ms: number) => Promise<void>;
} {
  const delays: number[] = [];
  return {
    delays,
    sleep: async (ms) => {
      delays.push(ms);
      clock?.advance(ms);
    },
  };
}

export interface Harness {
  clock: ManualClock;
  store: GuardrailStore;
  service: AutonomyGuardrailService;
  executor: PlanExecutor;
  timers: FakeTimers;
  delays: number[];
}

export interface HarnessOptions extends Omit<PlanExecutorOptions, 'service' | 'tools' | 'clock'> {
  /** The service's clock; a new one at T0 by default. */
  clock?: ManualClock;
  /** The service's store; a new MemoryStore by default. */
  store?: GuardrailStore;
  /** Guardrails for PLAN_ID; null leaves the plan unconfigured. */
  guardrails?: GuardrailsInit | null;
  unconfiguredPlans?: 'allow' | 'deny';
}

/**
 * A service on a ManualClock at T0 with deterministic approval ids, and an executor over `tools` with
 * fake timers and a sleep that records its delays and advances the clock.
 */
export async function harness(tools: readonly Tool[], options: HarnessOptions = {}): Promise<Harness> {
  const {
    guardrails = {},
    unconfiguredPlans,
    clock = new ManualClock(T0),
    store = new MemoryStore(),
    ...executorOptions
  } = options;
  let next = 0;
  const service = new AutonomyGuardrailService({
    store,
    clock,
    ids: () => `approval-${++next}`,
    ...(unconfiguredPlans === undefined ? {} : { unconfiguredPlans }),
  });
  if (guardrails !== null) await service.configureGuardrails(PLAN_ID, guardrails);
  const timers = new FakeTimers();
  const { delays, sleep } = recordingSleep(clock);
  const executor = new PlanExecutor({ service, tools, timers, sleep, ...executorOptions });
  return { clock, store, service, executor, timers, delays };
}

/** A plan in phase `execute` with no metadata. */
export function planOf(decisions: readonly Decision[], id = PLAN_ID): Plan {
  return { id, phase: 'execute', decisions, metadata: {} };
}

/** `n` decisions d1…dn calling `tool` with input { n: i }. */
export function decisions(n: number, tool = 'echo'): Decision[] {
  return Array.from({ length: n }, (_, i) => ({ id: `d${i + 1}`, tool, input: { n: i + 1 } }));
}

/** A tool that returns its input. */
export const echo: Tool = { name: 'echo', description: 'returns its input', run: (input) => input };

/** A tool named `name` that returns its input, with the given extra fields. */
export function tool(
  name: string,
  extra: Partial<Omit<Tool, 'name'>> = {},
): Tool & { calls: (JsonValue | undefined)[] } {
  const calls: (JsonValue | undefined)[] = [];
  const run = extra.run;
  return {
    description: `the ${name} tool`,
    ...extra,
    name,
    calls,
    run: (input: JsonValue | undefined, ctx: ToolContext) => {
      calls.push(input);
      return run ? run(input, ctx) : input;
    },
  };
}

/** The event types of the plan's audit trail, oldest first. */
export async function eventsOf(service: AutonomyGuardrailService, planId = PLAN_ID): Promise<string[]> {
  const trail = await service.getAuditTrail(planId);
  if (!trail) throw new Error(`plan ${planId} should have an audit trail`);
  return trail.entries.map((e) => e.eventType);
}

/** The details of the plan's audit entries of one event type, oldest first. */
export async function detailsOf(
  service: AutonomyGuardrailService,
  eventType: string,
  planId = PLAN_ID,
): Promise<Record<string, unknown>[]> {
  const trail = await service.getAuditTrail(planId);
  if (!trail) throw new Error(`plan ${planId} should have an audit trail`);
  return trail.entries.filter((e) => e.eventType === eventType).map((e) => ({ ...e.details }));
}

export async function guardrailsOf(
  service: AutonomyGuardrailService,
  planId = PLAN_ID,
): Promise<AutonomyGuardrails> {
  const g = await service.getGuardrails(planId);
  if (!g) throw new Error(`plan ${planId} should have guardrails`);
  return g;
}

/** The GuardrailValidationError `promise` rejects with; fails the test otherwise. */
export async function rejection(promise: Promise<unknown>): Promise<GuardrailValidationError> {
  try {
    await promise;
  } catch (e) {
    if (e instanceof GuardrailValidationError) return e;
    throw e;
  }
  throw new Error('expected a GuardrailValidationError, the promise resolved');
}

/** A promise with its resolve and reject handles. */
export function deferred<T = void>(): {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
} {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** The number under `key` of a JSON object input. */
export function numberIn(input: JsonValue | undefined, key: string): number {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new Error('input must be an object');
  }
  const value = (input as { readonly [k: string]: JsonValue })[key];
  if (typeof value !== 'number') throw new Error(`input.${key} must be a number`);
  return value;
}

/** The executor's progress as saved in the plan's metadata. */
export function progressOf(plan: Plan): Record<string, unknown> {
  const progress = plan.metadata['leash_execution'];
  if (typeof progress !== 'object' || progress === null) throw new Error('plan has no saved progress');
  return progress as Record<string, unknown>;
}
