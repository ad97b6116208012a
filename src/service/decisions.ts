import type { AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';
import { GuardrailEventType as E } from '../events.js';
import { makeCheck, type GuardCheck, type Reason } from '../GuardCheck.js';
import type { JsonValue } from '../json.js';
import { confirmationReason } from '../guardrails/operation.js';
import type { PlanChange, PlanMutation } from '../store/GuardrailStore.js';
import type { ServiceCore } from './core.js';

// The decisions of the checks that need no more than a configured plan's guardrails: each is a check
// method's change, and a part of a tool call's one change (beginToolCall).

const ONE_STEP: PlanMutation = Object.freeze({ steps: 1 });

const toolCallsWithin: Reason = (c, tool) =>
  `call ${c.observed} of tool "${tool}" is within ${c.limit} per plan`;
const toolCallsReach: Reason = (c, tool) =>
  `call ${c.observed} of tool "${tool}" reaches ${c.limit} per plan`;

export function decideWallClock(
  core: ServiceCore,
  g: AutonomyGuardrails,
  now: number,
): PlanChange<GuardCheck> {
  const check = g.checkWallClock(now);
  const limit = check.limit ?? null;
  const details = check.observed === undefined ? { limit } : { elapsed_seconds: check.observed, limit };
  return core.audited(check, details, undefined, now); // the time the check was made against
}

export function decideStep(core: ServiceCore, g: AutonomyGuardrails, now?: number): PlanChange<GuardCheck> {
  const step = g.stepCount;
  const check = g.checkStepLimit(step);
  const details = { step, limit: check.limit ?? null };
  return core.audited(check, details, check.allowed ? ONE_STEP : undefined, now);
}

export function decideToolCalls(
  core: ServiceCore,
  g: AutonomyGuardrails,
  name: string,
  max: number,
  now?: number,
): PlanChange<GuardCheck> {
  const calls = g.toolCallCount(name);
  const check =
    calls < max
      ? makeCheck(E.TOOL_CALLS_ALLOWED, toolCallsWithin, max, calls, name)
      : makeCheck(E.TOOL_CALLS_BLOCKED, toolCallsReach, max, calls, name);
  const details = { tool: name, calls, limit: max };
  return core.audited(check, details, check.allowed ? { toolCall: name } : undefined, now);
}

export function decideActorCalls(
  core: ServiceCore,
  g: AutonomyGuardrails,
  currentCalls: number,
  now?: number,
): PlanChange<GuardCheck> {
  const check = g.checkActorToolCalls(currentCalls);
  return core.audited(check, { current_calls: currentCalls, limit: check.limit ?? null }, undefined, now);
}

/**
 * Whether operation `op` (normalized) may go ahead without a person: denied (`confirmation_required`)
 * when the plan's list names it, or `always` (a per-tool rule) says every call needs one.
 */
export function decideOperation(
  core: ServiceCore,
  g: AutonomyGuardrails,
  op: string,
  always: boolean,
  now?: number,
): PlanChange<GuardCheck> {
  const check = always
    ? makeCheck(E.CONFIRMATION_REQUIRED, confirmationReason([op], true), null)
    : g.checkConfirmation(op);
  return core.audited(check, { operation: op, limit: null }, undefined, now);
}

/** Characters of reservation ids an audit entry lists as expired; the rest are only counted. */
const EXPIRED_IDS_CHARS = 512;

/** The `expired` details of a call that gave back lapsed reservations: their ids, as many as fit. */
export function expiredDetails(
  details: Record<string, JsonValue>,
  ids: readonly string[],
  key = 'expired',
): void {
  if (ids.length === 0) return;
  const listed: string[] = [];
  let chars = 0;
  for (const id of ids) {
    if (listed.length > 0 && chars + id.length > EXPIRED_IDS_CHARS) break;
    listed.push(id);
    chars += id.length;
  }
  details[key] = listed;
  if (listed.length < ids.length) details[`${key}_more`] = ids.length - listed.length;
}

/** `m` that also gives back the reservations lapsed at `now`, when there are any. */
export function expiring(
  m: PlanMutation | undefined,
  expired: readonly string[],
  now: number,
): PlanMutation | undefined {
  return expired.length === 0 ? m : { ...m, expireBefore: now };
}
