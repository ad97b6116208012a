import type { PlanChange } from '../store/GuardrailStore.js';
import type { GuardrailEventType } from '../events.js';
import type { AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';
import { invalid } from '../errors.js';
import { validRuntimeKey } from '../guardrails/AutonomyGuardrails.js';
import { GuardrailEventType as E } from '../events.js';
import { makeCheck, type GuardCheck } from '../GuardCheck.js';
import { normalizeOperation } from '../guardrails/operation.js';
import { intField, objectWithKeys } from '../guardrails/validate.js';
import { validatePlanId } from '../ids.js';
import { formatIso } from '../iso.js';
import type { JsonValue } from '../json.js';
import { textOption } from './BudgetReservation.js';
import { checkItself, rejecting, type ServiceCore } from './core.js';
import {
  decideActorCalls,
  decideOperation,
  decideStep,
  decideToolCalls,
  decideWallClock,
} from './decisions.js';
import { inputHash } from './hash.js';

// The checks of one limit each, by plan id: each is one update of the plan, recorded either way.

/**
 * A check of one plan in one update: `prepare` checks the arguments (after the plan id) and gives the
 * decision from the plan's guardrails; a plan that is not configured answers `allowed` or `denied` as
 * the service's options say.
 */
export function checkPlan(
  core: ServiceCore,
  planId: string,
  allowed: GuardrailEventType,
  denied: GuardrailEventType,
  prepare: () => (g: AutonomyGuardrails) => PlanChange<GuardCheck>,
): Promise<GuardCheck> {
  return core.checking(denied, checkItself, () => {
    validatePlanId(planId);
    const decide = prepare();
    return core.update(planId, (g) => (g ? decide(g) : core.unconfigured(allowed, denied, planId)));
  });
}

/** See {@link AutonomyGuardrailService.checkStepLimit}. */
export function checkStepLimit(core: ServiceCore, planId: string, step: number): Promise<GuardCheck> {
  // Written out, not through checkPlan: the check timed against a rate limiter, without its two closures.
  return core.checking(E.STEP_BLOCKED, checkItself, () => {
    validatePlanId(planId);
    intField(step, 'step', 0, false);
    return core.update(planId, (g) => {
      if (!g) return core.unconfigured(E.STEP_ALLOWED, E.STEP_BLOCKED, planId);
      const check = g.checkStepLimit(step);
      return core.audited(check, { step, limit: check.limit ?? null });
    });
  });
}

/** See {@link AutonomyGuardrailService.takeStep}. */
export function takeStep(core: ServiceCore, planId: string): Promise<GuardCheck> {
  return checkPlan(core, planId, E.STEP_ALLOWED, E.STEP_BLOCKED, () => (g) => decideStep(core, g));
}

/** See {@link AutonomyGuardrailService.checkConfirmation}. */
export function checkConfirmation(
  core: ServiceCore,
  planId: string,
  operation: string,
  options?: { readonly alwaysRequire?: boolean },
): Promise<GuardCheck> {
  return checkPlan(core, planId, E.CONFIRMATION_NOT_REQUIRED, E.CONFIRMATION_REQUIRED, () => {
    const op = normalizeOperation(operation, 'operation', core.limits.maxOperationNameLength);
    // A per-tool rule can demand a person whatever the plan's list says.
    const always = options?.alwaysRequire === true;
    return (g) => decideOperation(core, g, op, always);
  });
}

/** See {@link AutonomyGuardrailService.checkWallClock}. */
export function checkWallClock(core: ServiceCore, planId: string): Promise<GuardCheck> {
  return checkPlan(core, planId, E.WALL_CLOCK_ALLOWED, E.WALL_CLOCK_BLOCKED, () => {
    const now = core.now();
    return (g) => decideWallClock(core, g, now);
  });
}

/** See {@link AutonomyGuardrailService.checkActorToolCalls}. */
export function checkActorToolCalls(
  core: ServiceCore,
  planId: string,
  currentCalls: number,
): Promise<GuardCheck> {
  return checkPlan(core, planId, E.ACTOR_TOOL_CALLS_ALLOWED, E.ACTOR_TOOL_CALLS_BLOCKED, () => {
    intField(currentCalls, 'current_calls', 0, false);
    return (g) => decideActorCalls(core, g, currentCalls);
  });
}

/** See {@link AutonomyGuardrailService.checkRetries}. */
export function checkRetries(
  core: ServiceCore,
  planId: string,
  currentRetries: number,
  options: { error?: string } = {},
): Promise<GuardCheck> {
  return checkPlan(core, planId, E.RETRY_ALLOWED, E.RETRY_BLOCKED, () => {
    intField(currentRetries, 'current_retries', 0, false);
    const error = textOption(options, 'error');
    return (g) => {
      const check = g.checkRetries(currentRetries);
      const details: Record<string, JsonValue> = {
        current_retries: currentRetries,
        limit: check.limit ?? null,
      };
      if (error !== undefined) details['error'] = error;
      return core.audited(check, details);
    };
  });
}

/** See {@link AutonomyGuardrailService.markStarted}. */
export function markStarted(core: ServiceCore, planId: string): Promise<void> {
  return rejecting(() => {
    validatePlanId(planId);
    const startTime = formatIso(core.now());
    return core.update(planId, (g) =>
      g && g.startTime === null ? { result: undefined, mutation: { startTime } } : { result: undefined },
    );
  });
}

/** See {@link AutonomyGuardrailService.checkToolCalls}. */
export function checkToolCalls(
  core: ServiceCore,
  planId: string,
  tool: string,
  maxCallsPerPlan: number,
): Promise<GuardCheck> {
  return checkPlan(core, planId, E.TOOL_CALLS_ALLOWED, E.TOOL_CALLS_BLOCKED, () => {
    const name = validRuntimeKey(tool, 'tool');
    const max = intField(maxCallsPerPlan, 'max_calls_per_plan', 1, false) as number;
    return (g) => decideToolCalls(core, g, name, max);
  });
}

/** See {@link AutonomyGuardrailService.refuseToolCall}. */
export function refuseToolCall(
  core: ServiceCore,
  planId: string,
  call: { readonly tool: string; readonly input?: unknown; readonly reason: string },
): Promise<GuardCheck> {
  return core.checking(E.TOOL_CALLS_BLOCKED, checkItself, () => {
    validatePlanId(planId);
    const o = objectWithKeys(call, 'call', ['tool', 'input', 'reason']);
    const tool = validRuntimeKey(o['tool'], 'tool');
    const reason = o['reason'];
    if (typeof reason !== 'string' || reason.length === 0) invalid('reason', 'a non-empty string', reason);
    const hash = inputHash({ tool, input: o['input'] ?? null });
    const now = core.now();
    const check = makeCheck(E.TOOL_CALLS_BLOCKED, reason, 0);
    return core.update(planId, (g) =>
      g
        ? { result: check, audit: core.entry(check, { tool, input_hash: hash, limit: 0 }, now) }
        : { result: check },
    );
  });
}
