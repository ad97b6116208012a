import { describeValue, invalid } from '../errors.js';
import { canonicalIso, parseIsoMs } from '../iso.js';
import { fromMicros, MAX_AMOUNT, MICROS_PER_UNIT, toMicros } from '../money.js';
import { ActorLimits } from './ActorLimits.js';
import { GuardrailEventType as E } from '../events.js';
import { makeCheck, type GuardCheck, type Reason } from '../GuardCheck.js';
import { confirmationReason, normalizeOperation } from './operation.js';
import { intField } from './validate.js';
import type { Labels } from './labels.js';
import { reservationExpired, runtimeJson, type Reservation, type Runtime } from './runtime.js';
import {
  parseState,
  type ConfirmationLimits,
  type GuardrailsInit,
  type GuardrailsJson,
  type State,
} from './init.js';

export type { ConfirmationLimits, GuardrailsInit, GuardrailsJson } from './init.js';
export {
  MAX_RUNTIME_ENTRIES,
  reservationExpired,
  validRuntimeKey,
  type Reservation,
  type Runtime,
  type RuntimeJson,
} from './runtime.js';

const NONE_EXPIRED: readonly string[] = Object.freeze([]);

/**
 * A plan's limits and counters, and the six checks against them. Pure: no I/O, no clock; time comes in
 * as a number. Checks never throw for a denial; they throw {@link GuardrailValidationError} only for a
 * bad argument.
 *
 * @example
 * const g = AutonomyGuardrails.create({ maxSteps: 5, toolBudget: 10 });
 * g.checkToolBudget(12).allowed; // false
 */
export class AutonomyGuardrails {
  readonly maxSteps: number | null;
  readonly requiredConfirmations: readonly string[];
  readonly maxWallClockSeconds: number | null;
  /** ISO-8601 UTC, or null before the first execution. */
  readonly startTime: string | null;
  readonly actorLimits: ActorLimits;
  /** Who or what the plan runs for (`team: ml`), set when it is configured; keys sorted, frozen. */
  readonly labels: Labels;
  #budgetMicros: number | null;
  #spentMicros: number;
  #stepCount: number;
  #confirmSet: ReadonlySet<string>;
  #runtime: Runtime;
  #parsedStart: { text: string | null; ms: number } = { text: null, ms: NaN };

  /** `confirmSet`: the set of `s.confirmations`, when they are the frozen list of a copied instance. */
  private constructor(s: State, confirmSet?: ReadonlySet<string>) {
    this.maxSteps = s.maxSteps;
    this.#budgetMicros = s.budgetMicros;
    // A copy shares its original's list and set: both are never changed.
    this.requiredConfirmations = confirmSet ? s.confirmations : Object.freeze([...s.confirmations]);
    this.#confirmSet = confirmSet ?? new Set(s.confirmations);
    this.maxWallClockSeconds = s.maxWallClockSeconds;
    this.startTime = s.startTime;
    this.actorLimits = s.actorLimits;
    this.labels = s.labels;
    this.#stepCount = s.stepCount;
    this.#spentMicros = s.spentMicros;
    this.#runtime = s.runtime;
  }

  /**
   * Validates `init` and builds guardrails. Unknown keys are refused so a misspelt limit is never silently
   * absent.
   * @throws GuardrailValidationError naming the field: `max_steps must be an integer >= 1, got 0`
   */
  static create(init?: GuardrailsInit): AutonomyGuardrails {
    return AutonomyGuardrails.parse(init, '', false);
  }

  /** @internal validates untrusted input in camelCase (API) or snake_case (wire) form. */
  static parse(
    init: unknown,
    prefix: string,
    snakeKeys: boolean,
    limits?: ConfirmationLimits,
  ): AutonomyGuardrails {
    return new AutonomyGuardrails(parseState(init, prefix, snakeKeys, limits));
  }

  /** Money the tools may spend in units, or null when unlimited. */
  get toolBudget(): number | null {
    return this.#budgetMicros === null ? null : fromMicros(this.#budgetMicros);
  }

