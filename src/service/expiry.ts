import type { AuditEntry } from '../audit/AuditEntry.js';
import { GuardrailEventType as E } from '../events.js';
import { makeCheck, type GuardCheck } from '../GuardCheck.js';
import { ruleInEffect } from '../identity/rules.js';
import { formatIso, parseIsoMs } from '../iso.js';
import type { Approval, PlanChange } from '../store/GuardrailStore.js';
import type { DeciderIdentity } from '../store/people.js';
import type { ServiceCore } from './core.js';
import { ApprovalNotices } from './notifications.js';
import { hasPrincipals } from './people.js';

// An approval nobody decided in time, under a rule whose `on_timeout` is deny: denied by leash, and
// recorded, by whatever meets it first (a use of its grant, a decision, a sweep).

/** leash itself, as the decider of an approval that expired undecided. */
export const LEASH: DeciderIdentity = Object.freeze({ kind: 'system', subject: 'leash', name: 'leash' });

/** What expiring a pending approval `a` writes: the denied approval, its entry, the clock let go. */
export interface Expiry {
  readonly check: GuardCheck;
  readonly approval: Approval;
  readonly audit: AuditEntry;
  readonly mutation: { readonly unpause: number };
}

/** The expiry of the pending approval `a` at `now` (past its `expiresAt`). */
export function expiry(core: ServiceCore, a: Approval, now: number): Expiry {
  const reason = `nobody decided before it expired at ${a.expiresAt}`;
  const approval: Approval = Object.freeze({
    ...a,
    status: 'denied',
    decidedBy: LEASH.name,
    decidedAt: formatIso(now),
    reason,
    decider: LEASH,
  });
  const check = makeCheck(E.CONFIRMATION_EXPIRED, `approval "${a.id}" was denied: ${reason}`, null);
  const details = {
    approval_id: a.id,
    decision_id: a.decisionId,
    operation: a.operation,
    expires_at: a.expiresAt,
    rule: a.rule?.name ?? null,
  };
  return { check, approval, audit: core.entry(check, details, now), mutation: { unpause: now } };
}

/** Whether `a` is pending past its expiry under a rule that denies it then. */
function expires(a: Approval, principals: boolean, now: number): boolean {
  return (
    a.status === 'pending' &&
    now > parseIsoMs(a.expiresAt) &&
    ruleInEffect(a, principals)?.onTimeout === 'deny'
  );
}

/**
 * Denies every pending approval past its expiry whose rule says so (`on_timeout: deny`; the default
 * rule too once the store has principals), each recorded in its plan's log. Resolves with those it
 * denied. An approval opened under no rule while the store has no principals stays as it is.
 */
export async function expireApprovals(core: ServiceCore): Promise<Approval[]> {
  const principals = await hasPrincipals(core);
  const now = core.now();
  const due = (await core.store.listApprovals({ status: 'pending' })).filter((a) =>
    expires(a, principals, now),
  );
  const expired: Approval[] = [];
  for (const found of due) {
    const notices = new ApprovalNotices(core);
    const change = notices.changing((_g, a): PlanChange<Approval | null> => {
      // Decided, or expired by another process, since it was listed.
      if (a === null || !expires(a, principals, now)) return { result: null };
      const { approval, audit, mutation } = expiry(core, a, now);
      return { result: approval, audit, approval, mutation };
    });
    const done = await notices.after(core.update(found.planId, change, { approvalId: found.id }));
    if (done !== null) expired.push(done);
  }
  return expired;
}
