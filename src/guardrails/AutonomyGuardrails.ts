import { describeValue, GuardrailValidationError, invalid } from '../errors.js';
import { canonicalIso, formatIso, parseIsoMs } from '../iso.js';
import { fromMicros, MAX_AMOUNT, MICROS_PER_UNIT, toMicros } from '../money.js';
import { ActorLimits, type ActorLimitsInit, type ActorLimitsJson } from './ActorLimits.js';
import { GuardrailEventType as E } from './events.js';
import { makeCheck, type GuardCheck, type Reason } from './GuardCheck.js';
import { confirmationReason, normalizeOperation } from './operation.js';
import { isPlainText } from '../unicode.js';
import { intField, missing, objectWithKeys } from './validate.js';

/** What {@link AutonomyGuardrails.create} accepts. Every limit is optional; null or absent = unlimited. */
export interface GuardrailsInit {
  /** Steps a plan may take. Integer >= 1. */
  maxSteps?: number | null;
  /** Money the plan's tools may spend, in units (exact to one millionth). Finite number >= 0. */
  toolBudget?: number | null;
  /** Operation names that need a person's confirmation. Compared case- and width-insensitively. */
  requiredConfirmations?: readonly string[];
  /** Seconds of wall-clock time from `startTime`. Finite number > 0. */
  maxWallClockSeconds?: number | null;
  /** When the plan started, ISO-8601 with a zone; set by the executor on first execution. */
  startTime?: string | null;
  actorLimits?: ActorLimitsInit;
  /** Steps already taken. Integer >= 0. */
  stepCount?: number;
  /** Money already spent, in units. Finite number >= 0. */
  budgetSpent?: number;
}

/** Wire form (DESIGN.md §3) of {@link AutonomyGuardrails}. */
export interface GuardrailsJson extends RuntimeJson {
  max_steps: number | null;
  tool_budget: number | null;
  required_confirmations: string[];
  max_wall_clock_seconds: number | null;
  start_time: string | null;
  actor_limits: ActorLimitsJson;
  step_count: number;
  budget_spent: number;
}

/** Caps applied when guardrails must stay serializable within a service's metadata limits. */
export interface ConfirmationLimits {
  maxRequiredConfirmations: number;
  maxOperationNameLength: number;
}

const CAMEL = [
  'maxSteps',
  'toolBudget',
  'requiredConfirmations',
  'maxWallClockSeconds',
  'startTime',
  'actorLimits',
  'stepCount',
  'budgetSpent',
] as const;
const SNAKE = [
  'max_steps',
  'tool_budget',
  'required_confirmations',
  'max_wall_clock_seconds',
  'start_time',
  'actor_limits',
  'step_count',
  'budget_spent',
] as const;

interface State {
  maxSteps: number | null;
  budgetMicros: number | null;
  confirmations: readonly string[];
  maxWallClockSeconds: number | null;
  startTime: string | null;
  actorLimits: ActorLimits;
  stepCount: number;
  spentMicros: number;
  runtime: Runtime;
}

/**
 * What a running plan holds besides its counters: budget reserved for calls in flight, time spent
 * waiting for a person (which the wall clock does not count), and calls per tool. Optional on the wire,
 * and written only when not empty, so state without it reads as DESIGN.md §3 shows.
 */
interface Runtime {
  readonly reservations: ReadonlyMap<string, Reservation>;
  readonly reservedMicros: number;
  /**
   * Ids of reservations that lapsed and were given back, oldest first, until a commit or release settles
   * them: only these may still be settled once they are not open. A commit of any other id that is not
   * open was settled already (by another handle of the same id), so it spends nothing twice.
   */
  readonly lapsed: ReadonlySet<string>;
  readonly pausedMs: number;
  readonly pausedSince: string | null;
  readonly toolCalls: ReadonlyMap<string, number>;
}

/**
 * Budget held for one call in flight, and when the hold lapses (epoch ms). A null expiry is one never
 * recorded (state written before reservations expired): such a hold counts as lapsed at the first expiry
 * check, because a hold that never lapses would keep budget from the plan forever.
 */
interface Reservation {
  readonly micros: number;
  readonly expiresAt: number | null;
}

/** True when the reservation has lapsed at `nowMs`. */
export function reservationExpired(r: Reservation, nowMs: number): boolean {
  return r.expiresAt === null || r.expiresAt <= nowMs;
}

const EMPTY_RUNTIME: Runtime = Object.freeze({
  reservations: new Map<string, Reservation>(),
  reservedMicros: 0,
  lapsed: new Set<string>(),
  pausedMs: 0,
  pausedSince: null,
  toolCalls: new Map<string, number>(),
});

