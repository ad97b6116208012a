import { GuardrailViolationError } from '../errors.js';
import type { GuardCheck } from '../GuardCheck.js';
import { runtimeKeyOf } from '../guardrails/runtime.js';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import type { BudgetReservation } from '../service/BudgetReservation.js';
import type { ToolCallBegun } from '../service/toolCall.js';
import type { Approval } from '../store/GuardrailStore.js';
import { operationsOf, type Invoker } from './invocation.js';
import type { Decision, Plan } from './Plan.js';
import type { Paused } from './state.js';
import type { Tool } from './tools.js';
import type { ExecutorSettings } from './types.js';

// The checks of a decision before its first try: what it asks a person, and the one update they make.

/** What a decision's checks let through: the wall clock to run by and, for a guarded plan, its reservation. */
export interface Guarded {
  readonly wall: GuardCheck | null;
  readonly reservation?: BudgetReservation;
}

/** A decision waiting for a person. */
export interface Pause {
  readonly paused: Paused;
  readonly approval: Approval;
}

/** The confirmation a decision asks for: its operations, its input, and the tool's own rule. */
export function decisionAsk(s: ExecutorSettings, decision: Decision) {
  const tool = s.tools.get(decision.tool) as Tool;
  const rule = s.toolRules.get(tool.name);
  // One literal, not a spread: spreading then adding a key leaves V8's fast path on every decision.
  return {
    decisionId: decision.id,
    operation: operationsOf(decision, tool, rule),
    input: decision.input,
    // What the person asked is shown of the step, as for an agent's call.
    preview: decision.input,
    alwaysRequire: rule?.requiresConfirmation ? [tool.name] : [],
    ttlMs: s.approvalTtlMs,
  };
}

/**
 * Every check before a decision's first try, in one update of the plan; with `after`, only once that
 * reservation (the decision before's) is settled within the budget, else null.
 */
export function beginDecision(
  s: ExecutorSettings,
  invoker: Invoker,
  service: AutonomyGuardrailService,
  plan: Plan,
  decision: Decision,
  after: string | undefined,
): Promise<ToolCallBegun | null> {
  const tool = s.tools.get(decision.tool) as Tool;
  const max = s.toolRules.get(tool.name)?.maxCallsPerPlan ?? null;
  const confirm = decisionAsk(s, decision);
  const rule = max === null ? undefined : { name: tool.name, maxCallsPerPlan: max };
  const estimate = invoker.estimateOf(tool, decision);
  const reservationId = runtimeKeyOf(decision.id, '#1');
  // Without `after` when there is none: a service of another copy of leash may not know the key.
  return service.beginToolCall(
    plan.id,
    after === undefined
      ? { confirm, tool: rule, estimate, reservationId }
      : { confirm, tool: rule, estimate, reservationId, after },
  );
}

/** What a decision's checks, made in one update, let through; throws the violation of one that refused. */
export function guardedBy(decision: Decision, begun: ToolCallBegun): Pause | Guarded {
  const { check, approval, reservation, wallClock } = begun;
  if (reservation !== undefined) return { wall: wallClock, reservation };
  if (approval === undefined) throw new GuardrailViolationError(check);
  return { paused: { decisionId: decision.id, approvalId: approval.id }, approval };
}
