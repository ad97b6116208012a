import { runtimeKeyOf } from '../guardrails/runtime.js';
import { openCall, operationsToConfirm, type CallLetThrough, type CallToOpen } from '../agent/calls.js';
import { LazyAbort, wallClockDeadline, type Timers } from '../agent/deadline.js';
import { unwrap, type Outcome } from '../agent/toolResult.js';
import { GuardrailError, GuardrailViolationError, invalid } from '../errors.js';
import type { GuardCheck } from '../GuardCheck.js';
import { normalizeOperation } from '../guardrails/operation.js';
import type { JsonValue } from '../json.js';
import { toMicros } from '../money.js';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import { type Decision } from './Plan.js';
import { type Tool, type ToolContext, type ToolRule } from './tools.js';
import { QUIET, untilInterrupted } from './interruption.js';
import type { ExecutorSettings } from './types.js';

// The calls of a decision's tool, and of the tools it calls in turn.

/** One call of a decision's tool, shared by the contexts of the tools it calls. */
export interface Invocation {
  readonly planId: string;
  readonly decisionId: string;
  readonly attempt: number;
  /** Aborts when the call is cut short (its wall clock ran out, the run was interrupted); null if it cannot be. */
  readonly abort: LazyAbort | null;
  /** Nested calls numbered so far. */
  count: number;
  /** False once the tool returned: later calls are refused. */
  open: boolean;
  /** Nested calls in flight; made by the first nested call (most tools make none). */
  inFlight: Set<Promise<unknown>> | null;
}

/**
 * What a tool is called with. Its `signal` is an own, enumerable getter (a copy of the context carries
 * it): the AbortController behind it is made when a tool first reads it, since most tools never do and
 * one costs more than the rest of a call's bookkeeping. One getter for every context, so that they all
 * have one shape.
 */
class InvocationContext implements ToolContext {
  declare readonly signal: AbortSignal;
  readonly planId: string;
  readonly decisionId: string;
  readonly attempt: number;
  readonly callTool: ToolContext['callTool'];
  readonly #inv: Invocation;

  static readonly #signal: PropertyDescriptor = {
    enumerable: true,
    get(this: InvocationContext): AbortSignal {
      return this.#inv.abort?.signal ?? QUIET;
    },
  };

  constructor(inv: Invocation, callTool: ToolContext['callTool']) {
    this.planId = inv.planId;
    this.decisionId = inv.decisionId;
    this.attempt = inv.attempt;
    this.callTool = callTool;
    this.#inv = inv;
    Object.defineProperty(this, 'signal', InvocationContext.#signal);
    Object.freeze(this);
  }
}

/**
 * Calls the tools of a plan's decisions: each call with a context whose `callTool` makes guarded nested
 * calls, and whose signal aborts when the run's wall clock runs out or the run is interrupted.
 */
export class Invoker {
  readonly #service: AutonomyGuardrailService | null;
  readonly #tools: ReadonlyMap<string, Tool>;
  readonly #rules: ReadonlyMap<string, ToolRule>;
  readonly #timers: Timers;

  constructor(settings: Pick<ExecutorSettings, 'service' | 'tools' | 'toolRules' | 'timers'>) {
    this.#service = settings.service;
    this.#tools = settings.tools;
    this.#rules = settings.toolRules;
    this.#timers = settings.timers;
  }

  /**
   * The checks of one call that is no step of its own (`checks`, the tool's calls per plan) and its
   * budget reservation, in one update; null when unguarded. `checks.live` throws when the call may go
   * no further: it is asked before the update.
   */
  async openCall(
    planId: string,
    tool: Tool,
    estimate: number,
    reservationId: string,
    checks: Pick<CallToOpen, 'live' | 'wallClock' | 'currentCalls' | 'operations' | 'alwaysRequire'> = {},
  ): Promise<CallLetThrough | null> {
    const service = this.#service;
    if (!service) {
      checks.live?.();
      return null;
    }
    const maxCallsPerPlan = this.#rules.get(tool.name)?.maxCallsPerPlan ?? null;
    const call = { ...checks, toolName: tool.name, maxCallsPerPlan, estimate, reservationId };
    const opened = await openCall(service, planId, call);
    if ('denied' in opened) throw new GuardrailViolationError(opened.denied);
    return opened;
  }