  /** Money spent so far, in units. */
  get budgetSpent(): number {
    return fromMicros(this.#spentMicros);
  }

  /** Steps taken so far. */
  get stepCount(): number {
    return this.#stepCount;
  }

  /** Budget limit in micro-units, or null when unlimited. */
  get toolBudgetMicros(): number | null {
    return this.#budgetMicros;
  }

  /** Money spent so far in micro-units. */
  get budgetSpentMicros(): number {
    return this.#spentMicros;
  }

  /** Allowed iff `step < maxSteps` (steps count from 0), or there is no step limit. */
  checkStepLimit(step: number): GuardCheck {
    const n = intField(step, 'step', 0, false) as number;
    const max = this.maxSteps;
    if (max === null) return makeCheck(E.STEP_ALLOWED, 'no step limit', null, n);
    return n < max
      ? makeCheck(E.STEP_ALLOWED, stepWithin, max, n)
      : makeCheck(E.STEP_BLOCKED, stepReaches, max, n);
  }

  /** Allowed iff `budgetSpent + cost <= toolBudget`, or there is no budget. Does not spend. */
  checkToolBudget(cost: number): GuardCheck {
    return this.checkToolBudgetMicros(toMicros(cost, 'cost', 'up'));
  }

  /** {@link checkToolBudget} for an amount already in micro-units. */
  checkToolBudgetMicros(costMicros: number): GuardCheck {
    intField(costMicros, 'cost_micros', 0, false);
    const budget = this.#budgetMicros;
    const cost = fromMicros(costMicros);
    if (budget === null) return makeCheck(E.BUDGET_ALLOWED, 'no budget limit', null, cost);
    const after = this.#spentMicros + this.#runtime.reservedMicros + costMicros;
    return after <= budget
      ? makeCheck(E.BUDGET_ALLOWED, budgetFits, fromMicros(budget), cost, after)
      : makeCheck(E.BUDGET_BLOCKED, budgetOver, fromMicros(budget), cost, after);
  }

  /** Whether an operation name already in normalized form (see normalizeOperation) needs a person. */
  requiresConfirmation(normalizedOperation: string): boolean {
    return this.#confirmSet.has(normalizedOperation);
  }

  /** Denied (`confirmation_required`) when a person must confirm `operation` before it runs. */
  checkConfirmation(operation: string): GuardCheck {
    const op = normalizeOperation(operation);
    return this.#confirmSet.has(op)
      ? makeCheck(E.CONFIRMATION_REQUIRED, confirmationRequired, null, undefined, op)
      : makeCheck(E.CONFIRMATION_NOT_REQUIRED, confirmationNotRequired, null, undefined, op);
  }

  /**
   * Allowed iff less than `maxWallClockSeconds` have passed since `startTime`. No limit, or a limit on a
   * plan that has not started, is allowed; a start time that cannot be read is denied (fail closed).
   */
  checkWallClock(nowMs: number): GuardCheck {
    if (typeof nowMs !== 'number' || !Number.isFinite(nowMs)) {
      invalid('now', 'a finite number of epoch milliseconds', nowMs);
    }
    const max = this.maxWallClockSeconds;
    if (max === null) return makeCheck(E.WALL_CLOCK_ALLOWED, 'no wall-clock limit', null);
    const startTime = this.startTime;
    if (startTime === null) {
      return makeCheck(E.WALL_CLOCK_ALLOWED, 'plan has not started; the clock has not begun', max);
    }
    const start = this.#startMs();
    if (Number.isNaN(start)) {
      return makeCheck(E.WALL_CLOCK_BLOCKED, startUnreadable, max, undefined, describeValue(startTime));
    }
    const elapsed = this.#elapsedMs(nowMs, start) / 1000;
    return elapsed < max
      ? makeCheck(E.WALL_CLOCK_ALLOWED, elapsedWithin, max, elapsed)
      : makeCheck(E.WALL_CLOCK_BLOCKED, elapsedReaches, max, elapsed);
  }

  /** Allowed iff `currentCalls < maxToolCallsPerInvocation`, or there is no such limit. */
  checkActorToolCalls(currentCalls: number): GuardCheck {
    const n = intField(currentCalls, 'current_calls', 0, false) as number;
    const max = this.actorLimits.maxToolCallsPerInvocation;
    if (max === null)
      return makeCheck(E.ACTOR_TOOL_CALLS_ALLOWED, 'no tool-call limit per invocation', null, n);
    return n < max
      ? makeCheck(E.ACTOR_TOOL_CALLS_ALLOWED, callsWithin, max, n)
      : makeCheck(E.ACTOR_TOOL_CALLS_BLOCKED, callsReach, max, n);
  }

  /** Allowed iff `currentRetries < maxRetriesPerFailure`, or there is no retry limit. */
  checkRetries(currentRetries: number): GuardCheck {
    const n = intField(currentRetries, 'current_retries', 0, false) as number;
    const max = this.actorLimits.maxRetriesPerFailure;
    if (max === null) return makeCheck(E.RETRY_ALLOWED, 'no retry limit', null, n);
    return n < max
      ? makeCheck(E.RETRY_ALLOWED, retryWithin, max, n)
      : makeCheck(E.RETRY_BLOCKED, retryReaches, max, n);
  }

  /** Counts one step taken. */
  incrementStep(): void {
    if (this.#stepCount >= Number.MAX_SAFE_INTEGER) invalid('step_count', 'below 2^53 - 1', this.#stepCount);
    this.#stepCount += 1;
  }

  /** Records money spent (an actual cost: it is recorded even beyond the budget). */
  recordCost(cost: number): void {
    this.recordCostMicros(toMicros(cost, 'cost', 'up'));
  }

  /** {@link recordCost} for an amount already in micro-units. */
  recordCostMicros(costMicros: number): void {
    intField(costMicros, 'cost_micros', 0, false);
    const after = this.#spentMicros + costMicros;
    // Beyond MAX_AMOUNT the state could be written but not read back.
    if (after > MAX_AMOUNT * MICROS_PER_UNIT)
      invalid('budget_spent', `at most ${MAX_AMOUNT}`, fromMicros(after));
    this.#spentMicros = after;
  }

  /** Money reserved for calls in flight, in units. */
  get budgetReserved(): number {
    return fromMicros(this.#runtime.reservedMicros);
  }

  /** Money reserved for calls in flight, in micro-units. */
  get budgetReservedMicros(): number {
    return this.#runtime.reservedMicros;
  }

  /** The micro-units held by an open reservation, or undefined. */
  reservationMicros(id: string): number | undefined {
    return this.#runtime.reservations.get(id)?.micros;
  }

  /** True when reservation `id` lapsed, was given back, and is not settled yet. */
  hasLapsed(id: string): boolean {
    return this.#runtime.lapsed.has(id);
  }

  /** When an open reservation lapses (epoch ms): null when no expiry was recorded, undefined when not open. */
  reservationExpiresAt(id: string): number | null | undefined {
    return this.#runtime.reservations.get(id)?.expiresAt;
  }

  /** Ids of the open reservations lapsed at `nowMs` (expiry <= nowMs, or none recorded), in opening order. */
  expiredReservations(nowMs: number): readonly string[] {
    // Made only when one lapsed: every budget check asks, and almost always none has.
    let out: string[] | undefined;
    for (const [id, r] of this.#runtime.reservations) if (reservationExpired(r, nowMs)) (out ??= []).push(id);
    return out ?? NONE_EXPIRED;
  }

  /** A copy without the reservations lapsed at `nowMs`, and without the amount they held. */
  withoutExpired(nowMs: number): AutonomyGuardrails {
    const reservations = new Map<string, Reservation>();
    let reservedMicros = 0;
    for (const [id, r] of this.#runtime.reservations) {
      if (reservationExpired(r, nowMs)) continue;
      reservations.set(id, r);
      reservedMicros += r.micros;
    }
    const copy = this.#state();
    copy.runtime = { ...this.#runtime, reservations, reservedMicros };
    return new AutonomyGuardrails(copy, this.#confirmSet);
  }

  /** Milliseconds spent waiting for a person, not counting a wait still going on. */
  get pausedMs(): number {
    return this.#runtime.pausedMs;
  }

  /** When the current wait for a person began (ISO-8601 UTC), or null when not waiting. */
  get pausedSince(): string | null {
    return this.#runtime.pausedSince;
  }

  /** Calls made so far to the named tool. */
  toolCallCount(tool: string): number {
    return this.#runtime.toolCalls.get(tool) ?? 0;
  }

  /**
   * Seconds the plan has run at `nowMs`, as the wall-clock guard counts them: since its start, less the
   * time it waited for a person. Null before it started.
   */
  elapsedSeconds(nowMs: number): number | null {
    const start = this.startTime === null ? NaN : parseIsoMs(this.startTime);
    return Number.isNaN(start) ? null : this.#elapsedMs(nowMs, start) / 1000;
  }

  /**
   * Wall-clock time the plan has run: now − start − time spent waiting for a person (a wait still going
   * on counts up to now). Never negative.
   */
  #elapsedMs(nowMs: number, startMs: number): number {
    const { pausedMs, pausedSince } = this.#runtime;
    const waiting = pausedSince === null ? 0 : Math.max(0, nowMs - parseIsoMs(pausedSince));
    return Math.max(0, nowMs - startMs - pausedMs - waiting);
  }

  /** @internal the runtime state, read by applyMutation. */
  get runtime(): Runtime {
    return this.#runtime;
  }

  /** @internal replaces the runtime state; only applyMutation calls it, after validating all of it. */
  replaceRuntime(runtime: Runtime): void {
    this.#runtime = runtime;
  }

  /** A copy with `startTime` set; guardrails that already started are returned unchanged. */
  withStartTime(iso: string): AutonomyGuardrails {
    if (this.startTime !== null) return this;
    const copy = this.#state();
    copy.startTime = canonicalIso(iso, 'start_time');
    return new AutonomyGuardrails(copy, this.#confirmSet);
  }

  /** An independent copy. */
  clone(): AutonomyGuardrails {
    return new AutonomyGuardrails(this.#state(), this.#confirmSet);
  }

  /** The wire form (snake_case), as in DESIGN.md §3. */
  toJSON(): GuardrailsJson {
    return {
      max_steps: this.maxSteps,
      tool_budget: this.toolBudget,
      required_confirmations: [...this.requiredConfirmations],
      max_wall_clock_seconds: this.maxWallClockSeconds,
      start_time: this.startTime,
      actor_limits: this.actorLimits.toJSON(),
      step_count: this.#stepCount,
      budget_spent: this.budgetSpent,
      ...(Object.keys(this.labels).length === 0 ? {} : { labels: { ...this.labels } }),
      ...runtimeJson(this.#runtime),
    };
  }

  /** Rebuilds guardrails from their wire form, validating it as untrusted input. */
  static fromJSON(json: unknown): AutonomyGuardrails {
    return AutonomyGuardrails.parse(json, '', true);
  }

  #state(): State {
    return {
      maxSteps: this.maxSteps,
      budgetMicros: this.#budgetMicros,
      confirmations: this.requiredConfirmations,
      maxWallClockSeconds: this.maxWallClockSeconds,
      startTime: this.startTime,
      actorLimits: this.actorLimits,
      stepCount: this.#stepCount,
      spentMicros: this.#spentMicros,
      labels: this.labels,
      runtime: this.#runtime,
    };
  }

  #startMs(): number {
    // startTime is validated on the way in, but state can arrive by other roads; parse once per value.
    const cached = this.#parsedStart;
    if (cached.text !== this.startTime) {
      this.#parsedStart = {
        text: this.startTime,
        ms: typeof this.startTime === 'string' ? parseIsoMs(this.startTime) : NaN,
      };
    }
    return this.#parsedStart.ms;
  }
}

// Reasons are written only when read (see Reason in GuardCheck.ts).
const stepWithin: Reason = (c) => `step ${c.observed} is within max_steps ${c.limit}`;
const stepReaches: Reason = (c) => `step ${c.observed} reaches max_steps ${c.limit}`;
const budgetFits: Reason = (c, after) =>
  `cost ${c.observed} fits: ${fromMicros(after as number)} of tool_budget ${c.limit}`;
const budgetOver: Reason = (c, after) =>
  `cost ${c.observed} would bring spending to ${fromMicros(after as number)}, over tool_budget ${c.limit}`;
const confirmationRequired: Reason = (_c, op) => confirmationReason([String(op)], true);
const confirmationNotRequired: Reason = (_c, op) => confirmationReason([String(op)], false);
const startUnreadable: Reason = (_c, start) => `start_time ${start} cannot be read`;
const elapsedWithin: Reason = (c) => `${c.observed}s elapsed of max_wall_clock_seconds ${c.limit}`;
const elapsedReaches: Reason = (c) => `${c.observed}s elapsed reaches max_wall_clock_seconds ${c.limit}`;
const callsWithin: Reason = (c) =>
  `${c.observed} tool calls is within max_tool_calls_per_invocation ${c.limit}`;
const callsReach: Reason = (c) => `${c.observed} tool calls reaches max_tool_calls_per_invocation ${c.limit}`;
const retryWithin: Reason = (c) => `retry ${c.observed} is within max_retries_per_failure ${c.limit}`;
const retryReaches: Reason = (c) => `retry ${c.observed} reaches max_retries_per_failure ${c.limit}`;
