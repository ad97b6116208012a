import { GuardrailValidationError, isGuardrailValidationError } from '../errors.js';
import { approvalRules, type ApprovalRuleInit, type ApprovalRules } from '../identity/rules.js';
import type { Subject } from '../validation.js';
import type { Policy, PolicyApprovalRule, PolicyApprovals } from './schema.js';

/** The rules of a policy's `approvals:` block: every key but `ttl_seconds`. */
export function approvalRuleEntries(approvals: PolicyApprovals = {}): [string, PolicyApprovalRule][] {
  return Object.keys(approvals)
    .filter((key) => key !== 'ttl_seconds')
    .map((key) => [key, approvals[key] as PolicyApprovalRule]);
}

/**
 * The policy's approval rules (`approvals:` keys beside `ttl_seconds`), compiled for the service's
 * `approvalRules` option: operation keys normalized as the service compares operations, tool-name keys
 * kept as written, defaults filled in (quorum 1, no self-approval, on_timeout deny, elicitation deny).
 * @throws GuardrailValidationError naming the field: `approvals.deploy.quorum`
 */
export function policyApprovalRules(policy: Policy): ApprovalRules {
  const inits = Object.create(null) as Record<string, ApprovalRuleInit>;
  for (const [key, rule] of approvalRuleEntries(policy.approvals)) {
    inits[key] = {
      approvers: rule.approvers,
      ...(rule.quorum === undefined ? {} : { quorum: rule.quorum }),
      ...(rule.self_approval === undefined ? {} : { selfApproval: rule.self_approval }),
      // Rounded as the policy's own time to live is, so that 1.1 seconds is 1100 ms.
      ...(rule.ttl_seconds === undefined ? {} : { ttlMs: Math.max(1, Math.round(rule.ttl_seconds * 1000)) }),
      ...(rule.on_timeout === undefined ? {} : { onTimeout: rule.on_timeout }),
      ...(rule.elicitation === undefined ? {} : { elicitation: rule.elicitation }),
    };
  }
  return approvalRules(inits, 'approvals');
}

/** The rules together, as the service compiles them: a key naming no operation, or a quorum too large. */
export function checkApprovalRules(policy: Policy, subject: Subject): void {
  try {
    policyApprovalRules(policy);
  } catch (e) {
    if (!isGuardrailValidationError(e) || e.field === undefined) throw e;
    throw new GuardrailValidationError(e.field, `${subject.prefix}${e.message}`, { cause: e });
  }
}
