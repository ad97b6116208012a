import { openCall, operationsToConfirm } from '../agent/calls.js';
import { realTimers, remainingMs, wallClockDeadline, type Timers } from '../agent/deadline.js';
import {
  backoffMs,
  errorName,
  nextRetry,
  retryPolicy,
  type RetryPolicy,
  type Sleep,
} from '../agent/retries.js';
import { unwrap, type Outcome } from '../agent/toolResult.js';
import { wait, type Clock } from '../clock.js';
import {
  describeValue,
  errorTail,
  GuardrailError,
  GuardrailValidationError,
  GuardrailViolationError,
  invalid,
  isGuardrailError,
  isGuardrailViolationError,
} from '../errors.js';
import type { GuardCheck } from '../guardrails/GuardCheck.js';
import { normalizeOperation } from '../guardrails/operation.js';
import { objectWithKeys } from '../guardrails/validate.js';
import type { JsonValue } from '../json.js';
import { toMicros } from '../money.js';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import type { BudgetReservation } from '../service/BudgetReservation.js';
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
import { isRetryable, type Tool, type ToolContext, type ToolRule } from './tools.js';

export type ExecutionStatus = 'completed' | 'failed' | 'awaiting_confirmation';

/** How a run ended. Work done before the end is in `completed`, whatever the status. */
export interface ExecutionResult {
  readonly status: ExecutionStatus;
  readonly completed: readonly CompletedDecision[];
  /** The guard that ended the run, when one did. */
  readonly violation?: GuardrailViolationError;
  /** The confirmation a person must give before `resume`, when the run is waiting for one. */
  readonly approval?: Approval;
  /**
   * The error that ended the run, when a tool failed for good (at once, or the same failure again once
   * its retries were used up) or the store could not be reached.
   */
  readonly error?: unknown;
  /** The decision the run ended at after its tool failed, with the tool's last error. */
  readonly failure?: DecisionFailure;
}

/** A decision whose tool failed, and how: what a person needs to see of why a run ended. */
export interface DecisionFailure {
  readonly decisionId: string;
  /** Tries made, the failed ones included. */
  readonly attempts: number;
  /** The tool's last error, as text: its last 20 lines, at most 4 KiB (see `errorTail`). */
  readonly error: string;
}

/** What the executor reports while it runs; see {@link PlanExecutor.on}. */
export interface ExecutorEvents {
  /** A decision's tool is about to run (again, when `attempt` > 1), its checks passed. */
  started: { readonly planId: string; readonly decisionId: string; readonly attempt: number };
  /** A decision ran to completion. */
  decision: { readonly planId: string; readonly decision: CompletedDecision };
  /** A guard ended the run. */
  violation: {
    readonly planId: string;
    readonly decisionId: string | null;
    readonly violation: GuardrailViolationError;
  };
  /** The run stopped to wait for a person. */
  awaiting_confirmation: { readonly planId: string; readonly approval: Approval };
  /** The run ended, whatever its status. */
  completed: { readonly planId: string; readonly result: ExecutionResult };
}

export type { Timers };

export type { Sleep };

/** Options of one run: {@link PlanExecutor.execute} and {@link PlanExecutor.resume}. */
export interface RunOptions {
  /** Interrupts the run when it aborts (Ctrl-C, a shutdown): it ends as failed, its work kept. */
  readonly signal?: AbortSignal;
}

export interface PlanExecutorOptions {
  /** Guardrails to enforce; without one the plan runs unguarded (no checks, no retries). */
  service?: AutonomyGuardrailService | null;
  tools?: readonly Tool[];
  /** Per-tool rules by tool name, e.g. `toolRules(policy)`. */
  toolRules?: ReadonlyMap<string, ToolRule>;
  /** How long a confirmation request stays valid. Default 24 hours. */
  approvalTtlMs?: number;
  /**
   * Waits between retries; defaults to a real timer. Inject one in tests. `signal` aborts when the run
   * is interrupted: the run stops waiting then, and a sleep should end and let go of its timer.
   */
  sleep?: Sleep;
  /**
   * Exponential backoff between retries of one failure: base * factor^n, at most maxMs. `maxRetries`
   * (default 3) caps retries per failure when the guardrails set no `max_retries_per_failure`.
   */
  retry?: { baseMs?: number; factor?: number; maxMs?: number; maxRetries?: number };
  timers?: Timers;
  /** Only to validate that callers pass one clock everywhere; the service's clock decides. */
  clock?: Clock;
}

