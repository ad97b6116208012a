import { runtimeKeyOf } from '../guardrails/runtime.js';
import { remainingMs } from '../agent/deadline.js';
import { backoffMs, errorName, nextRetry } from '../agent/retries.js';
import { type Outcome } from '../agent/toolResult.js';
import {
  describeValue,
  errorTail,
  GuardrailValidationError,
  GuardrailViolationError,
  isGuardrailError,
  isGuardrailViolationError,
  isStoreOutcomeUnknownError,
} from '../errors.js';
import type { ToolCallBegun } from '../service/toolCall.js';
import type { Approval } from '../store/GuardrailStore.js';
import { validatePlan, type Decision, type Plan } from './Plan.js';
import {
  EXECUTION_KEY,
  stateFromMetadata,
  stateToJson,
  type CompletedDecision,
  type ExecutionState,
  type Paused,
} from './state.js';
import { isRetryable, type Tool } from './tools.js';
import { beginDecision, decisionAsk, guardedBy, type Guarded, type Pause } from './decisionChecks.js';
import { deny, Invoker } from './invocation.js';
import { Listeners, type Listener } from './listeners.js';
import { backoff, interrupted, runSignal } from './interruption.js';
import {
  executorSettings,
  type ExecutorSettings,
  type DecisionFailure,
  freezeResult,
  type ExecutionResult,
  type ExecutorEvents,
  type PlanExecutorOptions,
  type RunOptions,
} from './types.js';

export type {
  DecisionFailure,
  ExecutionResult,
  ExecutionStatus,
  ExecutorEvents,
  PlanExecutorOptions,
  RunOptions,
} from './types.js';
export type { Timers } from '../agent/deadline.js';
export type { Sleep } from '../agent/retries.js';

/** Ends a run from deep inside it: a pause for a person. */
class Paused_ {
  constructor(readonly approval: Approval) {}
}

/** Ends a run from deep inside it: a tool failed for good. */
class ToolFailed {
  constructor(readonly error: unknown) {}
}

/**
 * Runs a plan's decisions in order under the plan's guardrails. Per decision, each check audited: wall
 * clock → step limit → confirmation → (per-tool calls) → budget reservation of the estimate → run →
 * commit the actual cost, or release the reservation on failure; a failure is retried per failure
 * (decision + error name) up to `max_retries_per_failure`, with exponential backoff.
 *
 * A guard that says no ends the run with the work done so far; an operation that needs a person pauses it
 * with a pending approval (the plan's state saved in its metadata) until `resume`. `execute` and `resume`
 * resolve in every such case and throw only for a malformed plan (GuardrailValidationError).
 */
export class PlanExecutor {
  /** The options, checked. */
  readonly #s: ExecutorSettings;
  readonly #invoker: Invoker;
  readonly #listeners = new Listeners();

  constructor(options: PlanExecutorOptions = {}) {
    this.#s = executorSettings(options);
    this.#invoker = new Invoker(this.#s);
  }

  /**
   * Subscribes to progress events; returns a function that unsubscribes. Events are frozen; a listener
   * that throws is ignored, so reporting can never break a run.
   */
  on<K extends keyof ExecutorEvents>(event: K, listener: Listener<K>): () => void {
    return this.#listeners.add(event, listener);
  }

  /**
   * Runs a plan in phase `execute` from where its metadata says it got to (the start, for a new plan).
   * `signal` interrupts the run: the tool running gets an aborted `ctx.signal` (a backoff before a retry
   * ends at once, with no other try), and the run ends as failed (`RUN_INTERRUPTED`) with the work done
   * so far, its reservation given back.
   */
  async execute(plan: Plan, options: RunOptions = {}): Promise<ExecutionResult> {
    this.validate(plan);
    if (plan.phase !== 'execute') {
      throw new GuardrailValidationError(
        'plan.phase',
        `execute() runs a plan in phase "execute", got ${describeValue(plan.phase)}`,
      );
    }
    const state = stateFromMetadata(plan.metadata, plan.decisions.length);
    return this.#run(plan, { ...state, paused: null }, false, runSignal(options));
  }

