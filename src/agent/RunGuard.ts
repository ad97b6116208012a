import { randomUUID } from 'node:crypto';
import { runtimeKeyOf } from '../guardrails/runtime.js';
import { invalid, isGuardrailViolationError } from '../errors.js';
import type { GuardCheck } from '../GuardCheck.js';
import { normalizeOperation } from '../guardrails/operation.js';
import { objectWithKeys } from '../guardrails/validate.js';
import { isPlainObject } from '../json.js';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import type { BudgetReservation } from '../service/BudgetReservation.js';
import type { Approval } from '../store/GuardrailStore.js';
import { modelIdOf, traceModelCall, traceOpenedModelCall, traceToolCall } from '../telemetry/spans.js';
import type { Telemetry } from '../telemetry/Telemetry.js';
import { operationsToConfirm } from './calls.js';
import { OneAtATime } from './oneAtATime.js';
import { PlanStart } from './planStart.js';
import { endedText, endsTheRun } from './denied.js';
import {
  openModelCall,
  runModelCall,
  type ModelCallDone,
  type ModelCallHandle,
  type ModelCallContext,
  type ModelCallRequest,
  type ModelCallStart,
} from './modelCalls.js';
import { estimateCostMicros, FREE_RATES, type ModelRates, type TokenEstimate } from './prices.js';
import { LazyAbort, remainingMs, wallClockDeadline } from './deadline.js';
import {
  stillAsked,
  validRequest,
  type AgentToolRule,
  type Ask,
  type ToolCallRequest,
  type ToolCallStart,
  type ValidRequest,
} from './requests.js';
import { denied, OpenedCall, type Denied, type OpenedModelCall, type ToolCallOutcome } from './outcomes.js';
import { runGuardSettings, type RunGuardOptions, type RunGuardSettings } from './runGuardOptions.js';
import { runToolCall, type ToolRun } from './toolRun.js';
import { notConfigured } from './unconfigured.js';

export type { AgentToolRule, ToolCallContext, ToolCallRequest, ToolCallStart } from './requests.js';
export type { Denied, OpenedModelCall, ToolCallDone, ToolCallOutcome } from './outcomes.js';
export type { RunGuardOptions } from './runGuardOptions.js';
export type { UnconfiguredPlans } from './unconfigured.js';

/**
 * Guards a live agent loop's tool calls under one plan's guardrails, as the executor does for a plan's
 * decisions. Per call, each check audited in the plan's log: wall clock → step (one tool call is one
 * step) → confirmation (a single-use grant bound to the plan, the tool call id, the operations and the
 * hash of the tool's name with its input) → calls per plan of the tool and tool calls of this invocation
 * (one guard is one invocation) → budget reservation of the estimate → run, its signal aborted when the
 * wall clock runs out (the call denied and charged its estimate, since it may still be running) → commit
 * of the actual cost, or release on failure. A failure is retried per failure (tool call id and error
 * name) up to `max_retries_per_failure`.
 *
 * A denial is a value (`allowed: false`), never an exception; a call that needs a person is denied with
 * the pending approval, the same one for every call with its id until a person decides.
 */
export class RunGuard {
  readonly service: AutonomyGuardrailService;
  readonly planId: string;
  /** The options, checked. */
  readonly #s: RunGuardSettings;
  /** Tool calls started through this guard: the invocation's count. */
  #calls = 0;
  /**
   * What this guard's tool reservation ids begin with: `tool:` and a tag of the guard, so that two guards
   * of one plan running calls with one id (a model's `call_0`) reserve apart rather than share one.
   */
  readonly #reservations = `tool:${randomUUID().slice(0, 8)}:`;
  /** The plan's start, marked on first use. */
  readonly #start: PlanStart;
  /** Model call ids of calls opened through this guard and not settled yet. */
  readonly #openModelCalls = new Set<string>();
  /** The price and estimate of the last model call opened through this guard, to foresee the next. */
  #lastModel: { readonly rates: ModelRates | null; readonly estimate: TokenEstimate } | null = null;
  /** Calls with one tool call id go one at a time. */
  readonly #byCallId = new OneAtATime();
  /** The last limit that refused a call of this guard, or that {@link limitReached} found. */
  #lastLimit: GuardCheck | null = null;
  /** The service's telemetry: each call traced on its span when there is one. */
  readonly #telemetry: Telemetry | null;

