import { expect } from 'vitest';
import {
  AuditEntry,
  AutonomyGuardrailService,
  GuardrailValidationError,
  ManualClock,
  MemoryStore,
  SqliteStore,
  type AutonomyGuardrailServiceOptions,
  type GuardrailsInit,
  type GuardrailStore,
  type PlanChangeFn,
  type UpdateOptions,
} from '../../src/index.js';

export const T0 = Date.parse('2026-11-30T10:00:00.000Z');
export const T0_ISO = '2026-11-30T10:00:00.000Z';

/** An allowed step check at T0 + `i` ms, its details `{ i }`: an entry a store test can tell apart. */
export function stepEntry(i: number): AuditEntry {
  return AuditEntry.create({
    eventType: 'step_allowed',
    guardName: 'step_limit',
    timestamp: T0 + i,
    details: { i },
  });
}

/** A service on a ManualClock at T0 with `plan` configured by `init`. */
export async function configured(init: GuardrailsInit, options: AutonomyGuardrailServiceOptions = {}) {
  const clock = new ManualClock(T0);
  const service = new AutonomyGuardrailService({ clock, ...options });
  await service.configureGuardrails('plan', init);
  return { clock, service };
}

/** The `field` of the GuardrailValidationError a call throws or rejects with. */
export async function rejectedField(
  call: Promise<unknown> | (() => Promise<unknown>),
): Promise<string | undefined> {
  try {
    await (typeof call === 'function' ? call() : call);
  } catch (e) {
    expect(e).toBeInstanceOf(GuardrailValidationError);
    return (e as GuardrailValidationError).field;
  }
  throw new Error('expected a GuardrailValidationError, the call succeeded');
}

export async function trailOf(service: AutonomyGuardrailService, planId = 'plan') {
  const trail = await service.getAuditTrail(planId);
  if (!trail) throw new Error(`plan ${planId} should have an audit trail`);
  return trail;
}

export async function guardrailsOf(service: AutonomyGuardrailService, planId = 'plan') {
  const g = await service.getGuardrails(planId);
  if (!g) throw new Error(`plan ${planId} should have guardrails`);
  return g;
}

/**
 * A new store of each kind that needs no server, by name: a MemoryStore (which keeps its whole log) and
 * a migrated SqliteStore on `:memory:` (which, like PostgreSQL, stores text as UTF-8).
 */
export const LOCAL_STORES: [string, () => Promise<GuardrailStore>][] = [
  ['MemoryStore', async () => new MemoryStore()],
  [
    'SqliteStore',
    async () => {
      const store = new SqliteStore({ path: ':memory:' });
      await store.migrate();
      return store;
    },
  ],
];

/** From now on, the event types of the audit entries each update of `store` writes: a list per update. */
export function updatesOf(store: GuardrailStore): string[][] {
  const written: string[][] = [];
  const update = store.update.bind(store);
  store.update = <T>(planId: string, change: PlanChangeFn<T>, options?: UpdateOptions) =>
    update(
      planId,
      (g, approval, caps) => {
        const out = change(g, approval, caps);
        const entries = [...(out.audit ? [out.audit] : []), ...(out.entries ?? [])];
        written.push(entries.map((e) => e.eventType));
        return out;
      },
      options,
    );
  return written;
}
