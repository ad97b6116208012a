import type { AutonomyGuardrailServiceOptions } from '../service/core.js';
import { policyApprovalRules } from './approvals.js';
import { policyNotifyEvents } from './notify.js';
import type { Policy } from './schema.js';

/**
 * What a service deciding under `policy` is built with: the rules of who decides its approvals, and the
 * notify: targets its approvals and budget alerts are queued for.
 */
export function policyServiceOptions(
  policy: Policy,
): Pick<AutonomyGuardrailServiceOptions, 'approvalRules' | 'notify'> {
  const targets = policyNotifyEvents(policy);
  return {
    approvalRules: policyApprovalRules(policy),
    ...(targets.length === 0 ? {} : { notify: { targets } }),
  };
}
