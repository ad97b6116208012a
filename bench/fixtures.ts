import { RateLimiterMemory } from 'rate-limiter-flexible';
import {
  AuditEntry,
  AuditTrail,
  AutonomyGuardrails,
  AutonomyGuardrailService,
  GuardrailEventType,
  ManualClock,
  MemoryStore,
  type Clock,
  type GuardrailsInit,
} from '../src/index.js';

export const PLAN_ID = 'bench-plan';
export const START_ISO = '2026-11-30T10:00:00.000Z';
export const START_MS = Date.parse(START_ISO);

/** Limits far enough away that no timed call is ever denied by running out. */
export const ROOMY_LIMITS: GuardrailsInit = Object.freeze({
  maxSteps: 1_000_000_000,
  toolBudget: 1_000_000_000,
  requiredConfirmations: ['deploy', 'delete_database', 'send_email'],
  maxWallClockSeconds: 86_400,
  startTime: START_ISO,
  actorLimits: { maxToolCallsPerInvocation: 1_000, maxRetriesPerFailure: 5 },
});

export function benchGuardrails(): AutonomyGuardrails {
  return AutonomyGuardrails.create(ROOMY_LIMITS);
}

export function fail(message: string): never {
  throw new Error(`bench fixture: ${message}`);
}

/**
 * A service with one configured plan. `keepLog: false` (the default here) is the service's own default
 * store, which keeps the bounded window only; with true a MemoryStore keeps every entry for the log.
 */
export async function benchService(
  clock: Clock,
  auditCapacity?: number,
  keepLog = false,
): Promise<{ service: AutonomyGuardrailService; clock: Clock }> {
  const capacity = auditCapacity === undefined ? {} : { auditCapacity };
  const service = keepLog
    ? new AutonomyGuardrailService({ clock, store: new MemoryStore({ ...capacity, keepLog }) })
    : new AutonomyGuardrailService({ clock, ...capacity });
  await service.configureGuardrails(PLAN_ID, ROOMY_LIMITS);
  return { service, clock };
}

/** A limiter with so many points and so long a window that `consume` always resolves. */
export async function benchLimiter(): Promise<RateLimiterMemory> {
  const limiter = new RateLimiterMemory({ points: Number.MAX_SAFE_INTEGER, duration: 3_600 });
  const res = await limiter.consume(PLAN_ID, 1);
  if (res.remainingPoints <= 0) fail('RateLimiterMemory would reject');
  return limiter;
}

/**
 * A plan whose audit trail holds exactly `entries` entries, written through the service's own checks
 * (every guard, allowed and denied), a quarter of a second apart.
 */
export async function serviceWithFullTrail(entries: number): Promise<AutonomyGuardrailService> {
  const clock = new ManualClock(START_MS);
  const { service } = await benchService(clock, entries);
  const checks: readonly ((i: number) => Promise<unknown>)[] = [
    (i) => service.checkStepLimit(PLAN_ID, i),
    () => service.checkToolBudget(PLAN_ID, 0.125),
    (i) => service.checkConfirmation(PLAN_ID, i % 2 === 0 ? 'deploy' : 'read_file'),
    () => service.checkWallClock(PLAN_ID),
    (i) => service.checkActorToolCalls(PLAN_ID, i % 1_500),
    (i) => service.checkRetries(PLAN_ID, i % 8),
  ];
  for (let i = 0; i < entries; i++) {
    clock.advance(250);
    await (checks[i % checks.length] ?? fail('no check'))(i);
  }
  const trail = await service.getAuditTrail(PLAN_ID);
  if (trail?.size !== entries) fail(`expected ${entries} audit entries, got ${trail?.size}`);
  if (trail.deniedCount === 0) fail('expected some denied entries in the trail');
  return service;
}

/** `toMetadata` → `JSON.stringify` → `JSON.parse` → `loadFromMetadata`; returns the JSON's length. */
export async function metadataRoundTrip(service: AutonomyGuardrailService): Promise<number> {
  const metadata = await service.toMetadata(PLAN_ID, { owner: 'bench' });
  const json = JSON.stringify(metadata);
  const parsed: unknown = JSON.parse(json);
  await service.loadFromMetadata(PLAN_ID, parsed);
  return json.length;
}

function stepEntries(count: number, firstTimestamp: number): AuditEntry[] {
  const entries: AuditEntry[] = [];
  for (let i = 0; i < count; i++) {
    const denied = i % 4 === 3;
    entries.push(
      AuditEntry.create({
        eventType: denied ? GuardrailEventType.STEP_BLOCKED : GuardrailEventType.STEP_ALLOWED,
        guardName: 'step_limit',
        timestamp: firstTimestamp + i,
        details: { step: i, limit: 1_000_000 },
      }),
    );
  }
  return entries;
}

/** How many ready-made entries the append benchmarks cycle through: few enough to stay in cache. */
export const HOT_ENTRIES = 1_024;

/**
 * A trail filled to capacity with distinct entries (so every add evicts), the entries it was filled
 * with in insertion order, and {@link HOT_ENTRIES} further entries to append.
 */
export function fullTrail(capacity: number): {
  trail: AuditTrail;
  filledWith: AuditEntry[];
  hot: AuditEntry[];
} {
  const filledWith = stepEntries(capacity, START_MS);
  const trail = new AuditTrail({ maxEntries: capacity });
  for (const entry of filledWith) trail.add(entry);
  if (trail.size !== capacity) fail(`trail of capacity ${capacity} holds ${trail.size}`);
  return { trail, filledWith, hot: stepEntries(HOT_ENTRIES, START_MS + capacity) };
}
