import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AutonomyGuardrails,
  AutonomyGuardrailService,
  EVENT_INFO,
  GuardrailValidationError,
  ManualClock,
  type GuardrailEventType,
  type GuardrailsInit,
} from '../src/index.js';

const T_MIN = Date.parse('2000-01-01T00:00:00.000Z');
const T_MAX = Date.parse('2100-01-01T00:00:00.000Z');
const LIMITS = {
  maxAuditEntries: 20,
  maxRequiredConfirmations: 5,
  maxOperationNameLength: 12,
  maxDetailsBytes: 256,
  maxTotalBytes: 1_000_000,
};
const EVENT_TYPES = Object.keys(EVENT_INFO) as GuardrailEventType[];
const OPERATIONS = ['deploy', 'Delete', ' pay ', 'ＳＥＮＤ', 'email', 'shutdown'];

type Mutable = Record<string, unknown> | unknown[];

// ---- arbitraries -------------------------------------------------------------------------------------

const nullable = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | null> => fc.option(arb, { nil: null });
const amount = fc.integer({ min: 0, max: 50_000_000 }).map((micros) => micros / 1_000_000);
const isoTime = fc.integer({ min: T_MIN, max: T_MAX }).map((ms) => new Date(ms).toISOString());

/** Values that break a field: wrong types, non-finite and out-of-range numbers, words of the schema. */
const hostile: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(
    Number.NaN,
    Number.POSITIVE_INFINITY,
    -1,
    -0,
    0,
    0.5,
    1.5,
    2 ** 53,
    1e300,
    '',
    '1',
    'allowed',
    'denied',
    'step_allowed',
    'step_limit',
    '2026-02-30T10:00:00Z',
    '2026-11-30T10:00:00',
    'de\u200bploy',
    [],
    {},
    null,
  ),
);

const wireEntry = fc
  .record({
    eventType: fc.constantFrom(...EVENT_TYPES),
    timestamp: isoTime,
    details: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
  })
  .map(({ eventType, timestamp, details }) => ({
    event_type: eventType,
    guard_name: EVENT_INFO[eventType].guardName,
    result: EVENT_INFO[eventType].result,
    timestamp,
    details,
  }));

/** Valid wire metadata (DESIGN.md §3), though details may exceed the small size limit. */
const validWire = fc
  .record({
    guardrails: fc.record({
      max_steps: nullable(fc.integer({ min: 1, max: 1000 })),
      tool_budget: nullable(amount),
      required_confirmations: fc.uniqueArray(fc.constantFrom(...OPERATIONS), { maxLength: 5 }),
      max_wall_clock_seconds: nullable(fc.double({ min: 0.001, max: 1e6, noNaN: true })),
      start_time: nullable(isoTime),
      actor_limits: fc.record({
        max_tool_calls_per_invocation: nullable(fc.integer({ min: 1, max: 100 })),
        max_retries_per_failure: nullable(fc.integer({ min: 0, max: 100 })),
      }),
      step_count: fc.nat({ max: 1000 }),
      budget_spent: amount,
    }),
    maxEntries: fc.integer({ min: 1, max: LIMITS.maxAuditEntries }),
    entries: fc.array(wireEntry, { maxLength: LIMITS.maxAuditEntries }),
  })
  .map(({ guardrails, maxEntries, entries }) => {
    const kept = entries.slice(0, maxEntries);
    const allowed = kept.filter((e) => e.result === 'allowed').length;
    return {
      owner: 'ops',
      autonomy_guardrails: {
        schema_version: 1,
        guardrails,
        audit_trail: {
          max_entries: maxEntries,
          allowed_count: allowed,
          denied_count: kept.length - allowed,
          entries: kept,
        },
      },
    };
  });

/** Valid camelCase init for {@link AutonomyGuardrails.create}. */
const validInit = fc.record(
  {
    maxSteps: nullable(fc.integer({ min: 1, max: 1000 })),
    toolBudget: nullable(amount),
    requiredConfirmations: fc.uniqueArray(fc.constantFrom(...OPERATIONS), { maxLength: 5 }),
    maxWallClockSeconds: nullable(fc.double({ min: 0.001, max: 1e6, noNaN: true })),
    startTime: nullable(isoTime),
    actorLimits: fc.record(
      {
        maxToolCallsPerInvocation: nullable(fc.integer({ min: 1, max: 100 })),
        maxRetriesPerFailure: nullable(fc.integer({ min: 0, max: 100 })),
      },
      { requiredKeys: [] },
    ),
    stepCount: fc.nat({ max: 1000 }),
    budgetSpent: amount,
  },
  { requiredKeys: [] },
);

type Mutation =
  | { kind: 'delete'; at: number }
  | { kind: 'replace'; at: number; value: unknown }
  | { kind: 'add'; at: number; key: string; value: unknown };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), value: hostile }),
  fc.record({
    kind: fc.constant('add' as const),
    at: fc.nat(),
    key: fc.constantFrom('extra', '__proto__', 'constructor', 'toString', 'max_steps', 'result', 'details'),
    value: hostile,
  }),
);

