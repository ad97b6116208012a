import { invalid } from '../errors.js';
import type { AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';
import type { PlanMutation } from './GuardrailStore.js';

/**
 * Applies a mutation to guardrails all or nothing: every part is checked before anything changes, so a
 * store never keeps spending without the step, or the step without its audit entry. Returns the
 * guardrails to keep: the same instance, or a copy when a start time was set.
 */
export function applyMutation(g: AutonomyGuardrails, m: PlanMutation): AutonomyGuardrails {
  const steps = m.steps ?? 0;
  const spend = m.spendMicros ?? 0;
  if (!Number.isSafeInteger(steps) || steps < 0) invalid('mutation.steps', 'an integer >= 0', steps);
  if (!Number.isSafeInteger(spend) || spend < 0) invalid('mutation.spendMicros', 'an integer >= 0', spend);
  if (!Number.isSafeInteger(g.stepCount + steps)) invalid('step_count', 'below 2^53', g.stepCount + steps);
  if (!Number.isSafeInteger(g.budgetSpentMicros + spend)) {
    invalid('budget_spent', 'representable exactly', g.budgetSpent + spend / 1e6);
  }
  const next = m.startTime !== undefined ? g.withStartTime(m.startTime) : g; // validates before changing
  if (spend > 0) next.recordCostMicros(spend);
  for (let i = 0; i < steps; i++) next.incrementStep();
  return next;
}
