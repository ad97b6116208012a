// A service whose store knows a team of people, with approval rules: what the tests of votes, expiry and
// notifications start from.
import {
  approvalRules,
  AutonomyGuardrailService,
  isGuardrailError,
  ManualClock,
  MemoryStore,
  type ApprovalRuleInit,
  type AutonomyGuardrailServiceOptions,
} from '../../src/index.js';
import type { DeciderIdentity } from '../../src/store/people.js';

export const T0 = Date.parse('2026-11-30T10:00:00.000Z');
export const TTL = 60_000;
export const REQUEST = { decisionId: 'd1', operation: 'deploy', input: { target: 'prod' }, ttlMs: TTL };
export const USE = { decisionId: 'd1', operation: 'deploy', input: { target: 'prod' } };

/** The people the store knows: ann and bob release, eve does finance, carol asks. */
export const PEOPLE = [
  { id: 'ann', name: 'Ann', roles: ['release'] },
  { id: 'bob', name: 'Bob', roles: ['release'] },
  { id: 'carol', name: 'Carol', roles: ['release'] },
  { id: 'eve', name: 'Eve', roles: ['finance'] },
] as const;

/** A person signed in with a personal token. */
export function signedIn(id: string): DeciderIdentity {
  const p = PEOPLE.find((q) => q.id === id);
  if (p === undefined) throw new Error(`no person ${id}`);
  return { kind: 'token', subject: `tok_${id}`, name: p.name, principal: p.id, roles: [...p.roles] };
}

/** The decision of a person signed in: `by` their name, `identity` theirs. */
export const as = (id: string, reason?: string) => {
  const identity = signedIn(id);
  return { by: identity.name, identity, ...(reason === undefined ? {} : { reason }) };
};

export interface Team {
  readonly clock: ManualClock;
  readonly store: MemoryStore;
  readonly service: AutonomyGuardrailService;
}

/**
 * A service on a manual clock (approval ids a1, a2, …) over a memory store knowing {@link PEOPLE} (none
 * with `people: false`), with `rules`, and plan `plan` run for carol needing a person for `deploy`.
 */
export async function team(
  rules: Record<string, ApprovalRuleInit> | null,
  options: { people?: boolean } & Omit<AutonomyGuardrailServiceOptions, 'store' | 'clock' | 'ids'> = {},
): Promise<Team> {
  const { people = true, ...rest } = options;
  const clock = new ManualClock(T0);
  const store = new MemoryStore();
  if (people) {
    for (const p of PEOPLE) await store.putPrincipal({ ...p, createdAt: new Date(T0).toISOString() });
  }
  let n = 0;
  const service = new AutonomyGuardrailService({
    store,
    clock,
    ids: () => `a${++n}`,
    ...(rules === null ? {} : { approvalRules: approvalRules(rules) }),
    ...rest,
  });
  await service.configureGuardrails('plan', { requiredConfirmations: ['deploy'], labels: { user: 'carol' } });
  return { clock, store, service };
}

/** The `code` of the GuardrailError a call rejects with. */
export async function codeOf(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
  } catch (e) {
    if (isGuardrailError(e)) return e.code;
    throw e;
  }
  throw new Error('expected a GuardrailError, the call succeeded');
}

/** The event types of the plan's audit trail, oldest first. */
export async function eventsOf(service: AutonomyGuardrailService, planId = 'plan'): Promise<string[]> {
  return ((await service.getAuditTrail(planId))?.entries ?? []).map((e) => e.eventType);
}

/** The details of the plan's newest entry of `eventType`. */
export async function lastOf(service: AutonomyGuardrailService, eventType: string) {
  const entries = (await service.getAuditTrail('plan'))?.entries ?? [];
  const entry = entries.filter((e) => e.eventType === eventType).at(-1);
  if (entry === undefined) throw new Error(`no ${eventType} entry`);
  return entry.details;
}
