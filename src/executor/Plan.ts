import { describeValue, GuardrailValidationError, invalid } from '../errors.js';
import { validRuntimeKey } from '../guardrails/AutonomyGuardrails.js';
import { normalizeOperation } from '../guardrails/operation.js';
import { canonicalJson, isPlainObject, type JsonValue } from '../json.js';
import { toMicros } from '../money.js';
import { validatePlanId } from '../ids.js';

/** Where a plan is in its life. `execute()` runs a plan in `execute`; `resume()` one awaiting confirmation. */
export type PlanPhase = 'draft' | 'execute' | 'completed' | 'failed' | 'awaiting_confirmation' | 'cancelled';

export const PLAN_PHASES: readonly PlanPhase[] = Object.freeze([
  'draft',
  'execute',
  'completed',
  'failed',
  'awaiting_confirmation',
  'cancelled',
]);

/** One step of a plan: call `tool` with `input`. */
export interface Decision {
  readonly id: string;
  readonly tool: string;
  readonly input?: JsonValue;
  /**
   * Estimated cost in budget units. It can raise the tool's own estimate, never lower it: the plan is
   * written by the agent the guardrails are there to bound.
   */
  readonly cost?: number;
  /**
   * An operation name to confirm in addition to the tool's own. It cannot replace the tool's operation,
   * for the same reason.
   */
  readonly operation?: string;
}

export interface Plan {
  readonly id: string;
  phase: PlanPhase;
  readonly decisions: readonly Decision[];
  metadata: Record<string, unknown>;
}

/**
 * Checks a plan's shape before anything runs, so a malformed decision cannot stop a run half-way:
 * ids, tools, costs, operation names and inputs (plain JSON) of every decision.
 */
export function validatePlan(plan: unknown, knownTools: ReadonlySet<string>): asserts plan is Plan {
  if (typeof plan !== 'object' || plan === null) {
    throw new GuardrailValidationError('plan', `plan must be an object, got ${describeValue(plan)}`);
  }
  const p = plan as Record<string, unknown>;
  validatePlanId(p['id']);
  if (!PLAN_PHASES.includes(p['phase'] as PlanPhase)) {
    invalid('plan.phase', `one of ${PLAN_PHASES.join(', ')}`, p['phase']);
  }
  const decisions = p['decisions'];
  if (!Array.isArray(decisions)) invalid('plan.decisions', 'an array', decisions);
  const seen = new Set<string>();
  // An index loop, not forEach: forEach skips the holes of a sparse array.
  for (let i = 0; i < decisions.length; i++) {
    const path = `plan.decisions[${i}]`;
    const d: unknown = decisions[i];
    if (!isPlainObject(d)) invalid(path, 'an object', d);
    const id = validRuntimeKey(d['id'], `${path}.id`);
    if (seen.has(id)) invalid(`${path}.id`, 'unique within the plan', id);
    seen.add(id);
    const tool = d['tool'];
    if (typeof tool !== 'string' || !knownTools.has(tool)) {
      invalid(`${path}.tool`, `a registered tool (${[...knownTools].join(', ') || 'none registered'})`, tool);
    }
    if (d['cost'] !== undefined) toMicros(d['cost'], `${path}.cost`, 'up');
    if (d['operation'] !== undefined) normalizeOperation(d['operation'], `${path}.operation`);
    if (d['input'] !== undefined) canonicalJson(d['input'], `${path}.input`);
  }
  if (!isPlainObject(p['metadata'])) invalid('plan.metadata', 'an object', p['metadata']);
}