/** Every (container, key) slot in a JSON-like value, depth first. */
function slots(value: unknown): [Mutable, string | number][] {
  const out: [Mutable, string | number][] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) {
      v.forEach((item, i) => {
        out.push([v, i]);
        walk(item);
      });
    } else if (typeof v === 'object' && v !== null) {
      for (const key of Object.keys(v)) {
        out.push([v as Record<string, unknown>, key]);
        walk((v as Record<string, unknown>)[key]);
      }
    }
  };
  walk(value);
  return out;
}

function containers(value: unknown): Mutable[] {
  const found: Mutable[] = typeof value === 'object' && value !== null ? [value as Mutable] : [];
  for (const [parent, key] of slots(value)) {
    const child = (parent as Record<string, unknown>)[key as string];
    if (typeof child === 'object' && child !== null) found.push(child as Mutable);
  }
  return found;
}

function setOwn(target: Mutable, key: string | number, value: unknown): void {
  const data = { value: structuredClone(value), enumerable: true, writable: true, configurable: true };
  Object.defineProperty(target, key, data);
}

/**
 * Applies mutations to a deep copy, keeping it what JSON.parse could build: own keys, no array holes, no
 * shared or cyclic objects (inserted values are copied; constants such as `{}` are one shared instance).
 */
function mutate<T>(value: T, mutations: readonly Mutation[]): unknown {
  const copy: unknown = structuredClone(value);
  for (const m of mutations) {
    if (m.kind === 'add') {
      const all = containers(copy);
      const target = all[m.at % all.length];
      if (target === undefined) continue;
      const key = Array.isArray(target) ? target.length : m.key;
      setOwn(target, key, m.value);
      continue;
    }
    const all = slots(copy);
    const slot = all[m.at % all.length];
    if (slot === undefined) continue;
    const [parent, key] = slot;
    if (m.kind === 'replace') {
      setOwn(parent, key, m.value);
    } else if (Array.isArray(parent)) {
      parent.splice(key as number, 1);
    } else {
      delete parent[key as string];
    }
  }
  return copy;
}

// ---- helpers -----------------------------------------------------------------------------------------

function newService(auditCapacity = LIMITS.maxAuditEntries, startMs = T_MIN) {
  const clock = new ManualClock(startMs);
  return { clock, service: new AutonomyGuardrailService({ clock, metadataLimits: LIMITS, auditCapacity }) };
}

function rethrowUnlessValidation(e: unknown): void {
  if (!(e instanceof GuardrailValidationError)) throw e;
}

/**
 * Loads `value`; an accepted value must give guardrails whose metadata loads again to the same metadata,
 * a refused one must leave the plan unconfigured.
 */
async function loadsOrRefuses(value: unknown): Promise<void> {
  const { service } = newService();
  let loaded: AutonomyGuardrails | undefined;
  try {
    loaded = await service.loadFromMetadata('plan', value);
  } catch (e) {
    rethrowUnlessValidation(e);
    expect(await service.getGuardrails('plan')).toBeNull();
    return;
  }
  expect(loaded).toBeInstanceOf(AutonomyGuardrails);
  // Compared as JSON text: details may hold a -0 (JSON writes 0) or an own "constructor" key (which
  // toStrictEqual would read as the object's class).
  const written = JSON.stringify(await service.toMetadata('plan'));
  await service.loadFromMetadata('again', JSON.parse(written));
  expect(JSON.stringify(await service.toMetadata('again'))).toBe(written);
}

function createsOrRefuses(value: unknown): void {
  let g: AutonomyGuardrails;
  try {
    g = AutonomyGuardrails.create(value as GuardrailsInit);
  } catch (e) {
    rethrowUnlessValidation(e);
    return;
  }
  const written = JSON.stringify(g);
  expect(JSON.stringify(AutonomyGuardrails.fromJSON(JSON.parse(written)))).toBe(written);
}

// ---- properties --------------------------------------------------------------------------------------

describe('loadFromMetadata on untrusted input', () => {
  it('loads or refuses with a GuardrailValidationError any JSON value', async () => {
    await fc.assert(fc.asyncProperty(fc.jsonValue(), loadsOrRefuses), { numRuns: 200 });
  });

  it('loads or refuses with a GuardrailValidationError any JSON value under autonomy_guardrails', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), (v) => loadsOrRefuses({ autonomy_guardrails: v })),
      { numRuns: 200 },
    );
  });

  it('loads valid metadata', async () => {
    const small = validWire.filter((w) =>
      w.autonomy_guardrails.audit_trail.entries.every(
        (e) => Buffer.byteLength(JSON.stringify(e.details)) <= LIMITS.maxDetailsBytes,
      ),
    );
    await fc.assert(
      fc.asyncProperty(small, async (w) => {
        const { service } = newService();
        await service.loadFromMetadata('plan', w);
        expect((await service.getAuditTrail('plan'))?.size).toBe(
          w.autonomy_guardrails.audit_trail.entries.length,
        );
      }),
      { numRuns: 100 },
    );
  });

  it('loads or refuses with a GuardrailValidationError valid metadata with random damage', async () => {
    await fc.assert(
      fc.asyncProperty(validWire, fc.array(mutation, { minLength: 1, maxLength: 3 }), (w, ms) =>
        loadsOrRefuses(mutate(w, ms)),
      ),
      { numRuns: 500 },
    );
  });
});

