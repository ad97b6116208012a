// What the GuardrailStore contract's cases share: times, guardrails, entries, changes and approvals.
import { AuditEntry } from '../../audit/AuditEntry.js';
import { AuditTrail } from '../../audit/AuditTrail.js';
import type { ChainedEntry } from '../../audit/chain.js';
import { AutonomyGuardrails, type GuardrailsInit } from '../../guardrails/AutonomyGuardrails.js';
import type { GuardrailEventType } from '../../events.js';
import type { GuardCheck } from '../../GuardCheck.js';
import type {
  Approval,
  ApprovalStatus,
  GuardrailStore,
  PlanChange,
  PlanChangeFn,
} from '../../store/GuardrailStore.js';

export const T0 = Date.parse('2026-11-30T10:00:00.000Z');
export const START = '2026-11-30T10:00:00.000Z';
export const LATER = '2026-11-30T11:00:00.000Z';
export const HASH = 'a'.repeat(64);

export function guardrails(init: GuardrailsInit = {}): AutonomyGuardrails {
  return AutonomyGuardrails.create({ maxSteps: 10, toolBudget: 5, ...init });
}

export function entry(eventType: GuardrailEventType, i = 0): AuditEntry {
  const guardName = eventType.startsWith('step') ? 'step_limit' : 'tool_budget';
  return AuditEntry.create({ eventType, guardName, timestamp: T0 + i, details: { i } });
}

/** A change that records the budget check of `micros` and spends them when allowed. */
export function spend(micros: number, i: number) {
  return (g: AutonomyGuardrails | null): PlanChange<GuardCheck> => {
    if (!g) throw new Error('the plan should be configured');
    const check = g.checkToolBudgetMicros(micros);
    const audit = AuditEntry.create({
      eventType: check.eventType,
      guardName: check.guardName,
      timestamp: T0 + i,
      details: { i },
    });
    return check.allowed
      ? { result: check, audit, mutation: { spendMicros: micros } }
      : { result: check, audit };
  };
}

/** A change that only opens reservation `id` of `micros` (expiring at `expiresAt`, when given). */
export function reserving(id: string, micros: number, expiresAt?: number): PlanChangeFn<null> {
  const reserve = expiresAt === undefined ? { id, micros } : { id, micros, expiresAt };
  return () => ({ result: null, mutation: { reserve } });
}

/** A pending approval of `planId`, requested `i` minutes after START. */
export function approval(id: string, planId: string, i = 0, status: ApprovalStatus = 'pending'): Approval {
  return {
    id,
    planId,
    decisionId: `decision-${id}`,
    operation: 'deploy',
    inputHash: HASH,
    requestedAt: new Date(T0 + i * 60_000).toISOString(),
    expiresAt: new Date(T0 + (i + 10) * 60_000).toISOString(),
    status,
  };
}

/** `a` with the tool an agent called and the preview of its input that a person is shown. */
export function withTool(a: Approval): Approval {
  return { ...a, toolName: 'deploy', inputPreview: '{"env":"prod","note":"\\u202e"}' };
}

export function ids(trail: AuditTrail): unknown[] {
  return trail.entries.map((e) => e.details['i']);
}

export function logIds(log: readonly ChainedEntry[]): unknown[] {
  return log.map((c) => c.entry.details['i']);
}

/** The plan's state as `store` reads it; throws when the plan is not stored. */
export async function storedIn(store: GuardrailStore, planId: string) {
  const record = await store.get(planId);
  if (!record) throw new Error(`plan ${planId} should be stored`);
  return record;
}

/** `a` with every field of a team's review: the targets to tell, the requester, the rule, a vote, the decider. */
export function withReview(a: Approval): Approval {
  return {
    ...a,
    notify: ['ops-slack', 'audit-hook'],
    requester: 'dave',
    rule: {
      name: 'deploy',
      approvers: ['role:release', 'user:carol'],
      quorum: 2,
      selfApproval: false,
      onTimeout: 'deny',
      elicitation: 'deny',
    },
    votes: [
      {
        by: { kind: 'token', subject: 'bob', name: 'Bob', principal: 'bob', roles: ['release'] },
        at: START,
        reason: 'diff reviewed',
      },
    ],
    decider: {
      kind: 'oidc',
      subject: '00u1a2b3',
      name: 'Carol',
      issuer: 'https://id.example.com',
      principal: 'carol',
      roles: ['release'],
    },
  };
}