  /**
   * Calls the tool with a context whose signal aborts, and whose result stops being waited for, when
   * the wall clock runs out: a tool that ignores the signal cannot hold the run past its limit. Nested
   * calls still in flight when the tool returns settle before the run moves on, so their cost is in the
   * state saved next; after that the context refuses further calls.
   */
  async invoke(
    planId: string,
    decision: Decision,
    tool: Tool,
    attempt: number,
    estimate: number,
    limit: number | null,
    signal: AbortSignal | null,
  ): Promise<Outcome> {
    // Only a call that can be cut short (a wall-clock limit running, or a run that can be interrupted)
    // gets a signal of its own; the rest share one quiet signal.
    const controller = limit === null && signal === null ? null : new LazyAbort();
    const inv: Invocation = {
      planId,
      decisionId: decision.id,
      attempt,
      abort: controller,
      count: 0,
      open: true,
      inFlight: null,
    };
    const running = Promise.resolve().then(() => tool.run(decision.input, this.#context(inv)));
    // A wall-clock limit runs only for a guarded plan: an unguarded one has no clock to ask.
    const deadline =
      controller === null || limit === null || this.#service === null
        ? null
        : wallClockDeadline(this.#service, planId, limit, this.#timers, controller);
    const expired = deadline?.expired ?? null;
    // An interruption ends the wait for the tool at once: one that ignores its signal cannot hold the run.
    const interruption = signal === null ? null : untilInterrupted(signal, (why) => controller?.abort(why));
    const stopped = interruption?.stopped ?? null;
    try {
      const outcome =
        expired === null && stopped === null
          ? await running
          : await Promise.race(
              expired === null
                ? [running, stopped]
                : stopped === null
                  ? [running, expired]
                  : [running, expired, stopped],
            );
      return unwrap(outcome, estimate);
    } finally {
      interruption?.unlisten();
      inv.open = false;
      if (inv.inFlight !== null && inv.inFlight.size > 0) {
        const settled = Promise.allSettled(inv.inFlight);
        await (expired ? Promise.race([settled, expired.catch(() => undefined)]) : settled);
      }
      deadline?.stop();
    }
  }

  #context(inv: Invocation): ToolContext {
    return new InvocationContext(inv, this.#callTool(inv));
  }

  /** A context's `callTool`: a guarded nested call, numbered within the invocation and waited for by it. */
  #callTool(inv: Invocation): ToolContext['callTool'] {
    return (name, input) => {
      if (!inv.open) {
        return Promise.reject(
          new GuardrailError(
            'INVOCATION_ENDED',
            `tool "${name}" was called after its caller's invocation ended`,
          ),
        );
      }
      const n = inv.count++; // taken before any await: parallel calls are numbered apart
      const call = this.#callNested(inv, n, name, input);
      const inFlight = (inv.inFlight ??= new Set());
      inFlight.add(call);
      void call.then(
        () => inFlight.delete(call),
        () => inFlight.delete(call),
      );
      return call;
    };
  }

  /**
   * A tool calling a tool: checked against the per-invocation limit, then for confirmation, then its
   * own budget reservation. A nested tool that needs a person's confirmation is refused: a nested call
   * cannot wait for one.
   */
  async #callNested(
    inv: Invocation,
    n: number,
    name: string,
    input: JsonValue | undefined,
  ): Promise<unknown> {
    const tool = this.#tools.get(name);
    if (!tool) invalid('tool', `a registered tool (${[...this.#tools.keys()].join(', ')})`, name);
    // A call whose invocation was cut short (the wall clock ran out, the run was interrupted) goes no
    // further, also when that happened while one of its checks was out: the run has ended without it.
    const live = (): void => {
      if (inv.abort?.aborted) throw inv.abort.reason;
    };
    const rule = this.#rules.get(tool.name);
    const estimate = this.estimate(tool, input);
    const reservationId = runtimeKeyOf(inv.decisionId, `#${inv.attempt}/${n}`);
    const opened = await this.openCall(inv.planId, tool, estimate, reservationId, {
      live,
      currentCalls: n,
      operations: operationsOf({ id: inv.decisionId, tool: tool.name }, tool, rule),
      alwaysRequire: rule?.requiresConfirmation ? [normalizeOperation(tool.name)] : [],
    });
    const call = opened?.reservation;
    let outcome: Outcome;
    try {
      live(); // a reservation made as the call was cut short is given back
      outcome = unwrap(await tool.run(input, this.#context(inv)), estimate);
    } catch (error) {
      await call?.release();
      throw error;
    }
    const settled = await call?.commit(outcome.actual);
    if (settled?.eventType === 'budget_overrun') throw new GuardrailViolationError(settled);
    if (outcome.problem) throw outcome.problem;
    return outcome.output;
  }

  /** What a decision's try sets aside: its tool's estimate, or the decision's own cost when higher. */
  estimateOf(tool: Tool, decision: Decision): number {
    return Math.max(this.estimate(tool, decision.input), decision.cost ?? 0);
  }

  /** The estimate for one call: the policy's cost per call, else the tool's own. */
  estimate(tool: Tool, input: JsonValue | undefined): number {
    const rule = this.#rules.get(tool.name)?.costPerCall;
    if (rule !== undefined && rule !== null) return rule;
    const cost = typeof tool.cost === 'function' ? tool.cost(input) : (tool.cost ?? 0);
    toMicros(cost, `tools.${tool.name}.cost`, 'up');
    return cost;
  }
}

/** Throws the violation when a check denies. */
export function deny(check: GuardCheck): void {
  if (!check.allowed) throw new GuardrailViolationError(check);
}

/** The operations to confirm for a decision: the tool's, and the decision's own when it names another. */
export function operationsOf(decision: Decision, tool: Tool, rule: ToolRule | undefined): string[] {
  return operationsToConfirm(
    tool.name,
    tool.operation,
    rule?.requiresConfirmation ?? false,
    decision.operation,
  );
}