  /** Continues a plan awaiting confirmation at the decision it paused at; `signal` as for `execute`. */
  async resume(plan: Plan, options: RunOptions = {}): Promise<ExecutionResult> {
    this.validate(plan);
    if (plan.phase !== 'awaiting_confirmation') {
      throw new GuardrailValidationError(
        'plan.phase',
        `resume() continues a plan in phase "awaiting_confirmation", got ${describeValue(plan.phase)}`,
      );
    }
    const state = stateFromMetadata(plan.metadata, plan.decisions.length);
    if (state.paused === null || plan.decisions[state.next]?.id !== state.paused.decisionId) {
      throw new GuardrailValidationError(
        `plan.metadata.${EXECUTION_KEY}.paused`,
        `plan "${plan.id}" has no paused decision to resume at`,
      );
    }
    // The step was counted before the approval was asked for, and only the store can say it was asked
    // for: a paused state written by hand finds no approval, and the step is counted again.
    const paused = state.paused;
    const approval = this.#s.service
      ? await this.#s.service.getApproval(paused.approvalId).catch(() => null)
      : null;
    const stepTaken = approval?.planId === plan.id && approval.decisionId === paused.decisionId;
    return this.#run(plan, state, stepTaken, runSignal(options));
  }

  /**
   * Checks a plan as `execute` and `resume` do before anything runs: its shape, its tools, and each
   * decision's cost estimate. Throws GuardrailValidationError naming the path.
   */
  validate(plan: Plan): void {
    validatePlan(plan, new Set(this.#s.tools.keys()));
    plan.decisions.forEach((decision, i) => {
      const tool = this.#s.tools.get(decision.tool) as Tool;
      try {
        this.#invoker.estimate(tool, decision.input);
      } catch (error) {
        throw new GuardrailValidationError(
          `plan.decisions[${i}].cost`,
          `plan.decisions[${i}] has no valid cost estimate from tool "${tool.name}": ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
      }
    });
  }

  async #run(
    plan: Plan,
    start: ExecutionState,
    stepTaken: boolean,
    signal: AbortSignal | null,
  ): Promise<ExecutionResult> {
    const completed = [...start.completed];
    let paused = start.paused;
    // The last failure of the decision running, kept to say why the run ended there.
    const last: { failure?: DecisionFailure } = {};
    let result: ExecutionResult;
    try {
      if (this.#s.service) await this.#s.service.markStarted(plan.id);
      // The next decision's checks, when they went with the settlement of the one before.
      let sent: ToolCallBegun | null = null;
      // Decisions run in order, so the next one to run is always the count of those completed.
      while (completed.length < plan.decisions.length) {
        // Checks are sent ahead only in a run that cannot be interrupted (see #runDecision).
        if (signal?.aborted) throw new ToolFailed(interrupted(signal));
        const decision = plan.decisions[completed.length] as Decision;
        const resuming = paused?.decisionId === decision.id ? paused : null;
        paused = null;
        const guarded =
          sent === null
            ? await this.#guardDecision(plan, decision, resuming, resuming !== null && stepTaken)
            : guardedBy(decision, sent);
        sent = null;
        if ('paused' in guarded) {
          paused = guarded.paused;
          throw new Paused_(guarded.approval);
        }
        sent = await this.#runDecision(plan, decision, completed, guarded, signal, last);
      }
      result = { status: 'completed', completed };
    } catch (thrown) {
      if (thrown instanceof Paused_)
        result = { status: 'awaiting_confirmation', completed, approval: thrown.approval };
      else if (thrown instanceof ToolFailed) result = { status: 'failed', completed, error: thrown.error };
      else if (isGuardrailViolationError(thrown)) result = { status: 'failed', completed, violation: thrown };
      else result = { status: 'failed', completed, error: thrown }; // the store failed: fail closed
      if (last.failure !== undefined) result = { ...result, failure: last.failure };
    }
    const state: ExecutionState = { next: completed.length, completed, paused };
    return this.#end(plan, freezeResult(result), state);
  }

  /**
   * The checks before a decision runs: wall clock, step, and confirmation of all its operations at once
   * (one approval covers those that need a person). Returns the pause when a person must confirm first;
   * throws a violation when a guard says no.
   */
  async #guardDecision(
    plan: Plan,
    decision: Decision,
    resuming: Paused | null,
    stepTaken: boolean,
  ): Promise<Pause | Guarded> {
    const service = this.#s.service;
    if (!service) return { wall: null };
    if (!resuming && !stepTaken) {
      // A decision met for the first time: every check before its first try is one update of the plan.
      const begun = await beginDecision(this.#s, this.#invoker, service, plan, decision, undefined);
      if (begun !== null) return guardedBy(decision, begun);
      // Not configured: the checks, one by one, answer as the service's options say.
    }
    const ask = decisionAsk(this.#s, decision);
    const wall = await service.checkWallClock(plan.id);
    deny(wall);
    if (!stepTaken) deny(await service.takeStep(plan.id));
    if (resuming) {
      const use = await service.useGrant(plan.id, resuming.approvalId, ask);
      if (use.outcome === 'granted') return { wall };
      if (use.outcome === 'denied') throw new GuardrailViolationError(use.check);
      if (use.outcome === 'pending' && use.approval) {
        return { paused: { decisionId: decision.id, approvalId: use.approval.id }, approval: use.approval };
      }
      // refused (expired, used, other input, or not found): ask again
    }
    const request = await service.requestConfirmation(plan.id, ask);
    if (request.check.allowed) return { wall };
    if (!request.approval) throw new GuardrailViolationError(request.check);
    return {
      paused: { decisionId: decision.id, approvalId: request.approval.id },
      approval: request.approval,
    };
  }

  /**
   * Runs one decision's tool with its budget reservation, retrying failures the guardrails allow, and
   * adds it to `completed` once it ran (also when its cost then overran the budget: the work is kept).
   *
   * The next decision's checks are sent with the settlement, so that a store that writes the updates
   * made together in one transaction (SQLite, PostgreSQL) commits once for both; they are decided only
   * if the settlement is made within the budget, and answer null otherwise (the run stops, or asks
   * again). Not while someone listens for `decision` (a listener sees the decision settled before the
   * next one is checked), nor in a run that can be interrupted. Resolves with those checks, or null;
   * refused (a store that failed), they wrote nothing, and are asked again; lost on their way
   * (StoreOutcomeUnknownError), they may have been written, and the run ends on the error.
   */
  async #runDecision(
    plan: Plan,
    decision: Decision,
    completed: CompletedDecision[],
    first: Guarded,
    signal: AbortSignal | null,
    last: { failure?: DecisionFailure },
  ): Promise<ToolCallBegun | null> {
    const service = this.#s.service;
    const tool = this.#s.tools.get(decision.tool) as Tool;
    let failures: Map<string, number> | undefined; // made at the first failure: most decisions have none
    let wall = first.wall;
    for (let attempt = 1; ; attempt++) {
      const estimate = this.#invoker.estimateOf(tool, decision);
      let call = first.reservation;
      if (attempt > 1 || call === undefined) {
        // Another try checks the wall clock again, with the rest of its checks.
        const id = runtimeKeyOf(decision.id, `#${attempt}`);
        const opened = await this.#invoker.openCall(plan.id, tool, estimate, id, { wallClock: attempt > 1 });
        call = opened?.reservation;
        wall = opened?.wall ?? wall;
      }
      let outcome: Outcome;
      // The payload is built only for a listener: this runs for every try of every decision.
      if (this.#listeners.listening('started')) {
        this.#listeners.emit('started', { planId: plan.id, decisionId: decision.id, attempt });
      }
      try {
        outcome = await this.#invoker.invoke(
          plan.id,
          decision,
          tool,
          attempt,
          estimate,
          remainingMs(wall),
          signal,
        );
      } catch (error) {
        // The tool's own failure, kept and audited; an interruption or a guard's error says it all itself.
        const toolError = signal?.aborted || isGuardrailError(error) ? undefined : errorTail(error);
        await call?.release(toolError === undefined ? {} : { error: toolError });
        if (signal?.aborted) throw new ToolFailed(interrupted(signal));
        if (toolError !== undefined)
          last.failure = { decisionId: decision.id, attempts: attempt, error: toolError };
        // Guard errors (a violation, a bad argument) and errors marked so are not worth another try.
        if (!service || isGuardrailError(error) || !isRetryable(error)) throw failure(error);
        const fingerprint = `${decision.id}:${errorName(error)}`;
        failures ??= new Map();
        const retries = await nextRetry(
          service,
          plan.id,
          failures,
          fingerprint,
          toolError as string,
          this.#s.retry,
        );
        // Out of retries, the tool has failed for good: its error ends the run, not the retry guard, so
        // that "the tool failed" and "a limit ran out" stay apart. The refusal is in the audit log.
        if (retries === null) throw failure(error);
        const cut = await backoff(this.#s.sleep, backoffMs(this.#s.retry, retries), signal);
        if (cut !== null) throw new ToolFailed(cut);
        continue;
      }
      const done: CompletedDecision = Object.freeze({
        decisionId: decision.id,
        output: outcome.output,
        cost: outcome.actual,
        attempts: attempt,
      });
      const settling = call?.commit(outcome.actual);
      const next = plan.decisions[completed.length + 1];
      // Not in a run that can be interrupted: a step taken ahead for a decision an interruption then
      // stops would stay taken.
      const ahead =
        service &&
        call?.open &&
        next &&
        !outcome.problem &&
        signal === null &&
        !this.#listeners.listening('decision')
          ? beginDecision(this.#s, this.#invoker, service, plan, next, call.id)
          : null;
      // Awaited below if the run goes on; if the settlement failed, that says why the run ended.
      ahead?.catch(() => {});
      const settled = await settling;
      completed.push(done); // the work happened and was paid for: keep it, whatever comes next
      delete last.failure;
      this.#listeners.emit('decision', { planId: plan.id, decision: done });
      if (settled?.eventType === 'budget_overrun') throw new GuardrailViolationError(settled);
      // A tool that misreported its cost was charged its estimate; it ran, but the run stops here.
      if (outcome.problem) throw new ToolFailed(outcome.problem);
      return ahead === null
        ? null
        : ahead.catch((error: unknown) => {
            // Checks that may have been written are not asked for again: the run ends on the store's error.
            if (isStoreOutcomeUnknownError(error)) throw error;
            return null;
          });
    }
  }

  async #end(plan: Plan, result: ExecutionResult, state: ExecutionState): Promise<ExecutionResult> {
    plan.phase = result.status;
    const metadata = { ...plan.metadata, [EXECUTION_KEY]: stateToJson(state) };
    let ended = result;
    try {
      plan.metadata = this.#s.service ? await this.#s.service.toMetadata(plan.id, metadata) : metadata;
    } catch (error) {
      // The guardrail state could not be read back; keep the progress, and say why.
      plan.metadata = metadata;
      ended = freezeResult({ ...result, status: 'failed', error });
      plan.phase = 'failed';
    }
    if (ended.violation) {
      this.#listeners.emit('violation', {
        planId: plan.id,
        decisionId: plan.decisions[state.next]?.id ?? null,
        violation: ended.violation,
      });
    }
    if (ended.approval && ended.status === 'awaiting_confirmation') {
      this.#listeners.emit('awaiting_confirmation', { planId: plan.id, approval: ended.approval });
    }
    this.#listeners.emit('completed', { planId: plan.id, result: ended });
    return ended;
  }
}

/** A failure to end the run with: guard errors as they are, anything else as the tool's error. */
function failure(error: unknown): unknown {
  return isGuardrailError(error) ? error : new ToolFailed(error);
}
