import { GuardrailError } from '../errors.js';
import { GuardrailEventType as E } from '../events.js';
import { makeCheck } from '../GuardCheck.js';
import { validRuntimeKey } from '../guardrails/AutonomyGuardrails.js';
import { quorumReached, ruleInEffect, voteProblem, type VoteProblem } from '../identity/rules.js';
import { formatIso, parseIsoMs } from '../iso.js';
import type { Approval, PlanChange } from '../store/GuardrailStore.js';
import type { ApprovalRule, ApprovalVote, DeciderIdentity } from '../store/people.js';
import { validDecision, type Decision } from './approvals.js';
import { rejecting, type ServiceCore } from './core.js';
import { identityOf, voterOf, type Voter } from './deciders.js';
import { hasPrincipals } from './people.js';
import { expiry } from './expiry.js';
import { ApprovalNotices } from './notifications.js';

// A person's decision of an approval. Under a rule it is a vote: approvals of distinct people the rule
// names count towards its quorum, which grants; one denial by such a person denies. A decision the rule
// does not count is recorded and refused. Under no rule (and while the store has no principals) one
// person's decision settles it, as `by` names them.

/** What a decision did: the approval as it is now, and the refusal to throw once that is committed. */
interface VoteOutcome {
  readonly approval: Approval;
  readonly refused?: VoteProblem;
}

/** A person's decision of the pending approval `id`: see the service's `approve` and `deny`. */
export function decideApproval(
  core: ServiceCore,
  id: string,
  decision: Decision,
  status: 'approved' | 'denied',
): Promise<Approval> {
  return rejecting(async () => {
    const who = validDecision(decision, status === 'denied');
    const given = identityOf(decision);
    const found = await core.store.getApproval(validRuntimeKey(id, 'approval_id'));
    if (!found) throw new GuardrailError('APPROVAL_NOT_FOUND', `no approval "${id}"`);
    const principals = await hasPrincipals(core);
    const voter = await voterOf(core, who.by, given);
    const now = core.now();
    const notices = new ApprovalNotices(core);
    const change = notices.changing((_g, current): PlanChange<VoteOutcome> => {
      if (!current) throw new GuardrailError('APPROVAL_NOT_FOUND', `no approval "${id}"`);
      if (current.status !== 'pending') {
        throw new GuardrailError('APPROVAL_NOT_PENDING', `approval "${id}" is already ${current.status}`);
      }
      const rule = ruleInEffect(current, principals);
      if (rule === undefined) return operatorDecision(core, current, who, status, now);
      const vote = { voter, reason: who.reason, status, principals, now };
      return ruleDecision(core, current, rule, vote);
    });
    const outcome = await notices.after(core.update(found.planId, change, { approvalId: found.id }));
    if (outcome.refused !== undefined)
      throw new GuardrailError(outcome.refused.code, outcome.refused.message);
    return outcome.approval;
  });
}

/** One operator's decision, as `by` names them: it settles the approval. */
function operatorDecision(
  core: ServiceCore,
  current: Approval,
  who: { readonly by: string; readonly reason?: string },
  status: 'approved' | 'denied',
  now: number,
): PlanChange<VoteOutcome> {
  // A person may always say no; only a yes must come in time.
  if (status === 'approved' && now > parseIsoMs(current.expiresAt)) {
    throw new GuardrailError('APPROVAL_EXPIRED', `approval "${current.id}" expired at ${current.expiresAt}`);
  }
  const decided: Approval = Object.freeze({
    ...current,
    status,
    decidedBy: who.by,
    decidedAt: formatIso(now),
    ...(who.reason === undefined ? {} : { reason: who.reason }),
  });
  const approved = status === 'approved';
  const eventType = approved ? E.CONFIRMATION_APPROVED : E.CONFIRMATION_DENIED;
  const check = makeCheck(eventType, approved ? 'a person approved' : 'a person denied', null);
  const details = {
    approval_id: current.id,
    decision_id: current.decisionId,
    operation: current.operation,
    by: who.by,
    reason: who.reason ?? null,
  };
  // A denial ends the wait; an approval's wait ends when the grant is used.
  const audit = core.entry(check, details, now);
  const result = { approval: decided };
  return approved
    ? { result, audit, approval: decided }
    : { result, audit, approval: decided, mutation: { unpause: now } };
}

/** A decision under a rule, as the service read it. */
interface RuledVote {
  readonly voter: Voter;
  readonly reason: string | undefined;
  readonly status: 'approved' | 'denied';
  readonly principals: boolean;
  readonly now: number;
}