const OPTION_KEYS = ['service', 'tools', 'toolRules', 'approvalTtlMs', 'sleep', 'retry', 'timers', 'clock'];
const DAY_MS = 24 * 60 * 60 * 1000;

function runSignal(options: RunOptions): AbortSignal | null {
  const o = objectWithKeys(options, 'options', ['signal']);
  const signal = o['signal'];
  if (signal === undefined) return null;
  if (!(signal instanceof AbortSignal)) invalid('options.signal', 'an AbortSignal', signal);
  return signal;
}

/** The error of a run interrupted through its signal. */
function interrupted(signal: AbortSignal): GuardrailError {
  const why = signal.reason instanceof Error ? `: ${signal.reason.message}` : '';
  return new GuardrailError('RUN_INTERRUPTED', `the run was interrupted${why}`, { cause: signal.reason });
}

/**
 * Rejects with the run's interruption once `signal` aborts (at once when it has), after calling
 * `onAbort`; `unlisten` stops listening once the wait it bounds is over.
 */
function untilInterrupted(
  signal: AbortSignal,
  onAbort: (why: GuardrailError) => void = () => undefined,
): { stopped: Promise<never>; unlisten: () => void } {
  let unlisten = (): void => {};
  const stopped = new Promise<never>((_, reject) => {
    const stop = (): void => {
      const why = interrupted(signal);
      onAbort(why);
      reject(why);
    };
    if (signal.aborted) return stop();
    signal.addEventListener('abort', stop, { once: true });
    unlisten = () => signal.removeEventListener('abort', stop);
  });
  stopped.catch(() => undefined);
  return { stopped, unlisten };
}

/** The signal of tools that cannot be aborted: no wall-clock limit is running. */
const QUIET: AbortSignal = new AbortController().signal;

type Listener<K extends keyof ExecutorEvents> = (event: ExecutorEvents[K]) => void;

