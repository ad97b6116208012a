import { GuardrailError } from '../errors.js';

/** What a run guard does with a plan nobody configured: refuse its calls (the default), or run them. */
export type UnconfiguredPlans = 'deny' | 'allow';

/**
 * The error a guarded call of a plan with no guardrails is refused with: a plan id mistyped would
 * otherwise run an agent without any limit. It names the plan and the ways to configure it.
 */
export function notConfigured(planId: string): GuardrailError {
  const id = JSON.stringify(planId);
  return new GuardrailError(
    'PLAN_NOT_CONFIGURED',
    `plan ${id} is not configured, so it has no limits to hold the agent to: configure it first ` +
      `(service.configureGuardrails(${id}, { … }), or policyToGuardrailsInit(policy) of a policy file; ` +
      `leash mcp --policy FILE), or give the run guard unconfiguredPlans: 'allow' to run it without limits`,
  );
}