/** A decision under `rule`: a vote counted, a decision made, or a refusal recorded. */
function ruleDecision(
  core: ServiceCore,
  current: Approval,
  rule: ApprovalRule,
  v: RuledVote,
): PlanChange<VoteOutcome> {
  const { identity } = v.voter;
  const base = {
    approval_id: current.id,
    decision_id: current.decisionId,
    operation: current.operation,
    rule: rule.name,
  };
  if (v.now > parseIsoMs(current.expiresAt)) {
    // Too late: the approval is denied now, and the decision refused.
    const gone = expiry(core, current, v.now);
    const refused: VoteProblem = {
      code: 'APPROVAL_EXPIRED',
      message: `approval "${current.id}" expired at ${current.expiresAt} and was denied (rule "${rule.name}")`,
    };
    const entries = [refusal(core, base, identity, refused, v.now)];
    return {
      result: { approval: gone.approval, refused },
      audit: gone.audit,
      entries,
      approval: gone.approval,
      mutation: gone.mutation,
    };
  }
  const vote = v.status === 'approved' ? 'approve' : 'deny';
  const problem =
    v.voter.problem ?? voteProblem(current, identity, { hasPrincipals: v.principals, now: v.now, vote });
  if (problem !== null) {
    return {
      result: { approval: current, refused: problem },
      audit: refusal(core, base, identity, problem, v.now),
    };
  }
  const at = formatIso(v.now);
  const details = {
    ...base,
    by: identity.name,
    principal: identity.principal ?? null,
    identity: identityDetail(identity),
    reason: v.reason ?? null,
  };
  if (v.status === 'denied') {
    const denied = decided(current, 'denied', identity.name, identity, at, v.reason);
    const check = makeCheck(E.CONFIRMATION_DENIED, `denied by ${identity.name} (rule "${rule.name}")`, null);
    const audit = core.entry(check, details, v.now);
    return { result: { approval: denied }, audit, approval: denied, mutation: { unpause: v.now } };
  }
  const ballot: ApprovalVote = Object.freeze({
    by: identity,
    at,
    ...(v.reason === undefined ? {} : { reason: v.reason }),
  });
  const votes = Object.freeze([...(current.votes ?? []), ballot]);
  const counted = { ...details, votes: votes.length, quorum: rule.quorum };
  if (!quorumReached(rule, votes)) {
    const pending: Approval = Object.freeze({ ...current, votes });
    const reason = `${identity.name} approved: ${votes.length} of ${rule.quorum} (rule "${rule.name}")`;
    const audit = core.entry(makeCheck(E.CONFIRMATION_VOTE, reason, null), counted, v.now);
    return { result: { approval: pending }, audit, approval: pending };
  }
  const names = votes.map((b) => b.by.name).join(', ');
  const approved = { ...decided(current, 'approved', names, identity, at, v.reason), votes };
  const check = makeCheck(E.CONFIRMATION_APPROVED, `approved by ${names} (rule "${rule.name}")`, null);
  const audit = core.entry(check, { ...counted, by: names }, v.now);
  return { result: { approval: approved }, audit, approval: approved };
}

/** `current` decided: who settled it (`decider`), the names recorded (`decidedBy`), why. */
function decided(
  current: Approval,
  status: 'approved' | 'denied',
  decidedBy: string,
  decider: DeciderIdentity,
  at: string,
  reason: string | undefined,
): Approval {
  return Object.freeze({
    ...current,
    status,
    decidedBy,
    decidedAt: at,
    ...(reason === undefined ? {} : { reason }),
    decider,
  });
}

/** The entry of a refused decision: its code, the rule, who. */
function refusal(
  core: ServiceCore,
  base: Record<string, string>,
  identity: DeciderIdentity,
  problem: VoteProblem,
  now: number,
) {
  const check = makeCheck(E.CONFIRMATION_VOTE_REFUSED, problem.message, null);
  const details = {
    ...base,
    code: problem.code,
    by: identity.name,
    principal: identity.principal ?? null,
    identity: identityDetail(identity),
  };
  return core.entry(check, details, now);
}

/** Who decided, as the audit entry records it: how they were proved, by whom, and who they are. */
function identityDetail(identity: DeciderIdentity): Record<string, string | null> {
  return {
    kind: identity.kind,
    subject: identity.subject,
    name: identity.name,
    issuer: identity.issuer ?? null,
    principal: identity.principal ?? null,
  };
}