/** One call of a decision's tool, shared by the contexts of the tools it calls. */
interface Invocation {
  readonly planId: string;
  readonly decisionId: string;
  readonly attempt: number;
  readonly signal: AbortSignal;
  /** Nested calls numbered so far. */
  count: number;
  /** False once the tool returned: later calls are refused. */
  open: boolean;
  readonly inFlight: Set<Promise<unknown>>;
}

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
  readonly #service: AutonomyGuardrailService | null;
  readonly #tools: ReadonlyMap<string, Tool>;
  readonly #rules: ReadonlyMap<string, ToolRule>;
  readonly #approvalTtlMs: number;
  readonly #sleep: Sleep;
  readonly #retry: RetryPolicy;
  readonly #timers: Timers;
  readonly #listeners = new Map<keyof ExecutorEvents, Set<(e: never) => void>>();

  constructor(options: PlanExecutorOptions = {}) {
    const o = objectWithKeys(options, 'options', OPTION_KEYS);
    this.#service = (o['service'] as AutonomyGuardrailService | null | undefined) ?? null;
    const tools = new Map<string, Tool>();
    const list = o['tools'] ?? [];
    if (!Array.isArray(list)) invalid('tools', 'an array of tools', list);
    list.forEach((tool: unknown, i) => {
      const t = tool as Tool | null;
      if (typeof t !== 'object' || t === null || typeof t.name !== 'string' || typeof t.run !== 'function') {
        invalid(`tools[${i}]`, 'a tool with a name and a run function', tool);
      }
      if (tools.has(t.name)) invalid(`tools[${i}].name`, 'unique', t.name);
      if (t.operation !== undefined) normalizeOperation(t.operation, `tools[${i}].operation`);
      if (typeof t.cost === 'number') toMicros(t.cost, `tools[${i}].cost`, 'up');
      tools.set(t.name, t);
    });
    this.#tools = tools;
    this.#rules = (o['toolRules'] as ReadonlyMap<string, ToolRule> | undefined) ?? new Map();
    const ttl = o['approvalTtlMs'] ?? DAY_MS;
    if (typeof ttl !== 'number' || !Number.isSafeInteger(ttl) || ttl < 1)
      invalid('approvalTtlMs', 'an integer >= 1', ttl);
    this.#approvalTtlMs = ttl;
    this.#sleep = (o['sleep'] as Sleep | undefined) ?? wait;
    this.#retry = retryPolicy(o['retry']);
    this.#timers = (o['timers'] as Timers | undefined) ?? realTimers;
  }

  /**
   * Subscribes to progress events; returns a function that unsubscribes. Events are frozen; a listener
   * that throws is ignored, so reporting can never break a run.
   */
  on<K extends keyof ExecutorEvents>(event: K, listener: Listener<K>): () => void {
    if (!['started', 'decision', 'violation', 'awaiting_confirmation', 'completed'].includes(event)) {
      invalid('event', 'one of started, decision, violation, awaiting_confirmation, completed', event);
    }
    const set = this.#listeners.get(event) ?? new Set();
    this.#listeners.set(event, set);
    set.add(listener as (e: never) => void);
    return () => void set.delete(listener as (e: never) => void);
  }

  /**
   * Runs a plan in phase `execute` from where its metadata says it got to (the start, for a new plan).
   * `signal` interrupts the run: the tool running gets an aborted `ctx.signal` (a backoff before a retry
   * ends at once, with no other try), and the run ends as failed (`RUN_INTERRUPTED`) with the work done
   * so far, its reservation given back.
   */
  async execute(plan: Plan, options: RunOptions = {}): Promise<ExecutionResult> {
    this.#validate(plan);
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
    this.#validate(plan);
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
    const approval = this.#service
      ? await this.#service.getApproval(paused.approvalId).catch(() => null)
      : null;
    const stepTaken = approval?.planId === plan.id && approval.decisionId === paused.decisionId;
    return this.#run(plan, state, stepTaken, runSignal(options));
  }

  /**
   * Checks a plan as `execute` and `resume` do before anything runs: its shape, its tools, and each
   * decision's cost estimate. Throws GuardrailValidationError naming the path.
   */
  validate(plan: Plan): void {
    this.#validate(plan);
  }

  /** The plan's shape, and each remaining decision's cost estimate, before anything runs. */
  #validate(plan: Plan): void {
    validatePlan(plan, new Set(this.#tools.keys()));
    plan.decisions.forEach((decision, i) => {
      const tool = this.#tools.get(decision.tool) as Tool;
      try {
        this.#estimate(tool, decision.input);
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
      if (this.#service) await this.#service.markStarted(plan.id);
      // Decisions run in order, so the next one to run is always the count of those completed.
      while (completed.length < plan.decisions.length) {
        if (signal?.aborted) throw new ToolFailed(interrupted(signal));
        const decision = plan.decisions[completed.length] as Decision;
        const resuming = paused?.decisionId === decision.id ? paused : null;
        paused = null;
        const guarded = await this.#guardDecision(plan, decision, resuming, resuming !== null && stepTaken);
        if ('paused' in guarded) {
          paused = guarded.paused;
          throw new Paused_(guarded.approval);
        }
        await this.#runDecision(plan, decision, completed, guarded, signal, last);
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
  ): Promise<
    { paused: Paused; approval: Approval } | { wall: GuardCheck | null; reservation?: BudgetReservation }
  > {
    const service = this.#service;
    if (!service) return { wall: null };
    const tool = this.#tools.get(decision.tool) as Tool;
    const rule = this.#rules.get(tool.name);
    // One literal, not a spread: spreading then adding a key leaves V8's fast path on every decision.
    const ask = {
      decisionId: decision.id,
      operation: operationsOf(decision, tool, rule),
      input: decision.input,
      alwaysRequire: rule?.requiresConfirmation ? [tool.name] : [],
      ttlMs: this.#approvalTtlMs,
    };
    if (!resuming && !stepTaken) {
      // A decision met for the first time: every check before its first try is one update of the plan.
      const max = rule?.maxCallsPerPlan ?? null;
      const begun = await service.beginToolCall(plan.id, {
        confirm: ask,
        ...(max === null ? {} : { tool: { name: tool.name, maxCallsPerPlan: max } }),
        estimate: this.#estimateOf(tool, decision),
        reservationId: `${decision.id}#1`,
      });
      if (begun !== null) {
        const { check, approval, reservation, wallClock } = begun;
        if (reservation !== undefined) return { wall: wallClock, reservation };
        if (approval === undefined) throw new GuardrailViolationError(check);
        return { paused: { decisionId: decision.id, approvalId: approval.id }, approval };
      }
      // Not configured: the checks, one by one, answer as the service's options say.
    }
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
   */
  async #runDecision(
    plan: Plan,
    decision: Decision,
    completed: CompletedDecision[],
    first: { readonly wall: GuardCheck | null; readonly reservation?: BudgetReservation },
    signal: AbortSignal | null,
    last: { failure?: DecisionFailure },
  ): Promise<void> {
    const service = this.#service;
    const tool = this.#tools.get(decision.tool) as Tool;
    const failures = new Map<string, number>();
    let wall = first.wall;
    for (let attempt = 1; ; attempt++) {
      if (service && attempt > 1) {
        wall = await service.checkWallClock(plan.id);
        deny(wall);
      }
      const estimate = this.#estimateOf(tool, decision);
      const call =
        attempt === 1 && first.reservation !== undefined
          ? first.reservation
          : await this.#openCall(plan.id, tool, estimate, `${decision.id}#${attempt}`);
      let outcome: Outcome;
      // The payload is built only for a listener: this runs for every try of every decision.
      if (this.#listeners.get('started')?.size) {
        this.#emit('started', { planId: plan.id, decisionId: decision.id, attempt });
      }
      try {
        outcome = await this.#invoke(plan.id, decision, tool, attempt, estimate, remainingMs(wall), signal);
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
        const retries = await nextRetry(
          service,
          plan.id,
          failures,
          fingerprint,
          toolError as string,
          this.#retry,
        );
        // Out of retries, the tool has failed for good: its error ends the run, not the retry guard, so
        // that "the tool failed" and "a limit ran out" stay apart. The refusal is in the audit log.
        if (retries === null) throw failure(error);
        await this.#pause(backoffMs(this.#retry, retries), signal);
        continue;
      }
      const done: CompletedDecision = Object.freeze({
        decisionId: decision.id,
        output: outcome.output,
        cost: outcome.actual,
        attempts: attempt,
      });
      const settled = await call?.commit(outcome.actual);
      completed.push(done); // the work happened and was paid for: keep it, whatever comes next
      delete last.failure;
      this.#emit('decision', { planId: plan.id, decision: done });
      if (settled?.eventType === 'budget_overrun') throw new GuardrailViolationError(settled);
      // A tool that misreported its cost was charged its estimate; it ran, but the run stops here.
      if (outcome.problem) throw new ToolFailed(outcome.problem);
      return;
    }
  }

  /**
   * Per-tool calls and the budget reservation for one call; null when unguarded. `live` throws when the
   * call may go no further: it is asked before the reservation.
   */
  async #openCall(
    planId: string,
    tool: Tool,
    estimate: number,
    reservationId: string,
    live: () => void = () => undefined,
  ): Promise<BudgetReservation | null> {
    const service = this.#service;
    if (!service) return null;
    const max = this.#rules.get(tool.name)?.maxCallsPerPlan ?? null;
    const opened = await openCall(service, planId, tool.name, max, estimate, reservationId, live);
    if ('denied' in opened) throw new GuardrailViolationError(opened.denied);
    return opened.reservation;
  }

  /**
   * Calls the tool with a context whose signal aborts, and whose result stops being waited for, when
   * the wall clock runs out: a tool that ignores the signal cannot hold the run past its limit. Nested
   * calls still in flight when the tool returns settle before the run moves on, so their cost is in the
   * state saved next; after that the context refuses further calls.
   */
  async #invoke(
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
    const controller = limit === null && signal === null ? null : new AbortController();
    const inv: Invocation = {
      planId,
      decisionId: decision.id,
      attempt,
      signal: controller?.signal ?? QUIET,
      count: 0,
      open: true,
      inFlight: new Set(),
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
      if (inv.inFlight.size > 0) {
        const settled = Promise.allSettled(inv.inFlight);
        await (expired ? Promise.race([settled, expired.catch(() => undefined)]) : settled);
      }
      deadline?.stop();
    }
  }

  #context(inv: Invocation): ToolContext {
    return Object.freeze({
      planId: inv.planId,
      decisionId: inv.decisionId,
      attempt: inv.attempt,
      signal: inv.signal,
      callTool: (name: string, input?: JsonValue) => {
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
        inv.inFlight.add(call);
        void call.then(
          () => inv.inFlight.delete(call),
          () => inv.inFlight.delete(call),
        );
        return call;
      },
    });
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
    const service = this.#service;
    const tool = this.#tools.get(name);
    if (!tool) invalid('tool', `a registered tool (${[...this.#tools.keys()].join(', ')})`, name);
    // A call whose invocation was cut short (the wall clock ran out, the run was interrupted) goes no
    // further, also when that happened while one of its checks was out: the run has ended without it.
    const live = (): void => {
      if (inv.signal.aborted) throw inv.signal.reason;
    };
    live();
    const rule = this.#rules.get(tool.name);
    if (service) {
      deny(await service.checkActorToolCalls(inv.planId, n));
      const always = rule?.requiresConfirmation ? normalizeOperation(tool.name) : null;
      for (const op of operationsOf({ id: inv.decisionId, tool: tool.name }, tool, rule)) {
        live();
        deny(await service.checkConfirmation(inv.planId, op, { alwaysRequire: op === always }));
      }
    }
    const estimate = this.#estimate(tool, input);
    live();
    const reservationId = `${inv.decisionId}#${inv.attempt}/${n}`;
    const call = await this.#openCall(inv.planId, tool, estimate, reservationId, live);
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
  #estimateOf(tool: Tool, decision: Decision): number {
    return Math.max(this.#estimate(tool, decision.input), decision.cost ?? 0);
  }

  /** The estimate for one call: the policy's cost per call, else the tool's own. */
  #estimate(tool: Tool, input: JsonValue | undefined): number {
    const rule = this.#rules.get(tool.name)?.costPerCall;
    if (rule !== undefined && rule !== null) return rule;
    const cost = typeof tool.cost === 'function' ? tool.cost(input) : (tool.cost ?? 0);
    toMicros(cost, `tools.${tool.name}.cost`, 'up');
    return cost;
  }

  /** Waits out a retry's backoff; an interruption ends the wait, and the run, at once: no other try. */
  async #pause(ms: number, signal: AbortSignal | null): Promise<void> {
    if (signal === null) return this.#sleep(ms);
    if (!signal.aborted) {
      const interruption = untilInterrupted(signal);
      try {
        await Promise.race([this.#sleep(ms, signal), interruption.stopped]);
      } catch (error) {
        if (!signal.aborted) throw error; // the sleep's own failure
      } finally {
        interruption.unlisten();
      }
    }
    if (signal.aborted) throw new ToolFailed(interrupted(signal));
  }

  async #end(plan: Plan, result: ExecutionResult, state: ExecutionState): Promise<ExecutionResult> {
    plan.phase = result.status;
    const metadata = { ...plan.metadata, [EXECUTION_KEY]: stateToJson(state) };
    let ended = result;
    try {
      plan.metadata = this.#service ? await this.#service.toMetadata(plan.id, metadata) : metadata;
    } catch (error) {
      // The guardrail state could not be read back; keep the progress, and say why.
      plan.metadata = metadata;
      ended = freezeResult({ ...result, status: 'failed', error });
      plan.phase = 'failed';
    }
    if (ended.violation) {
      this.#emit('violation', {
        planId: plan.id,
        decisionId: plan.decisions[state.next]?.id ?? null,
        violation: ended.violation,
      });
    }
    if (ended.approval && ended.status === 'awaiting_confirmation') {
      this.#emit('awaiting_confirmation', { planId: plan.id, approval: ended.approval });
    }
    this.#emit('completed', { planId: plan.id, result: ended });
    return ended;
  }

  #emit<K extends keyof ExecutorEvents>(event: K, payload: ExecutorEvents[K]): void {
    const listeners = this.#listeners.get(event);
    if (!listeners || listeners.size === 0) return;
    const frozen = Object.freeze(payload);
    for (const listener of listeners) {
      try {
        (listener as Listener<K>)(frozen as ExecutorEvents[K]);
      } catch {
        // Reporting must never break a run.
      }
    }
  }
}

/** Throws the violation when a check denies. */
function deny(check: GuardCheck): void {
  if (!check.allowed) throw new GuardrailViolationError(check);
}

/** The operations to confirm for a decision: the tool's, and the decision's own when it names another. */
function operationsOf(decision: Decision, tool: Tool, rule: ToolRule | undefined): string[] {
  return operationsToConfirm(
    tool.name,
    tool.operation,
    rule?.requiresConfirmation ?? false,
    decision.operation,
  );
}

/** A failure to end the run with: guard errors as they are, anything else as the tool's error. */
function failure(error: unknown): unknown {
  return isGuardrailError(error) ? error : new ToolFailed(error);
}

function freezeResult(result: ExecutionResult): ExecutionResult {
  return Object.freeze({ ...result, completed: Object.freeze([...result.completed]) });
}
