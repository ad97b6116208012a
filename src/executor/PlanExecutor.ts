import { GuardrailValidationError, GuardrailViolationError } from '../errors.js';
import type { GuardCheck } from '../guardrails/GuardCheck.js';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import { validatePlan, type Decision, type Plan } from './Plan.js';
import type { Tool } from './tools.js';

/** A decision that ran to completion. */
export interface CompletedDecision {
  readonly decisionId: string;
  readonly output: unknown;
  readonly cost: number;
  readonly attempts: number;
}

export interface ExecutionResult {
  readonly status: 'completed' | 'failed' | 'awaiting_confirmation';
  /** Work done before the run ended, in order: kept whatever the outcome. */
  readonly completed: readonly CompletedDecision[];
  /** The guard that ended the run, when one did. */
  readonly violation?: GuardrailViolationError;
  /** The tool error that ended the run, when one did. */
  readonly error?: unknown;
}

export interface PlanExecutorOptions {
  /** Guardrails to enforce; without one the plan runs unguarded. */
  service?: AutonomyGuardrailService | null;
  tools?: readonly Tool[];
}

/**
 * Runs a plan's decisions in order under the plan's guardrails. Per decision: wall clock, then the step
 * limit, then confirmation, then the budget, then the tool. A guard that says no ends the run with the
 * work done so far; `execute` resolves either way and throws only for a malformed plan.
 */
export class PlanExecutor {
  readonly #service: AutonomyGuardrailService | null;
  readonly #tools: ReadonlyMap<string, Tool>;

  constructor(options: PlanExecutorOptions = {}) {
    this.#service = options.service ?? null;
    const tools = new Map<string, Tool>();
    for (const tool of options.tools ?? []) {
      if (tools.has(tool.name)) {
        throw new GuardrailValidationError('tools', `tools must have unique names, got "${tool.name}" twice`);
      }
      tools.set(tool.name, tool);
    }
    this.#tools = tools;
  }

  async execute(plan: Plan): Promise<ExecutionResult> {
    validatePlan(plan, new Set(this.#tools.keys()));
    if (plan.phase !== 'execute') {
      throw new GuardrailValidationError(
        'plan.phase',
        `only a plan in phase "execute" runs, got "${plan.phase}"`,
      );
    }
    const service = this.#service;
    if (service) await service.markStarted(plan.id);
    const completed: CompletedDecision[] = [];
    const end = async (result: ExecutionResult): Promise<ExecutionResult> => {
      plan.phase = result.status;
      if (service) plan.metadata = await service.toMetadata(plan.id, plan.metadata);
      return result;
    };
    for (const decision of plan.decisions) {
      const tool = this.#tools.get(decision.tool) as Tool;
      const cost = estimate(decision, tool);
      if (service) {
        const denied = await this.#guard(service, plan.id, decision, tool, cost);
        if (denied) {
          const status = denied.eventType === 'confirmation_required' ? 'awaiting_confirmation' : 'failed';
          return end({ status, completed, violation: new GuardrailViolationError(denied) });
        }
      }
      try {
        const output = await tool.run(decision.input, { planId: plan.id, decisionId: decision.id });
        completed.push(Object.freeze({ decisionId: decision.id, output, cost, attempts: 1 }));
      } catch (error) {
        return end({ status: 'failed', completed, error });
      }
    }
    return end({ status: 'completed', completed });
  }

  /** Runs the checks in order; returns the first denial, or undefined when all allow. */
  async #guard(
    service: AutonomyGuardrailService,
    planId: string,
    decision: Decision,
    tool: Tool,
    cost: number,
  ): Promise<GuardCheck | undefined> {
    const wall = await service.checkWallClock(planId);
    if (!wall.allowed) return wall;
    const step = await service.takeStep(planId);
    if (!step.allowed) return step;
    const operation = decision.operation ?? tool.operation;
    if (operation !== undefined) {
      const confirmation = await service.checkConfirmation(planId, operation);
      if (!confirmation.allowed) return confirmation;
    }
    const budget = await service.checkToolBudget(planId, cost);
    return budget.allowed ? undefined : budget;
  }
}

function estimate(decision: Decision, tool: Tool): number {
  if (decision.cost !== undefined) return decision.cost;
  if (typeof tool.cost === 'function') return tool.cost(decision.input);
  return tool.cost ?? 0;
}
