import { GuardrailError } from '../errors.js';

/** What a run guard does with a plan nobody configured: refuse its calls (the default), or run them. */
export type UnconfiguredPlans = 'deny' | 'allow';

/**
 * The error a guarded call of a plan with no guardrails is refused with: a plan id mistyped would
 * otherwise run an agent without any limit. It names the plan and the ways to configure it (`ways`, where
 * the caller knows better ones than a library's).
 */
export function notConfigured(planId: string, ways?: string): GuardrailError {
  const id = JSON.stringify(planId);
  const how =
    ways ??
    `configure it first (service.configureGuardrails(${id}, { … }), or policyToGuardrailsInit(policy) ` +
      `of a policy file; leash mcp --policy FILE), or give the run guard unconfiguredPlans: 'allow' to ` +
      `run it without limits`;
  return new GuardrailError(
    'PLAN_NOT_CONFIGURED',
    `plan ${id} is not configured, so it has no limits to hold the agent to: ${how}`,
  );
}
