import type { GuardCheck } from '../GuardCheck.js';
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

/**
 * A call the guards let through, with its budget set aside (and the wall-clock check, when it was
 * asked for), or the check that refused it.
 */
export type OpenedCall = CallLetThrough | { readonly denied: GuardCheck };

/** A call the guards let through: its reservation, and the wall-clock check when it was asked for. */
export interface CallLetThrough {
  readonly reservation: BudgetReservation;
  readonly wall?: GuardCheck;
}

/** One call to open: its tool, the checks it makes besides the tool's calls, and what it sets aside. */
export interface CallToOpen {
  readonly toolName: string;
  /** The tool's calls per plan; null: not counted. */
  readonly maxCallsPerPlan: number | null;
  readonly estimate: number;
  readonly reservationId: string;
  /** Throws when the call may go no further. */
  readonly live?: () => void;
  /** Checks the wall clock first (another try of a call). */
  readonly wallClock?: boolean;
  /** Tool calls of the invocation before this one (a tool a tool calls). */
  readonly currentCalls?: number;
  /** Operations that must need no person, and those a rule makes need one whatever the plan says. */
  readonly operations?: readonly string[];
  readonly alwaysRequire?: readonly string[];
}

/**
 * The checks of a call that is no step of its own and cannot wait for a person, and the budget
 * reservation of its estimate: the wall clock, the invocation's calls and the operations when asked,
 * then the tool's calls per plan (counted when allowed), then the reservation, in one update of a
 * configured plan. `live` is asked before the update, and, for a plan with no guardrails, whose checks
 * are asked one by one, before the reservation.
 */
export async function openCall(
  service: AutonomyGuardrailService,
  planId: string,
  call: CallToOpen,
): Promise<OpenedCall> {
  call.live?.();
  const { toolName, maxCallsPerPlan, estimate, reservationId } = call;
  const opened = await service.openToolCall(planId, {
    wallClock: call.wallClock,
    currentCalls: call.currentCalls,
    operations: call.operations,
    alwaysRequire: call.alwaysRequire,
    tool: maxCallsPerPlan === null ? undefined : { name: toolName, maxCallsPerPlan },
    estimate,
    reservationId,
  });
  if (opened === null) return openOneByOne(service, planId, call);
  const { check, reservation, wallClock } = opened;
  if (reservation === undefined) return { denied: check };
  return wallClock === undefined ? { reservation } : { reservation, wall: wallClock };
}

/** {@link openCall} on a plan with no guardrails: each check as `unconfiguredPlans` answers it. */
async function openOneByOne(
  service: AutonomyGuardrailService,
  planId: string,
  call: CallToOpen,
): Promise<OpenedCall> {
  const wall = call.wallClock === true ? await service.checkWallClock(planId) : undefined;
  if (wall !== undefined && !wall.allowed) return { denied: wall };
  if (call.currentCalls !== undefined) {
    const check = await service.checkActorToolCalls(planId, call.currentCalls);
    if (!check.allowed) return { denied: check };
  }
  for (const op of call.operations ?? []) {
    const alwaysRequire = call.alwaysRequire?.includes(op) ?? false;
    const check = await service.checkConfirmation(planId, op, { alwaysRequire });
    if (!check.allowed) return { denied: check };
  }
  if (call.maxCallsPerPlan !== null) {
    const check = await service.checkToolCalls(planId, call.toolName, call.maxCallsPerPlan);
    if (!check.allowed) return { denied: check };
  }
  call.live?.();
  const reservation = await service.reserveBudget(planId, call.estimate, {
    reservationId: call.reservationId,
  });
  if (!reservation.check.allowed) return { denied: reservation.check };
  return wall === undefined ? { reservation } : { reservation, wall };
}

/** How long a confirmation request stays valid unless the options say otherwise: a day. */
export const DEFAULT_APPROVAL_TTL_MS = 24 * 60 * 60 * 1000;
