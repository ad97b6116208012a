import { describe, expect, it } from 'vitest';
import { AutonomyGuardrails } from '../../src/guardrails/AutonomyGuardrails.js';
import {
  approvalTtlMs,
  policyToGuardrailsInit,
  strictestGuardrails,
  toolRules,
  validatePolicy,
} from '../../src/policy/index.js';

const FULL = validatePolicy({
  version: 1,
  guardrails: {
    max_steps: 20,
    tool_budget: 5,
    required_confirmations: ['deploy', 'Send_Email'],
    max_wall_clock_seconds: 600,
    actor_limits: { max_tool_calls_per_invocation: 10, max_retries_per_failure: 2 },
  },
  approvals: { ttl_seconds: 3600 },
  tools: {
    shell: { max_calls_per_plan: 5, cost_per_call: 0.01, requires_confirmation: true },
    search: {},
  },
});
const EMPTY = validatePolicy({ version: 1 });

describe('policyToGuardrailsInit', () => {
  it('converts every limit to its camelCase name', () => {
    expect(policyToGuardrailsInit(FULL)).toEqual({
      maxSteps: 20,
      toolBudget: 5,
      requiredConfirmations: ['deploy', 'Send_Email', 'shell'],
      maxWallClockSeconds: 600,
      actorLimits: { maxToolCallsPerInvocation: 10, maxRetriesPerFailure: 2 },
    });
  });

  it('feeds AutonomyGuardrails.create the limits of the policy exactly', () => {
    expect(AutonomyGuardrails.create(policyToGuardrailsInit(FULL)).toJSON()).toEqual({
      max_steps: 20,
      tool_budget: 5,
      required_confirmations: ['deploy', 'send_email', 'shell'],
      max_wall_clock_seconds: 600,
      start_time: null,
      actor_limits: { max_tool_calls_per_invocation: 10, max_retries_per_failure: 2 },
      step_count: 0,
      budget_spent: 0,
    });
  });

  it('adds each tool whose calls need confirmation to the required confirmations, under its name', () => {
    const policy = validatePolicy({
      version: 1,
      tools: { deploy_site: { requires_confirmation: true }, ls: {} },
    });
    expect(policyToGuardrailsInit(policy)).toEqual({ requiredConfirmations: ['deploy_site'] });
  });

  it('gives an empty init for a policy without guardrails', () => {
    expect(policyToGuardrailsInit(EMPTY)).toEqual({});
  });

  it('leaves out the limits the policy leaves out', () => {
    const init = policyToGuardrailsInit(validatePolicy({ version: 1, guardrails: { max_steps: 3 } }));
    expect(Object.keys(init)).toEqual(['maxSteps']);
  });

  it('passes null through as "no limit"', () => {
    const init = policyToGuardrailsInit(
      validatePolicy({
        version: 1,
        guardrails: { max_steps: null, actor_limits: { max_retries_per_failure: null } },
      }),
    );
    expect(init).toEqual({ maxSteps: null, actorLimits: { maxRetriesPerFailure: null } });
  });

  it('hands out a list the caller may change without changing the policy', () => {
    const init = policyToGuardrailsInit(FULL);
    (init.requiredConfirmations as string[]).push('pay');
    expect(FULL.guardrails?.required_confirmations).toEqual(['deploy', 'Send_Email']);
  });
});

describe('toolRules', () => {
  it('converts a tool’s rules to camelCase', () => {
    expect(toolRules(FULL).get('shell')).toEqual({
      maxCallsPerPlan: 5,
      costPerCall: 0.01,
      requiresConfirmation: true,
    });
  });

  it('fills in the defaults for a tool without rules', () => {
    expect(toolRules(FULL).get('search')).toEqual({
      maxCallsPerPlan: null,
      costPerCall: null,
      requiresConfirmation: false,
    });
  });

  it('has no entry for a tool the policy does not name', () => {
    expect(toolRules(FULL).has('email')).toBe(false);
  });

  it('is empty for a policy without tools', () => {
    expect(toolRules(EMPTY).size).toBe(0);
  });

  it('hands out frozen rules', () => {
    expect(Object.isFrozen(toolRules(FULL).get('shell'))).toBe(true);
  });
});

describe('approvalTtlMs', () => {
  it('defaults to one day', () => {
    expect(approvalTtlMs(EMPTY)).toBe(86_400_000);
  });

  it('defaults to one day when approvals leave out the TTL', () => {
    expect(approvalTtlMs(validatePolicy({ version: 1, approvals: {} }))).toBe(86_400_000);
  });

  it('converts the policy’s seconds to milliseconds', () => {
    expect(approvalTtlMs(FULL)).toBe(3_600_000);
  });

  it('rounds to whole milliseconds', () => {
    expect(approvalTtlMs(validatePolicy({ version: 1, approvals: { ttl_seconds: 1.1 } }))).toBe(1100);
  });

  it('is at least one millisecond', () => {
    expect(approvalTtlMs(validatePolicy({ version: 1, approvals: { ttl_seconds: 1e-9 } }))).toBe(1);
  });
});

describe('strictestGuardrails', () => {
  it('takes the lowest of each limit, absent or null meaning unlimited', () => {
    expect(
      strictestGuardrails(
        { maxSteps: 5, toolBudget: null, maxWallClockSeconds: 60, actorLimits: { maxRetriesPerFailure: 3 } },
        {
          maxSteps: 10,
          toolBudget: 2,
          actorLimits: { maxRetriesPerFailure: 1, maxToolCallsPerInvocation: 4 },
        },
      ),
    ).toEqual({
      maxSteps: 5,
      toolBudget: 2,
      requiredConfirmations: [],
      maxWallClockSeconds: 60,
      actorLimits: { maxToolCallsPerInvocation: 4, maxRetriesPerFailure: 1 },
    });
  });

  it('requires every confirmation either requires', () => {
    const merged = strictestGuardrails(
      { requiredConfirmations: ['deploy'] },
      { requiredConfirmations: ['delete'] },
    );
    expect(merged.requiredConfirmations).toEqual(['deploy', 'delete']);
  });
});