/** Longest reservation id or tool name kept in state. */
const MAX_KEY_LENGTH = 256;
/** Most reservations open at once, and most tools counted, per plan. */
export const MAX_RUNTIME_ENTRIES = 10_000;

/** Wire form of the runtime state; every key optional. */
export interface RuntimeJson {
  /** `expires_at` (ISO-8601) is absent in state written before reservations expired. */
  reservations?: { id: string; amount: number; expires_at?: string }[];
  lapsed?: string[];
  paused_ms?: number;
  paused_since?: string | null;
  tool_calls?: Record<string, number>;
}

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
  #budgetMicros: number | null;
  #spentMicros: number;
  #stepCount: number;
  #confirmSet: ReadonlySet<string>;
  #runtime: Runtime;
  #parsedStart: { text: string | null; ms: number } = { text: null, ms: NaN };

  private constructor(s: State) {
    this.maxSteps = s.maxSteps;
    this.#budgetMicros = s.budgetMicros;
    this.requiredConfirmations = Object.freeze([...s.confirmations]);
    this.#confirmSet = new Set(s.confirmations);
    this.maxWallClockSeconds = s.maxWallClockSeconds;
    this.startTime = s.startTime;
    this.actorLimits = s.actorLimits;
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
    const keys = snakeKeys ? [...SNAKE, ...RUNTIME_KEYS] : CAMEL;
    const o = objectWithKeys(init, prefix.replace(/\.$/, '') || 'init', keys, prefix);
    const get = (i: number): unknown => o[keys[i] as string];
    const f = (i: number): string => `${prefix}${SNAKE[i]}`;
    const optional = <T>(i: number, read: (v: unknown, field: string) => T, dflt: T): T => {
      const v = get(i);
      if (v !== undefined) return read(v, f(i));
      // The wire form always carries every key: a lost `tool_budget` must not read as "no budget".
      return snakeKeys ? missing(f(i)) : dflt;
    };
    return new AutonomyGuardrails({
      maxSteps: optional(0, (v, n) => intField(v, n, 1, true), null),
      budgetMicros: optional(1, (v, n) => (v === null ? null : toMicros(v, n, 'down')), null),
      confirmations: optional(2, (v, n) => confirmationList(v, n, limits), []),
      maxWallClockSeconds: optional(3, positiveSecondsOrNull, null),
      startTime: optional(4, (v, n) => (v === null ? null : canonicalIso(v, n)), null),
      actorLimits: optional(
        5,
        (v) => ActorLimits.parse(v, `${prefix}actor_limits.`, snakeKeys),
        ActorLimits.UNLIMITED,
      ),
      stepCount: optional(6, (v, n) => intField(v, n, 0, false) as number, 0),
      spentMicros: optional(7, (v, n) => toMicros(v, n, snakeKeys ? 'nearest' : 'up'), 0),
      runtime: snakeKeys ? parseRuntime(o, prefix) : EMPTY_RUNTIME,
    });
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
  expiredReservations(nowMs: number): string[] {
    const out: string[] = [];
    for (const [id, r] of this.#runtime.reservations) if (reservationExpired(r, nowMs)) out.push(id);
    return out;
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
    return new AutonomyGuardrails(copy);
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
    return new AutonomyGuardrails(copy);
  }

  /** An independent copy. */
  clone(): AutonomyGuardrails {
    return new AutonomyGuardrails(this.#state());
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

function positiveSecondsOrNull(v: unknown, field: string): number | null {
  if (v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) invalid(field, 'a finite number > 0', v);
  return v;
}

function confirmationList(v: unknown, field: string, limits?: ConfirmationLimits): string[] {
  if (!Array.isArray(v)) {
    throw new GuardrailValidationError(
      field,
      `${field} must be an array of strings, got ${describeValue(v)}`,
    );
  }
  if (limits && v.length > limits.maxRequiredConfirmations) {
    throw new GuardrailValidationError(
      field,
      `${field} must hold at most ${limits.maxRequiredConfirmations} names, got ${v.length}`,
    );
  }
  const out = new Set<string>();
  // A plain loop, not forEach: forEach skips the holes of a sparse array, which would pass unchecked.
  for (let i = 0; i < v.length; i++) {
    out.add(normalizeOperation(v[i], `${field}[${i}]`, limits?.maxOperationNameLength));
  }
  return [...out];
}

const RUNTIME_KEYS = ['reservations', 'lapsed', 'paused_ms', 'paused_since', 'tool_calls'] as const;

function parseRuntime(o: Record<string, unknown>, prefix: string): Runtime {
  const reservations = new Map<string, Reservation>();
  let reservedMicros = 0;
  const rawReservations = o['reservations'];
  if (rawReservations !== undefined) {
    const field = `${prefix}reservations`;
    if (!Array.isArray(rawReservations) || rawReservations.length > MAX_RUNTIME_ENTRIES) {
      invalid(field, `an array of at most ${MAX_RUNTIME_ENTRIES} reservations`, rawReservations);
    }
    for (let i = 0; i < rawReservations.length; i++) {
      const at = `${field}[${i}]`;
      const r = objectWithKeys(rawReservations[i] ?? null, at, ['id', 'amount', 'expires_at']);
      const id = runtimeKey(r['id'], `${at}.id`);
      if (reservations.has(id)) invalid(`${at}.id`, 'unique', id);
      const micros = toMicros(r['amount'], `${at}.amount`, 'nearest');
      // Absent in state written before reservations expired: see Reservation.
      const rawExpiry = r['expires_at'];
      const expiresAt =
        rawExpiry === undefined ? null : parseIsoMs(canonicalIso(rawExpiry, `${at}.expires_at`));
      reservations.set(id, { micros, expiresAt });
      reservedMicros += micros;
    }
  }
  const lapsed = new Set<string>();
  const rawLapsed = o['lapsed'];
  if (rawLapsed !== undefined) {
    const field = `${prefix}lapsed`;
    if (!Array.isArray(rawLapsed) || rawLapsed.length > MAX_RUNTIME_ENTRIES) {
      invalid(field, `an array of at most ${MAX_RUNTIME_ENTRIES} reservation ids`, rawLapsed);
    }
    for (let i = 0; i < rawLapsed.length; i++) {
      const id = runtimeKey(rawLapsed[i], `${field}[${i}]`);
      if (lapsed.has(id) || reservations.has(id)) invalid(`${field}[${i}]`, 'unique and not open', id);
      lapsed.add(id);
    }
  }
  const toolCalls = new Map<string, number>();
  const rawCalls = o['tool_calls'];
  if (rawCalls !== undefined) {
    const field = `${prefix}tool_calls`;
    const calls = objectWithKeys(rawCalls, field, Object.keys(rawCalls ?? {}));
    const names = Object.keys(calls);
    if (names.length > MAX_RUNTIME_ENTRIES) invalid(field, `at most ${MAX_RUNTIME_ENTRIES} tools`, rawCalls);
    for (const name of names) {
      toolCalls.set(
        runtimeKey(name, `${field}.${name}`),
        intField(calls[name], `${field}.${name}`, 0, false) as number,
      );
    }
  }
  const pausedMs =
    o['paused_ms'] === undefined ? 0 : (intField(o['paused_ms'], `${prefix}paused_ms`, 0, false) as number);
  const rawSince = o['paused_since'];
  const pausedSince =
    rawSince === undefined || rawSince === null ? null : canonicalIso(rawSince, `${prefix}paused_since`);
  return { reservations, reservedMicros, lapsed, pausedMs, pausedSince, toolCalls };
}

function runtimeKey(value: unknown, field: string): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > MAX_KEY_LENGTH ||
    !isPlainText(value)
  ) {
    invalid(
      field,
      `a non-empty string of at most ${MAX_KEY_LENGTH} characters without control characters or lone surrogates`,
      value,
    );
  }
  return value;
}

function runtimeJson(r: Runtime): RuntimeJson {
  const out: RuntimeJson = {};
  if (r.reservations.size > 0) {
    out.reservations = [...r.reservations].map(([id, { micros, expiresAt }]) =>
      expiresAt === null
        ? { id, amount: fromMicros(micros) }
        : { id, amount: fromMicros(micros), expires_at: formatIso(expiresAt) },
    );
  }
  if (r.lapsed.size > 0) out.lapsed = [...r.lapsed];
  if (r.pausedMs > 0) out.paused_ms = r.pausedMs;
  if (r.pausedSince !== null) out.paused_since = r.pausedSince;
  if (r.toolCalls.size > 0) out.tool_calls = Object.fromEntries(r.toolCalls);
  return out;
}

/** Validates a key used in runtime state (a reservation id or a tool name). */
export function validRuntimeKey(value: unknown, field: string): string {
  return runtimeKey(value, field);
}

export type { Reservation, Runtime };