  constructor(options: RunGuardOptions) {
    this.#s = runGuardSettings(options);
    this.service = this.#s.service;
    this.planId = this.#s.planId;
    this.#telemetry = this.service.telemetry;
    this.#start = new PlanStart(this.service, this.planId);
  }

  /**
   * The limit that ended, or is ending, this guard's run: the last check of the budget, the steps, the
   * wall clock or the calls of the run that refused one of its calls, or that {@link limitReached}
   * found. Null while none did. Read it once a loop ended to say why (`guardStop`, the LangChain and
   * OpenAI Agents adapters end their loops on it).
   */
  get lastLimit(): GuardCheck | null {
    return this.#lastLimit;
  }

  /** {@link lastLimit} as a line an application may show (`leash ended the run (…): …`), or null. */
  get lastLimitText(): string | null {
    return this.#lastLimit === null ? null : endedText(this.#lastLimit);
  }

  /** Notes a refusal that ends the run as the guard's last limit; returns the outcome. */
  #noted<O extends { readonly allowed: boolean; readonly check?: GuardCheck }>(outcome: O): O {
    if (!outcome.allowed && outcome.check !== undefined && endsTheRun(outcome.check)) {
      this.#lastLimit = outcome.check;
    }
    return outcome;
  }

  /**
   * Meters one model call: checks the wall clock, sets the price of its estimate aside (denied, as a
   * value, when the clock ran out or the budget cannot cover it), runs it with a signal aborted when the
   * wall clock runs out, and spends what its usage cost; a call that throws gives the estimate back, one
   * cut short by the wall clock is charged its estimate and denied. A model call is not a step. A model
   * with no price, while the plan has a budget, is denied (`budget_blocked`, naming the policy key
   * `models.<id>`) unless `unpricedModels` is `allow`.
   */
  modelCall<T>(request: ModelCallRequest<T>): Promise<ModelCallDone<T> | Denied> {
    const telemetry = this.#telemetry;
    if (telemetry === null) return this.#modelCall(request);
    return traceModelCall(telemetry, this.planId, modelIdOf(request), () => this.#modelCall(request));
  }

  async #modelCall<T>(request: ModelCallRequest<T>): Promise<ModelCallDone<T> | Denied> {
    const run = isPlainObject(request) ? request['run'] : undefined;
    if (typeof run !== 'function') invalid('run', 'a function', run);
    const opened = await this.#openModelCall(request);
    if (!opened.allowed) return this.#noted(opened);
    const controller = new AbortController();
    const ctx: ModelCallContext = Object.freeze({ signal: controller.signal });
    const limit = remainingMs(opened.wall);
    const deadline =
      limit === null ? null : wallClockDeadline(this.service, this.planId, limit, this.#s.timers, controller);
    try {
      return await runModelCall(opened.handle, request.run, ctx, deadline?.expired);
    } catch (error) {
      if (isGuardrailViolationError(error)) return this.#noted(denied(error.check));
      throw error;
    } finally {
      deadline?.stop();
    }
  }

  /**
   * Opens a metered model call whose end the caller settles (a stream): the handle's `commit(usage)` at
   * its finish, `release()` when it failed, `abandon()` when it was cancelled before its finish. Its
   * `signal` aborts when the wall clock runs out while it is open (the call then charged its estimate).
   * Denied, as a value, when the wall clock ran out or the budget cannot cover the estimate.
   */
  openModelCall(start: ModelCallStart): Promise<OpenedModelCall | Denied> {
    const telemetry = this.#telemetry;
    if (telemetry === null) return this.#openStream(start);
    // The span lives on until the caller settles the handle, at the stream's end.
    return traceOpenedModelCall(telemetry, this.planId, modelIdOf(start), () => this.#openStream(start));
  }

  async #openStream(start: ModelCallStart): Promise<OpenedModelCall | Denied> {
    let stop = (): void => undefined;
    const opened = await this.#openModelCall(start, () => stop());
    if (!opened.allowed) return this.#noted(opened);
    const { handle } = opened;
    const abort = new LazyAbort();
    const limit = remainingMs(opened.wall);
    if (limit !== null) {
      const deadline = wallClockDeadline(this.service, this.planId, limit, this.#s.timers, abort);
      stop = () => deadline.stop();
      // The clock ran out with the call still open: charged its estimate, as a cancelled stream is.
      deadline.expired.catch(() => handle.abandon().catch(() => undefined));
    }
    return new OpenedCall(handle, abort);
  }

  /** The wall-clock check, then the model call's reservation: the handle and the clock's answer. */
  async #openModelCall(
    start: ModelCallStart,
    onSettled: () => void = () => undefined,
  ): Promise<
    { readonly allowed: true; readonly handle: ModelCallHandle; readonly wall: GuardCheck } | Denied
  > {
    await this.#start.mark();
    const wall = (): Promise<GuardCheck> => this.service.checkWallClock(this.planId);
    const opened = await openModelCall(
      this.service,
      this.planId,
      this.#s.models,
      this.#s.unpricedModels,
      start,
      wall,
      this.#openModelCalls,
      onSettled,
      () => this.#configuredOrAllowed(null),
    );
    if ('denied' in opened) return denied(opened.denied);
    this.#lastModel = { rates: opened.rates, estimate: start.estimate };
    return { allowed: true as const, handle: opened.handle, wall: opened.gate };
  }

  /**
   * Guards one tool call and runs it when every guard allows. Resolves with the output and cost, or with
   * the denial; rejects only for bad input (GuardrailValidationError), a plan nobody configured
   * (PLAN_NOT_CONFIGURED, unless `unconfiguredPlans` allows it), a store that cannot be reached, or the
   * call's own error once it failed for good.
   */
  toolCall<T>(request: ToolCallRequest<T>): Promise<ToolCallOutcome<T>> {
    let call: ValidRequest<T>;
    try {
      call = validRequest(request);
    } catch (error) {
      return Promise.reject(error);
    }
    const n = this.#calls++; // taken before any await: parallel calls are numbered apart
    const telemetry = this.#telemetry;
    if (telemetry === null) {
      return this.#byCallId.run(call.toolCallId, async () => this.#noted(await this.#guardToolCall(call, n)));
    }
    return this.#byCallId.run(call.toolCallId, () =>
      traceToolCall(telemetry, this.planId, call, async () =>
        this.#noted(await this.#guardToolCall(call, n)),
      ),
    );
  }

  /**
   * Refuses a call its caller does not let run at all (a tool hidden from the model), without a step or a
   * count: recorded as `tool_calls_blocked` with a limit of 0, the tool and its input's hash.
   */
  refuse(call: Omit<ToolCallStart, 'toolCallId' | 'requiresConfirmation'>, reason: string): Promise<Denied> {
    let refused: Record<string, unknown>;
    try {
      refused = objectWithKeys(call, 'call', ['toolName', 'input']);
    } catch (error) {
      return Promise.reject(error);
    }
    const telemetry = this.#telemetry;
    const { toolName, input } = refused;
    // A call with no tool name is refused by the service's own check, with no span to tell of it.
    if (telemetry === null || typeof toolName !== 'string') return this.#refuse(toolName, input, reason);
    return traceToolCall(telemetry, this.planId, { toolName, input }, () =>
      this.#refuse(toolName, input, reason),
    );
  }

  async #refuse(tool: unknown, input: unknown, reason: string): Promise<Denied> {
    return denied(await this.service.refuseToolCall(this.planId, { tool: tool as string, input, reason }));
  }

  /** The rule this guard holds a tool to, or undefined when it has none. */
  ruleFor(toolName: string): AgentToolRule | undefined {
    return this.#s.tools.get(toolName);
  }

  /**
   * The approval a person must decide before a tool call may run, for a framework that asks before it
   * runs a call: the one already asked for under the call's id, or one opened now (taking the call's
   * step, so the call does not take another) when the call's operation needs a person and the wall clock
   * and the steps let it go that far. Null when the call needs no person, or when a guard before the
   * confirmation refused it: the call itself then answers with that denial. Idempotent per tool call id.
   * Rejects with PLAN_NOT_CONFIGURED for a plan nobody configured, unless `unconfiguredPlans` allows it.
   */
  approvalFor(request: ToolCallStart): Promise<Approval | null> {
    let call: ValidRequest<unknown>;
    try {
      call = validRequest(request, false);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#byCallId.run(call.toolCallId, async () => {
      const { service, planId } = this;
      const ask = this.#ask(call);
      const g = this.#configuredOrAllowed(await service.getGuardrails(planId));
      // The plan has started already: the guard need not mark it.
      if (g?.startTime != null) this.#start.seen();
      // A call that needs no person by the plan as it stands now has nothing to find: an approval asked
      // for under a list since changed is left unused, and the SDK answers the call no.
      const always = ask.alwaysRequire.length > 0;
      if (g === null || (!always && !ask.operation.some((op) => g.requiresConfirmation(op)))) return null;
      const asked = stillAsked(ask, await service.findApproval(planId, ask.decisionId));
      if (asked !== null) return asked;
      await this.#start.mark();
      if (!(await service.checkWallClock(planId)).allowed) return null;
      return (await this.#confirm(ask))?.approval ?? null;
    });
  }

  /**
   * The limit that leaves the run nothing to do, read without changing anything or writing to the log:
   * the wall clock run out, every step taken, or a budget left smaller than the next model call may
   * cost: the last one's estimate with `moreInputTokens` more prompt (what the last step added to it), or
   * none left at all. Reservations past their time are not counted. Null while the run may go on. A
   * loop asks this between its steps to end gracefully, before a call would be refused.
   */
  async limitReached(options: { readonly moreInputTokens?: number } = {}): Promise<GuardCheck | null> {
    const more = objectWithKeys(options, 'options', ['moreInputTokens'])['moreInputTokens'] ?? 0;
    if (!Number.isSafeInteger(more) || (more as number) < 0)
      invalid('moreInputTokens', 'an integer >= 0', more);
    const read = this.#configuredOrAllowed(await this.service.getGuardrails(this.planId));
    if (read === null) return null;
    const now = this.service.clock.now();
    const g = read.withoutExpired(now);
    const last = this.#lastModel;
    const next = last
      ? estimateCostMicros(last.rates ?? FREE_RATES, {
          inputTokens: last.estimate.inputTokens + (more as number),
          maxOutputTokens: last.estimate.maxOutputTokens,
        })
      : 0;
    const checks = [
      g.checkWallClock(now),
      g.checkStepLimit(g.stepCount),
      g.checkToolBudgetMicros(Math.max(1, next)),
    ];
    const reached = checks.find((c) => !c.allowed) ?? null;
    if (reached !== null) this.#lastLimit = reached;
    return reached;
  }

  /**
   * `g`, the plan's guardrails as read; when it has none, null if the options allow a plan nobody
   * configured, else the PLAN_NOT_CONFIGURED error is thrown. Either way the plan's start is marked
   * again by the next call.
   */
  #configuredOrAllowed<G>(g: G | null): G | null {
    if (g !== null) return g;
    this.#start.forget();
    if (this.#s.unconfiguredPlans === 'deny') throw notConfigured(this.planId);
    return g;
  }

  async #guardToolCall<T>(call: ValidRequest<T>, n: number): Promise<ToolCallOutcome<T>> {
    const { service, planId } = this;
    if (!this.#start.known) await this.#start.mark();
    const ask = this.#ask(call);
    const asked = stillAsked(ask, await service.findApproval(planId, ask.decisionId));
    // Every check before the call runs is one update of the plan; a call asked for already goes on only
    // by using its grant, in that same update.
    const max = this.#s.tools.get(call.toolName)?.maxCallsPerPlan ?? null;
    const begun = await service.beginToolCall(planId, {
      confirm: ask,
      approvalId: asked?.id,
      tool: max === null ? undefined : { name: call.toolName, maxCallsPerPlan: max },
      currentCalls: n,
      estimate: this.#estimateOf(call),
      reservationId: runtimeKeyOf(this.#reservations + call.toolCallId, '#1'),
      recordCall: this.#s.recordCalls,
    });
    if (begun !== null) {
      if (begun.reservation === undefined) return denied(begun.check, begun.approval);
      return this.#run(call, begun.wallClock, begun.reservation);
    }
    this.#configuredOrAllowed(null);
    // A plan with no guardrails, which keeps no approvals: each check as the service's options answer it.
    const wall = await service.checkWallClock(planId);
    if (!wall.allowed) return denied(wall);
    const confirmed = await this.#confirm(ask);
    if (confirmed !== null) return confirmed;
    const actor = await service.checkActorToolCalls(planId, n);
    if (!actor.allowed) return denied(actor);
    return this.#run(call, wall);
  }

  /**
   * The step and the confirmation of a call no approval was asked for yet: null when the call may go
   * on, else the denial, with the approval a person must decide when one was asked for now.
   */
  async #confirm(ask: Ask): Promise<Denied | null> {
    const { service, planId } = this;
    const step = await service.takeStep(planId);
    if (!step.allowed) return denied(step);
    const request = await service.requestConfirmation(planId, ask);
    return request.check.allowed ? null : denied(request.check, request.approval);
  }

  /** What a call's confirmation asks for: its operations, and the input its grant is bound to. */
  #ask(call: ValidRequest<unknown>): Ask {
    const rule = this.#s.tools.get(call.toolName);
    const always = rule?.requiresConfirmation === true || call.requiresConfirmation;
    const operation = operationsToConfirm(call.toolName, rule?.operation, always);
    return {
      decisionId: call.toolCallId,
      operation,
      // The grant is bound to the tool as well: two tools may share one operation.
      input: { tool: call.toolName, input: call.input ?? null },
      // What a person is shown: the tool, and a preview of its input.
      toolName: call.toolName,
      preview: call.input ?? null,
      alwaysRequire: always ? [normalizeOperation(call.toolName)] : [],
      ttlMs: this.#s.approvalTtlMs,
      // The loop goes on while a person decides: its wall clock keeps running.
      pauseClock: false,
    };
  }

  /** What a call sets aside: its estimate, or its tool's `costPerCall` when that is higher. */
  #estimateOf(call: ValidRequest<unknown>): number {
    return Math.max(call.estimate ?? 0, this.#s.tools.get(call.toolName)?.costPerCall ?? 0);
  }

  /** Runs the call with {@link runToolCall}; `first` is the first try's reservation when made already. */
  #run<T>(
    call: ValidRequest<T>,
    firstWall: GuardCheck,
    first?: BudgetReservation,
  ): Promise<ToolCallOutcome<T>> {
    const run: ToolRun = {
      service: this.service,
      planId: this.planId,
      rule: this.#s.tools.get(call.toolName),
      estimate: this.#estimateOf(call),
      reservationBase: this.#reservations + call.toolCallId,
      retry: this.#s.retry,
      sleep: this.#s.sleep,
      timers: this.#s.timers,
    };
    return runToolCall(run, call, firstWall, first);
  }
}
