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

/**
 * The per-tool calls check (counted when allowed; none without `maxCallsPerPlan`) and the budget
 * reservation of `estimate` for one call. `live` throws when the call may go no further: it is asked
 * before the reservation.
 */
export async function openCall(
  service: AutonomyGuardrailService,
  planId: string,
  toolName: string,
  maxCallsPerPlan: number | null,
  estimate: number,
  reservationId: string,
  live: () => void = () => undefined,
): Promise<OpenedCall> {
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
