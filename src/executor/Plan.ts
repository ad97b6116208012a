import { describeValue, GuardrailValidationError } from '../errors.js';
import { isPlainObject, type JsonValue } from '../json.js';
import { validatePlanId } from '../service/planId.js';

/** Where a plan is in its life. Only a plan in `execute` runs. */
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
  /** Estimated cost in budget units; defaults to the tool's cost. */
  readonly cost?: number;
  /** Operation name checked against `required_confirmations`; defaults to the tool's operation. */
  readonly operation?: string;
}

export interface Plan {
  readonly id: string;
  phase: PlanPhase;
  readonly decisions: readonly Decision[];
  metadata: Record<string, unknown>;
}

/** Checks a plan's shape (a programmer error if wrong) before anything runs. */
export function validatePlan(plan: unknown, knownTools: ReadonlySet<string>): asserts plan is Plan {
  if (!isPlainObject(plan) && !(typeof plan === 'object' && plan !== null)) {
    throw new GuardrailValidationError('plan', `plan must be an object, got ${describeValue(plan)}`);
  }
  const p = plan as Record<string, unknown>;
  validatePlanId(p['id']);
  if (!PLAN_PHASES.includes(p['phase'] as PlanPhase)) {
    throw new GuardrailValidationError(
      'plan.phase',
      `plan.phase must be one of ${PLAN_PHASES.join(', ')}, got ${describeValue(p['phase'])}`,
    );
  }
  if (!Array.isArray(p['decisions'])) {
    throw new GuardrailValidationError(
      'plan.decisions',
      `plan.decisions must be an array, got ${describeValue(p['decisions'])}`,
    );
  }
  const seen = new Set<string>();
  p['decisions'].forEach((d: unknown, i: number) => {
    const path = `plan.decisions[${i}]`;
    if (!isPlainObject(d))
      throw new GuardrailValidationError(path, `${path} must be an object, got ${describeValue(d)}`);
    const id = d['id'];
    if (typeof id !== 'string' || id.length === 0 || seen.has(id)) {
      throw new GuardrailValidationError(
        `${path}.id`,
        `${path}.id must be a unique non-empty string, got ${describeValue(id)}`,
      );
    }
    seen.add(id);
    if (typeof d['tool'] !== 'string' || !knownTools.has(d['tool'])) {
      throw new GuardrailValidationError(
        `${path}.tool`,
        `${path}.tool must name a registered tool (${[...knownTools].join(', ') || 'none registered'}), got ${describeValue(d['tool'])}`,
      );
    }
  });
  if (!isPlainObject(p['metadata'])) {
    throw new GuardrailValidationError(
      'plan.metadata',
      `plan.metadata must be an object, got ${describeValue(p['metadata'])}`,
    );
  }
}