describe('AutonomyGuardrails.create on untrusted input', () => {
  it('creates or refuses with a GuardrailValidationError any JSON value', () => {
    fc.assert(fc.property(fc.jsonValue(), createsOrRefuses), { numRuns: 300 });
  });

  it('creates or refuses with a GuardrailValidationError any value at all', () => {
    fc.assert(fc.property(fc.anything(), createsOrRefuses), { numRuns: 300 });
  });

  it('creates guardrails from any valid init', () => {
    fc.assert(
      fc.property(validInit, (init) => {
        expect(AutonomyGuardrails.create(init)).toBeInstanceOf(AutonomyGuardrails);
      }),
      { numRuns: 100 },
    );
  });

  it('creates or refuses with a GuardrailValidationError a valid init with random damage', () => {
    fc.assert(
      fc.property(validInit, fc.array(mutation, { minLength: 1, maxLength: 3 }), (init, ms) =>
        createsOrRefuses(mutate(init, ms)),
      ),
      { numRuns: 500 },
    );
  });
});

// ---- round trip --------------------------------------------------------------------------------------

type Command =
  | { op: 'checkStepLimit'; n: number }
  | { op: 'takeStep' }
  | { op: 'checkToolBudget'; cost: number }
  | { op: 'checkConfirmation'; operation: string }
  | { op: 'checkWallClock' }
  | { op: 'checkActorToolCalls'; n: number }
  | { op: 'checkRetries'; n: number }
  | { op: 'markStarted' }
  | { op: 'advance'; ms: number };

const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({ op: fc.constant('checkStepLimit' as const), n: fc.nat({ max: 1200 }) }),
  fc.record({ op: fc.constant('takeStep' as const) }),
  fc.record({
    op: fc.constant('checkToolBudget' as const),
    cost: fc.integer({ min: 0, max: 5_000_000 }).map((m) => m / 1_000_000),
  }),
  fc.record({
    op: fc.constant('checkConfirmation' as const),
    operation: fc.constantFrom(...OPERATIONS, 'read'),
  }),
  fc.record({ op: fc.constant('checkWallClock' as const) }),
  fc.record({ op: fc.constant('checkActorToolCalls' as const), n: fc.nat({ max: 120 }) }),
  fc.record({ op: fc.constant('checkRetries' as const), n: fc.nat({ max: 120 }) }),
  fc.record({ op: fc.constant('markStarted' as const) }),
  fc.record({ op: fc.constant('advance' as const), ms: fc.nat({ max: 10_000_000 }) }),
);

async function run(service: AutonomyGuardrailService, clock: ManualClock, c: Command): Promise<void> {
  switch (c.op) {
    case 'checkStepLimit':
      await service.checkStepLimit('plan', c.n);
      return;
    case 'takeStep':
      await service.takeStep('plan');
      return;
    case 'checkToolBudget':
      await service.checkToolBudget('plan', c.cost);
      return;
    case 'checkConfirmation':
      await service.checkConfirmation('plan', c.operation);
      return;
    case 'checkWallClock':
      await service.checkWallClock('plan');
      return;
    case 'checkActorToolCalls':
      await service.checkActorToolCalls('plan', c.n);
      return;
    case 'checkRetries':
      await service.checkRetries('plan', c.n);
      return;
    case 'markStarted':
      await service.markStarted('plan');
      return;
    case 'advance':
      clock.advance(c.ms);
      return;
  }
}

describe('metadata round trip', () => {
  it('restores in another plan the metadata toMetadata wrote, after any sequence of checks', async () => {
    await fc.assert(
      fc.asyncProperty(
        validInit,
        fc.integer({ min: 1, max: LIMITS.maxAuditEntries }),
        fc.integer({ min: T_MIN, max: T_MAX }),
        fc.array(command, { maxLength: 30 }),
        async (init, capacity, startMs, commands) => {
          const { service, clock } = newService(capacity, startMs);
          await service.configureGuardrails('plan', init);
          for (const c of commands) await run(service, clock, c);

          const written = await service.toMetadata('plan', { owner: 'ops' });
          const restored = newService(capacity).service;
          await restored.loadFromMetadata('copy', JSON.parse(JSON.stringify(written)));

          expect(await restored.toMetadata('copy', { owner: 'ops' })).toStrictEqual(written);
        },
      ),
      { numRuns: 150 },
    );
  });
});
