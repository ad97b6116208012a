import type { GuardCheck } from '../guardrails/GuardCheck.js';
import { normalizeOperation } from '../guardrails/operation.js';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import type { BudgetReservation } from '../service/BudgetReservation.js';

/**
 * The operations to confirm for one tool call, normalized and without repeats: the tool's operation
 * (its name unless it declares one), the tool's name when a rule says every call needs a person, and
 * `extra` when it names another.
 */
export function operationsToConfirm(
  toolName: string,
  operation: string | undefined,
  requiresConfirmation: boolean,
  extra?: string,
): string[] {
  const ops = [normalizeOperation(operation ?? toolName)];
  for (const more of [requiresConfirmation ? toolName : undefined, extra]) {
    if (more === undefined) continue;
    const op = normalizeOperation(more);
    if (!ops.includes(op)) ops.push(op);
  }
  return ops;
}

/** A call the guards let through, with its budget set aside, or the check that refused it. */
export type OpenedCall = { readonly reservation: BudgetReservation } | { readonly denied: GuardCheck };

/** The checks a call makes before its reservation, besides the tool's calls per plan. */
export interface CallChecks {
  /** Tool calls of the invocation before this one (a tool a tool calls). */
  readonly currentCalls?: number;
  /** Operations that must need no person, and those a rule makes need one whatever the plan says. */
  readonly operations?: readonly string[];
  readonly alwaysRequire?: readonly string[];
}

/**
 * The checks of a call that is no step of its own and cannot wait for a person, and the budget
 * reservation of `estimate`: `checks`, then the per-tool calls check (counted when allowed; none without
 * `maxCallsPerPlan`), then the reservation, in one update of a configured plan. `live` throws when the
 * call may go no further: it is asked before the update, and, for a plan with no guardrails, whose
 * checks are asked one by one, before the reservation.
 */
export async function openCall(
  service: AutonomyGuardrailService,
  planId: string,
  toolName: string,
  maxCallsPerPlan: number | null,
  estimate: number,
  reservationId: string,
  live: () => void = () => undefined,
  checks: CallChecks = {},
): Promise<OpenedCall> {
  live();
  const tool = maxCallsPerPlan === null ? undefined : { name: toolName, maxCallsPerPlan };
  const opened = await service.openToolCall(planId, { ...checks, tool, estimate, reservationId });
  if (opened !== null) {
    const { check, reservation } = opened;
    return reservation === undefined ? { denied: check } : { reservation };
  }
  return openOneByOne(service, planId, toolName, maxCallsPerPlan, estimate, reservationId, live, checks);
}

/** {@link openCall} on a plan with no guardrails: each check as `unconfiguredPlans` answers it. */
async function openOneByOne(
  service: AutonomyGuardrailService,
  planId: string,
  toolName: string,
  maxCallsPerPlan: number | null,
  estimate: number,
  reservationId: string,
  live: () => void,
  checks: CallChecks,
): Promise<OpenedCall> {
  if (checks.currentCalls !== undefined) {
    const check = await service.checkActorToolCalls(planId, checks.currentCalls);
    if (!check.allowed) return { denied: check };
  }
  for (const op of checks.operations ?? []) {
    const alwaysRequire = checks.alwaysRequire?.includes(op) ?? false;
    const check = await service.checkConfirmation(planId, op, { alwaysRequire });
    if (!check.allowed) return { denied: check };
  }
  if (maxCallsPerPlan !== null) {
    const check = await service.checkToolCalls(planId, toolName, maxCallsPerPlan);
    if (!check.allowed) return { denied: check };
  }
  live();
  const reservation = await service.reserveBudget(planId, estimate, { reservationId });
  return reservation.check.allowed ? { reservation } : { denied: reservation.check };
}

/** How long a confirmation request stays valid unless the options say otherwise: a day. */
export const DEFAULT_APPROVAL_TTL_MS = 24 * 60 * 60 * 1000;
