import { randomUUID } from 'node:crypto';
import { AuditEntry, isSerializableTimestamp } from '../audit/AuditEntry.js';
import type { AuditTrail } from '../audit/AuditTrail.js';
import { systemClock, type Clock } from '../clock.js';
import {
  describeValue,
  ERROR_TAIL_LINES,
  GuardrailError,
  GuardrailValidationError,
  invalid,
  isGuardrailError,
  isStoreOutcomeUnknownError,
  textTail,
} from '../errors.js';
import {
  AutonomyGuardrails,
  validRuntimeKey,
  type GuardrailsInit,
} from '../guardrails/AutonomyGuardrails.js';
import { GuardrailEventType as E, type GuardrailEventType } from '../guardrails/events.js';
import { makeCheck, type GuardCheck, type Reason } from '../guardrails/GuardCheck.js';
import { confirmationReason, normalizeOperation } from '../guardrails/operation.js';
import { intField, objectWithKeys } from '../guardrails/validate.js';
import { formatIso, parseIsoMs } from '../iso.js';
import { isPlainObject, type JsonObject, type JsonValue } from '../json.js';
import { fromMicros, toMicros } from '../money.js';
import {
  APPROVAL_STATUSES,
  type Approval,
  type ApprovalStatus,
  type GuardrailStore,
  type PlanChange,
  type PlanMutation,
} from '../store/GuardrailStore.js';
import { operationsDetail, validDecision, validToolName, type Decision } from './approvals.js';
import { BudgetReservation, textOption } from './BudgetReservation.js';
import { inputHash } from './hash.js';
import { MemoryStore } from '../store/memory/MemoryStore.js';
import {
  METADATA_KEY,
  parseState,
  resolveMetadataLimits,
  serializeState,
  type MetadataLimits,
} from './metadata.js';
import { validatePlanId } from '../ids.js';
import { inputPreview } from './preview.js';

export interface AutonomyGuardrailServiceOptions {
  /**
   * Where state lives. The default, a {@link MemoryStore} with `keepLog: false`, keeps each plan's newest
   * `auditCapacity` entries and nothing more, so a long-running process stays bounded; pass
   * `new MemoryStore()` for the complete log in memory, or a durable store.
   */
  store?: GuardrailStore;
  clock?: Clock;
  /** Audit entries kept per plan by the default memory store. Give it to the store when you pass one. */
  auditCapacity?: number;
  metadataLimits?: Partial<MetadataLimits>;
  /**
   * What checks of a plan with no guardrails answer. `'allow'` (the default, as the spec says): steps,
   * budget, wall clock, tool calls and retries are allowed and no confirmation is required. `'deny'`:
   * every check denies (fail closed).
   */
  unconfiguredPlans?: 'allow' | 'deny';
  /**
   * What a check answers when the store cannot be reached. `'reject'` (the default): it rejects with the
   * store's `STORE_UNAVAILABLE` error, saying why. `'deny'`: it resolves denied (a confirmation
   * required, a reservation not open), with the error's message as its reason; nothing is recorded, since
   * nothing can be. Either way nothing is allowed. Applies to the checks, `reserveBudget` and
   * `requestConfirmation`, unless the store lost the database while the change was on its way
   * ({@link StoreOutcomeUnknownError}: it may have been committed): that still rejects. `useGrant`,
   * `markStarted`, settling a reservation and deciding approvals always reject.
   */
  storeUnavailable?: 'reject' | 'deny';
  /** Makes approval ids; defaults to random UUIDs. */
  ids?: () => string;
  /**
   * How long a budget reservation holds its amount, in milliseconds (integer >= 1; default 15 minutes).
   * A reservation still open after it is given back by the plan's next budget operation, so a worker that
   * died between reserve and commit cannot hold budget forever. Its commit still spends the actual cost.
   */
  reservationTtlMs?: number;
}

/** How long a budget reservation holds its amount unless the options say otherwise. */
export const DEFAULT_RESERVATION_TTL_MS = 15 * 60 * 1000;

/** Characters of reservation ids an audit entry lists as expired; the rest are only counted. */
const EXPIRED_IDS_CHARS = 512;

/** The `expired` details of a call that gave back lapsed reservations: their ids, as many as fit. */
function expiredDetails(details: Record<string, JsonValue>, ids: readonly string[], key = 'expired'): void {
  if (ids.length === 0) return;
  const listed: string[] = [];
  let chars = 0;
  for (const id of ids) {
    if (listed.length > 0 && chars + id.length > EXPIRED_IDS_CHARS) break;
    listed.push(id);
    chars += id.length;
  }
  details[key] = listed;
  if (listed.length < ids.length) details[`${key}_more`] = ids.length - listed.length;
}

/** `m` that also gives back the reservations lapsed at `now`, when there are any. */
function expiring(
  m: PlanMutation | undefined,
  expired: readonly string[],
  now: number,
): PlanMutation | undefined {
  return expired.length === 0 ? m : { ...m, expireBefore: now };
}

/** The answer of a check that is the check itself. */
const checkItself = (check: GuardCheck): GuardCheck => check;
/** The answer of a confirmation request that opened no approval. */
const requestOf = (check: GuardCheck): ConfirmationRequest => ({ check });

const unconfiguredAllowed: Reason = (_c, planId) => `plan "${planId}" has no guardrails configured`;
const unconfiguredDenied: Reason = (_c, planId) =>
  `plan "${planId}" has no guardrails and unconfiguredPlans is "deny"`;

const toolCallsWithin: Reason = (c, tool) =>
  `call ${c.observed} of tool "${tool}" is within ${c.limit} per plan`;
const toolCallsReach: Reason = (c, tool) =>
  `call ${c.observed} of tool "${tool}" reaches ${c.limit} per plan`;
const reservedReason: Reason = (c) => `${c.observed} reserved within tool_budget ${c.limit ?? 'unlimited'}`;
const committedReason: Reason = (c, after) =>
  `actual cost ${c.observed} committed: ${fromMicros(after as number)} of tool_budget ${c.limit ?? 'unlimited'}`;
const overrunReason: Reason = (c, after) =>
  `actual cost ${c.observed} brought spending to ${fromMicros(after as number)}, over tool_budget ${c.limit}`;

/** The longest a confirmation request may stay open. */
export const MAX_APPROVAL_TTL_MS = 10 * 365 * 24 * 60 * 60 * 1000;

/** The operations among `ops` that need a person: listed in the guardrails, or always. */
const unpricedUnmetered: Reason = (_c, model) =>
  `model "${model}" has no price and the plan no budget: it runs unmetered`;
const unpricedBlocked: Reason = (_c, model) =>
  `model "${model}" has no price while the plan has a budget: add models.${model} (input, output and cached_input per million tokens) to the policy, or set unpriced_models: allow`;

function requiredOf(g: AutonomyGuardrails, ops: readonly string[], always: readonly string[]): string[] {
  return ops.filter((op) => always.includes(op) || g.requiresConfirmation(op));
}

/** A tool call about to run, for {@link AutonomyGuardrailService.beginToolCall}. */
export interface ToolCallBegin {
  /** The confirmation asked for the call; its decision id is the tool call's id. */
  readonly confirm: ConfirmationAsk;
  /** The tool's calls per plan, counted when allowed; without it, not counted. */
  readonly tool?: { readonly name: string; readonly maxCallsPerPlan: number };
  /**
   * Tool calls of this invocation before this one, checked against `max_tool_calls_per_invocation`;
   * without it, that check is not made (a plan's own decision is no call within an invocation).
   */
  readonly currentCalls?: number;
  /** The amount to set aside for the call, and the reservation's id. */
  readonly estimate: number;
  readonly reservationId: string;
  /**
   * Every entry of the call names it too: `tool` (the confirmation's tool name) and `input_hash` (the
   * canonical hash of its input, the one grants are bound to). Default false.
   */
  readonly recordCall?: boolean;
}

/** What {@link AutonomyGuardrailService.beginToolCall} decided. */
export interface ToolCallBegun {
  /** The check that refused the call, or the reservation's. */
  readonly check: GuardCheck;
  /** The wall-clock check, allowed when the call got past it. */
  readonly wallClock: GuardCheck;
  /** The approval a person must decide, when the confirmation refused the call. */
  readonly approval?: Approval;
  /** The call's budget set aside, when every check let it through: settle it with commit or release. */
  readonly reservation?: BudgetReservation;
}

const begunOf = (check: GuardCheck): ToolCallBegun => ({ check, wallClock: check });

/**
 * The parts of a tool call's change, taken in order, as one change: their entries in order, their
 * mutations together (each part sets its own fields), the approval one opened.
 */
class ToolCallChange {
  readonly #entries: AuditEntry[] = [];
  readonly #mutation: { -readonly [K in keyof PlanMutation]: PlanMutation[K] } = {};
  #newApproval: Approval | undefined;

  /** `call`: details every entry of the call carries as well (the tool, its input's hash), or null. */
  constructor(readonly call: JsonObject | null) {}

  /** Adds a part's writes; returns its result. */
  take<T>(out: PlanChange<T>): T {
    const a = out.audit;
    if (a !== undefined) {
      this.#entries.push(
        this.call === null ? a : AuditEntry.trusted(a.eventType, a.timestamp, { ...a.details, ...this.call }),
      );
    }
    if (out.mutation !== undefined) Object.assign(this.#mutation, out.mutation);
    if (out.newApproval !== undefined) this.#newApproval = out.newApproval;
    return out.result;
  }

  end(result: ToolCallBegun): PlanChange<ToolCallBegun> {
    const change: { -readonly [K in keyof PlanChange<ToolCallBegun>]: PlanChange<ToolCallBegun>[K] } = {
      result: Object.freeze(result),
      entries: this.#entries,
    };
    if (Object.keys(this.#mutation).length > 0) change.mutation = this.#mutation;
    if (this.#newApproval !== undefined) change.newApproval = this.#newApproval;
    return change;
  }
}

/** A request for a person's confirmation of one decision. */
export interface ConfirmationAsk {
  readonly decisionId: string;
  /** The operation, or all the operations of the decision: one approval covers those that need it. */
  readonly operation: string | readonly string[];
  readonly input?: unknown;
  readonly ttlMs: number;
  /** Operations that need a person whatever the plan's list says (a per-tool rule). */
  readonly alwaysRequire?: readonly string[];
  /** Stop the wall clock while the person decides; default true. */
  readonly pauseClock?: boolean;
  /** The tool an agent wants to call, shown to the person asked. */
  readonly toolName?: string;
  /** The JSON value to show the person a preview of, e.g. the tool's arguments. */
  readonly preview?: unknown;
}

/** A confirmation request, checked: what a plan's change is decided from. */
interface ValidConfirmation {
  readonly expires: number;
  readonly decisionId: string;
  readonly ops: readonly string[];
  readonly always: readonly string[];
  readonly pause: boolean;
  readonly toolName: string | undefined;
  readonly shown: { readonly value: unknown; readonly field: string } | null;
  readonly input: unknown;
}

/** What {@link AutonomyGuardrailService.requestConfirmation} did: the check, and the approval it opened. */
export interface ConfirmationRequest {
  readonly check: GuardCheck;
  readonly approval?: Approval;
}

/** What {@link AutonomyGuardrailService.useGrant} found. */
export interface GrantUse {
  readonly outcome: 'granted' | 'pending' | 'denied' | 'refused';
  readonly check: GuardCheck;
  readonly approval: Approval | null;
}

const ONE_STEP: PlanMutation = Object.freeze({ steps: 1 });

/** Runs `fn`, turning a synchronous throw into a rejection without the extra ticks of an async frame. */
/** The `pauseClock` option of a confirmation: a boolean, default true. */
function pauseClockOf(value: unknown): boolean {
  if (value !== undefined && typeof value !== 'boolean') invalid('pauseClock', 'a boolean', value);
  return value !== false;
}

function rejecting<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return fn();
  } catch (error) {
    return Promise.reject(error);
  }
}

const STORE_METHODS = ['update', 'put', 'get', 'delete', 'close', 'getApproval', 'listApprovals'] as const;

/** Refuses at construction what would otherwise fail on the first check with a TypeError. */
function validStore(store: unknown): GuardrailStore {
  const s = store as Record<string, unknown> | null;
  const complete =
    typeof s === 'object' &&
    s !== null &&
    STORE_METHODS.every((m) => typeof s[m] === 'function') &&
    Number.isSafeInteger(s['auditCapacity']) &&
    (s['auditCapacity'] as number) >= 1;
  if (!complete) {
    throw new GuardrailValidationError(
      'store',
      `store must implement GuardrailStore (${STORE_METHODS.join(', ')} and auditCapacity), got ${describeValue(store)}`,
    );
  }
  return store as GuardrailStore;
}

const OPTION_KEYS = [
  'store',
  'clock',
  'auditCapacity',
  'metadataLimits',
  'unconfiguredPlans',
  'storeUnavailable',
  'ids',
  'reservationTtlMs',
];

/**
 * Guardrails per plan over a {@link GuardrailStore}: every check is recorded in the plan's audit trail
 * together with its effect, in one atomic step.
 *
 * @example
 * const service = new AutonomyGuardrailService();
 * await service.configureGuardrails('plan-1', { toolBudget: 1 });
 * (await service.checkToolBudget('plan-1', 0.4)).allowed; // true, and 0.4 is now spent
 */
export class AutonomyGuardrailService {
  readonly #store: GuardrailStore;
  readonly #clock: Clock;
  readonly #limits: MetadataLimits;
  readonly #deny: boolean;
  readonly #denyUnavailable: boolean;
  readonly #ids: () => string;
  readonly #reservationTtlMs: number;

  constructor(options: AutonomyGuardrailServiceOptions = {}) {
    const o = objectWithKeys(options, 'options', OPTION_KEYS);
    this.#limits = resolveMetadataLimits(o['metadataLimits']);
    const clock = o['clock'] === undefined ? systemClock : o['clock']; // null is an error, not the default
    if (typeof (clock as Clock | null)?.now !== 'function') {
      throw new GuardrailValidationError(
        'clock',
        `clock must have a now() method, got ${describeValue(clock)}`,
      );
    }
    this.#clock = clock as Clock;
    const unconfigured = o['unconfiguredPlans'] === undefined ? 'allow' : o['unconfiguredPlans'];
    if (unconfigured !== 'allow' && unconfigured !== 'deny') {
      throw new GuardrailValidationError(
        'unconfiguredPlans',
        `unconfiguredPlans must be "allow" or "deny", got ${describeValue(unconfigured)}`,
      );
    }
    this.#deny = unconfigured === 'deny';
    const unavailable = o['storeUnavailable'] === undefined ? 'reject' : o['storeUnavailable'];
    if (unavailable !== 'reject' && unavailable !== 'deny') {
      throw new GuardrailValidationError(
        'storeUnavailable',
        `storeUnavailable must be "reject" or "deny", got ${describeValue(unavailable)}`,
      );
    }
    this.#denyUnavailable = unavailable === 'deny';
    const ids = o['ids'] === undefined ? randomUUID : o['ids'];
    if (typeof ids !== 'function') {
      throw new GuardrailValidationError(
        'ids',
        `ids must be a function returning a new id, got ${describeValue(ids)}`,
      );
    }
    this.#ids = ids as () => string;
    const ttl = o['reservationTtlMs'] === undefined ? DEFAULT_RESERVATION_TTL_MS : o['reservationTtlMs'];
    this.#reservationTtlMs = intField(ttl, 'reservationTtlMs', 1, false) as number;
    if (this.#reservationTtlMs > MAX_APPROVAL_TTL_MS) {
      invalid('reservationTtlMs', `at most ${MAX_APPROVAL_TTL_MS} (ten years)`, ttl);
    }
    if (o['store'] !== undefined && o['auditCapacity'] !== undefined) {
      throw new GuardrailValidationError(
        'auditCapacity',
        'auditCapacity configures the default memory store; with your own store, give it to the store',
      );
    }
    const capacity =
      o['auditCapacity'] === undefined ? undefined : intField(o['auditCapacity'], 'auditCapacity', 1, false);
    this.#store =
      o['store'] === undefined
        ? new MemoryStore({ keepLog: false, ...(capacity ? { auditCapacity: capacity } : {}) })
        : validStore(o['store']);
    if (this.#store.auditCapacity > this.#limits.maxAuditEntries) {
      // Otherwise the service would write metadata it refuses to read back.
      throw new GuardrailValidationError(
        'auditCapacity',
        `auditCapacity must be at most metadataLimits.maxAuditEntries (${this.#limits.maxAuditEntries}), got ${this.#store.auditCapacity}`,
      );
    }
    // The largest details the service writes: an operation name twice (at most 3 UTF-8 bytes per UTF-16
    // unit) with a few words, or four numbers and a sentence (under 200 bytes). Smaller limits would make
    // the service refuse, on reading, entries it wrote itself.
    const needed = Math.max(6 * this.#limits.maxOperationNameLength + 96, 256);
    if (this.#limits.maxDetailsBytes < needed) {
      throw new GuardrailValidationError(
        'metadataLimits.maxDetailsBytes',
        `metadataLimits.maxDetailsBytes must be at least ${needed} to hold the service's own entries, got ${this.#limits.maxDetailsBytes}`,
      );
    }
  }

  /** The store this service writes to. */
  get store(): GuardrailStore {
    return this.#store;
  }

  /**
   * Sets a plan's limits. A plan configured before keeps its audit trail, steps taken, money spent and
   * start time, unless `init` gives them. Validated in full first: a bad init changes nothing. Returns a
   * copy of what was stored.
   */
  async configureGuardrails(planId: string, init?: GuardrailsInit): Promise<AutonomyGuardrails> {
    validatePlanId(planId);
    const fresh = AutonomyGuardrails.parse(init, '', false, this.#limits);
    const given: GuardrailsInit = init ?? {};
    // A configured plan keeps what it has used: new limits must not hand out a fresh budget. Counters
    // given explicitly replace the kept ones.
    const replaced = await this.#store.update(planId, (g) => {
      if (!g) return { result: null };
      const merged = AutonomyGuardrails.parse(
        {
          ...given,
          stepCount: given.stepCount ?? g.stepCount,
          budgetSpent: given.budgetSpent ?? g.budgetSpent,
          startTime: given.startTime === undefined ? g.startTime : given.startTime,
        },
        '',
        false,
        this.#limits,
      );
      merged.replaceRuntime(g.runtime); // open reservations, tool calls and waits go on
      return { result: merged, replace: merged };
    });
    if (replaced) return replaced.clone();
    await this.#store.put(planId, fresh);
    return fresh.clone();
  }

  /** The clock every check of this service reads. */
  get clock(): Clock {
    return this.#clock;
  }

  /** A copy of the plan's guardrails, or null when it has none. */
  async getGuardrails(planId: string): Promise<AutonomyGuardrails | null> {
    validatePlanId(planId);
    const store = this.#store;
    if (store.getGuardrails) return store.getGuardrails(planId);
    return (await store.get(planId))?.guardrails ?? null;
  }

  /** Checks `step` against `max_steps` and records the check. Counts nothing: see {@link takeStep}. */
  checkStepLimit(planId: string, step: number): Promise<GuardCheck> {
    return this.#checking(E.STEP_BLOCKED, checkItself, () => {
      validatePlanId(planId);
      intField(step, 'step', 0, false);
      return this.#store.update(planId, (g) => {
        if (!g) return this.#unconfigured(E.STEP_ALLOWED, E.STEP_BLOCKED, planId);
        const check = g.checkStepLimit(step);
        return this.#audited(check, { step, limit: check.limit ?? null });
      });
    });
  }

  /**
   * Atomic check-and-count of the plan's next step: allowed iff `step_count < max_steps`, and then
   * `step_count` goes up by one. Recorded either way.
   */
  takeStep(planId: string): Promise<GuardCheck> {
    return this.#checking(E.STEP_BLOCKED, checkItself, () => {
      validatePlanId(planId);
      return this.#store.update(planId, (g) =>
        g ? this.#decideStep(g) : this.#unconfigured(E.STEP_ALLOWED, E.STEP_BLOCKED, planId),
      );
    });
  }

  /**
   * Atomic check-and-spend: allowed iff `budget_spent + cost <= tool_budget`, and then `cost` is spent.
   * Concurrent calls never overspend. Recorded either way.
   */
  checkToolBudget(planId: string, cost: number): Promise<GuardCheck> {
    return this.#checking(E.BUDGET_BLOCKED, checkItself, () => {
      validatePlanId(planId);
      const micros = toMicros(cost, 'cost', 'up');
      const now = this.#now();
      return this.#store.update(planId, (stored) => {
        if (!stored) return this.#unconfigured(E.BUDGET_ALLOWED, E.BUDGET_BLOCKED, planId);
        // Lapsed reservations are given back in this same update, so the check must not count them.
        const expired = stored.expiredReservations(now);
        const g = expired.length === 0 ? stored : stored.withoutExpired(now);
        const check = g.checkToolBudgetMicros(micros);
        const spend = check.allowed && micros > 0;
        const spent = fromMicros(spend ? g.budgetSpentMicros + micros : g.budgetSpentMicros);
        const details: Record<string, JsonValue> = {
          cost: fromMicros(micros),
          spent,
          limit: check.limit ?? null,
        };
        expiredDetails(details, expired);
        const mutation = expiring(spend ? { spendMicros: micros } : undefined, expired, now);
        return this.#audited(check, details, mutation, now);
      });
    });
  }

  /**
   * A model with no price cannot be metered: denied (`budget_blocked`, its reason naming the model and
   * the policy key `models.<id>` to add) while the plan has a budget, and recorded then. Allowed, and not
   * recorded, for a plan with no budget.
   */
  checkUnpricedModel(planId: string, modelId: string): Promise<GuardCheck> {
    return this.#checking(E.BUDGET_BLOCKED, checkItself, () => {
      validatePlanId(planId);
      const model = validRuntimeKey(modelId, 'modelId');
      return this.#store.update(planId, (g) => {
        if (!g) return this.#unconfigured(E.BUDGET_ALLOWED, E.BUDGET_BLOCKED, planId);
        const limit = g.toolBudget;
        if (limit === null) return { result: makeCheck(E.BUDGET_ALLOWED, unpricedUnmetered, null, 0, model) };
        const check = makeCheck(E.BUDGET_BLOCKED, unpricedBlocked, limit, 0, model);
        return this.#audited(check, { model, policy_key: `models.${model}`, limit });
      });
    });
  }

  /**
   * The checks before a tool call runs, decided and recorded in one update of the plan, each audited as
   * its own method would: wall clock → step (counted) → confirmation (an approval opened when a person
   * must confirm) → the invocation's tool calls → the tool's calls per plan (counted) → reservation of
   * the estimate. Stops at the first that refuses. Resolves null for a plan that is not configured: its
   * checks are asked one by one then.
   */
  beginToolCall(planId: string, call: ToolCallBegin): Promise<ToolCallBegun | null> {
    return this.#checking(E.WALL_CLOCK_BLOCKED, begunOf, () => {
      validatePlanId(planId);
      const o = objectWithKeys(call, 'call', [
        'confirm',
        'tool',
        'currentCalls',
        'estimate',
        'reservationId',
        'recordCall',
      ]);
      const now = this.#now();
      const c = this.#validConfirmation(o['confirm'] as ConfirmationAsk, now);
      const record = o['recordCall'] ?? false;
      if (typeof record !== 'boolean') invalid('recordCall', 'a boolean', record);
      const named: JsonObject | null = record
        ? { tool: c.toolName ?? c.ops.join(','), input_hash: inputHash(c.input) }
        : null;
      const t =
        o['tool'] === undefined ? undefined : objectWithKeys(o['tool'], 'tool', ['name', 'maxCallsPerPlan']);
      const tool = t && {
        name: validRuntimeKey(t['name'], 'tool'),
        max: intField(t['maxCallsPerPlan'], 'max_calls_per_plan', 1, false) as number,
      };
      const current =
        o['currentCalls'] === undefined
          ? null
          : (intField(o['currentCalls'], 'current_calls', 0, false) as number);
      const micros = toMicros(o['estimate'], 'amount', 'up');
      const id = validRuntimeKey(o['reservationId'], 'reservationId');
      const expiresAt = this.#reservationExpiry(now);
      return this.#store.update(planId, (g): PlanChange<ToolCallBegun | null> => {
        if (!g) return { result: null };
        const change = new ToolCallChange(named);
        const wallClock = change.take(this.#decideWallClock(g, now));
        if (!wallClock.allowed) return change.end({ check: wallClock, wallClock });
        const step = change.take(this.#decideStep(g, now));
        if (!step.allowed) return change.end({ check: step, wallClock });
        const asked = change.take(this.#decideConfirmation(g, planId, c, now));
        if (!asked.check.allowed) {
          const { check, approval } = asked;
          return change.end(approval ? { check, wallClock, approval } : { check, wallClock });
        }
        if (current !== null) {
          const actor = change.take(this.#decideActorCalls(g, current, now));
          if (!actor.allowed) return change.end({ check: actor, wallClock });
        }
        if (tool) {
          const calls = change.take(this.#decideToolCalls(g, tool.name, tool.max, now));
          if (!calls.allowed) return change.end({ check: calls, wallClock });
        }
        const reservation = change.take(this.#decideReservation(g, planId, id, micros, now, expiresAt));
        const { check } = reservation;
        return change.end(reservation.allowed ? { check, wallClock, reservation } : { check, wallClock });
      });
    });
  }

  /** Denied (`confirmation_required`) when a person must confirm `operation`. Recorded either way. */
  checkConfirmation(
    planId: string,
    operation: string,
    options?: { readonly alwaysRequire?: boolean },
  ): Promise<GuardCheck> {
    return this.#checking(E.CONFIRMATION_REQUIRED, checkItself, () => {
      validatePlanId(planId);
      const op = normalizeOperation(operation, 'operation', this.#limits.maxOperationNameLength);
      // A per-tool rule can demand a person whatever the plan's list says.
      const always = options?.alwaysRequire === true;
      return this.#store.update(planId, (g) => {
        if (!g) return this.#unconfigured(E.CONFIRMATION_NOT_REQUIRED, E.CONFIRMATION_REQUIRED, planId);
        const check = always
          ? makeCheck(E.CONFIRMATION_REQUIRED, confirmationReason([op], true), null)
          : g.checkConfirmation(op);
        return this.#audited(check, { operation: op, limit: null });
      });
    });
  }

  /** Checks the elapsed wall-clock time against the plan's limit, on the service's clock. */
  checkWallClock(planId: string): Promise<GuardCheck> {
    return this.#checking(E.WALL_CLOCK_BLOCKED, checkItself, () => {
      validatePlanId(planId);
      const now = this.#now();
      return this.#store.update(planId, (g) =>
        g
          ? this.#decideWallClock(g, now)
          : this.#unconfigured(E.WALL_CLOCK_ALLOWED, E.WALL_CLOCK_BLOCKED, planId),
      );
    });
  }

  /** Checks `currentCalls` against `max_tool_calls_per_invocation` and records the check. */
  checkActorToolCalls(planId: string, currentCalls: number): Promise<GuardCheck> {
    return this.#checking(E.ACTOR_TOOL_CALLS_BLOCKED, checkItself, () => {
      validatePlanId(planId);
      intField(currentCalls, 'current_calls', 0, false);
      return this.#store.update(planId, (g) =>
        g
          ? this.#decideActorCalls(g, currentCalls)
          : this.#unconfigured(E.ACTOR_TOOL_CALLS_ALLOWED, E.ACTOR_TOOL_CALLS_BLOCKED, planId),
      );
    });
  }

  /**
   * Checks `currentRetries` against `max_retries_per_failure` and records the check, with `error` (the
   * failure to retry, as text) when given: the entry keeps as much of its end as the details limit lets.
   */
  checkRetries(
    planId: string,
    currentRetries: number,
    options: { error?: string } = {},
  ): Promise<GuardCheck> {
    return this.#checking(E.RETRY_BLOCKED, checkItself, () => {
      validatePlanId(planId);
      intField(currentRetries, 'current_retries', 0, false);
      const error = textOption(options, 'error');
      return this.#store.update(planId, (g) => {
        if (!g) return this.#unconfigured(E.RETRY_ALLOWED, E.RETRY_BLOCKED, planId);
        const check = g.checkRetries(currentRetries);
        const details: Record<string, JsonValue> = {
          current_retries: currentRetries,
          limit: check.limit ?? null,
        };
        if (error !== undefined) details['error'] = error;
        return this.#audited(check, details);
      });
    });
  }

  /** Sets the plan's `start_time` to now if it is unset; a plan that already started keeps its start. */
  markStarted(planId: string): Promise<void> {
    return rejecting(() => {
      validatePlanId(planId);
      const startTime = formatIso(this.#now());
      return this.#store.update(planId, (g) =>
        g && g.startTime === null ? { result: undefined, mutation: { startTime } } : { result: undefined },
      );
    });
  }

  /**
   * Atomically sets `amount` aside for a call in flight: allowed iff spent + reserved + amount <= budget.
   * Settle it with `commit(actual)` or give it back with `release()`. Idempotent on `reservationId`:
   * while a reservation with that id is open, asking again returns it without reserving twice.
   */
  reserveBudget(
    planId: string,
    amount: number,
    options: { reservationId: string },
  ): Promise<BudgetReservation> {
    return rejecting(() => {
      validatePlanId(planId);
      const micros = toMicros(amount, 'amount', 'up');
      const id = validRuntimeKey(
        isPlainObject(options) ? options['reservationId'] : undefined,
        'reservationId',
      );
      const now = this.#now();
      const expiresAt = this.#reservationExpiry(now);
      const reserving = this.#store.update(planId, (stored): PlanChange<BudgetReservation> => {
        if (!stored) {
          const check = this.#unconfigured(E.BUDGET_ALLOWED, E.BUDGET_BLOCKED, planId).result;
          return { result: BudgetReservation.made(this, planId, id, micros, check, false, null) };
        }
        return this.#decideReservation(stored, planId, id, micros, now, expiresAt);
      });
      if (!this.#denyUnavailable) return reserving;
      const notOpen = (check: GuardCheck) =>
        BudgetReservation.made(this, planId, id, micros, check, false, null);
      return this.#orDenied(E.BUDGET_BLOCKED, notOpen, reserving);
    });
  }

  /**
   * @internal settles a reservation at its actual cost (`actual`), or gives it back (null); see
   * {@link BudgetReservation.commit}. A reservation that lapsed is settled once all the same: a commit
   * spends its actual cost, since the work was done. One not open and not lapsed was settled already,
   * by this or another handle of the same id: nothing changes, and nothing is spent twice.
   */
  settleReservation(
    planId: string,
    id: string,
    actual: number | null,
    options: { error?: string; note?: string } = {},
  ): Promise<GuardCheck> {
    return rejecting(() => {
      const actualMicros = actual === null ? null : toMicros(actual, 'actual', 'up');
      // A release may say why the call failed; a commit may say why it spends what it spends.
      const key = actual === null ? 'error' : 'note';
      const text = textOption(options, key);
      const said: Record<string, JsonValue> = text === undefined ? {} : { [key]: text };
      const now = this.#now();
      return this.#store.update(planId, (stored) => {
        const open = stored?.reservationMicros(id);
        const lapsed =
          open === undefined
            ? stored?.hasLapsed(id) === true
            : stored?.expiredReservations(now).includes(id) === true;
        if (!stored || (open === undefined && !lapsed)) {
          const reason = `reservation "${id}" is not open (settled already, or never reserved); nothing changed`;
          return { result: makeCheck(E.BUDGET_RELEASED, reason, null) };
        }
        // Lapsed reservations are given back in this same update, so the check must not count them.
        const expired = stored.expiredReservations(now);
        const g = expired.length === 0 ? stored : stored.withoutExpired(now);
        if (lapsed) return this.#settleLapsed(g, id, open ?? 0, actualMicros, expired, now, said);
        const held = open as number;
        if (actualMicros === null) {
          const check = makeCheck(
            E.BUDGET_RELEASED,
            `reservation "${id}" released`,
            g.toolBudget,
            fromMicros(held),
          );
          const details: Record<string, JsonValue> = { reservation_id: id, amount: fromMicros(held) };
          expiredDetails(details, expired);
          Object.assign(details, said);
          return this.#audited(check, details, expiring({ release: id }, expired, now), now);
        }
        const budget = g.toolBudgetMicros;
        const after = g.budgetSpentMicros + actualMicros;
        const overrun = budget !== null && after + g.budgetReservedMicros - held > budget;
        const check = overrun
          ? makeCheck(E.BUDGET_OVERRUN, overrunReason, g.toolBudget, fromMicros(actualMicros), after)
          : makeCheck(E.BUDGET_COMMITTED, committedReason, g.toolBudget, fromMicros(actualMicros), after);
        const details: Record<string, JsonValue> = {
          reservation_id: id,
          reserved: fromMicros(held),
          actual: fromMicros(actualMicros),
          spent: fromMicros(after),
          limit: check.limit ?? null,
        };
        expiredDetails(details, expired);
        Object.assign(details, said);
        // An overrun is spent all the same: the money is gone, and hiding it would understate the spend.
        const mutation = expiring({ release: id, spendMicros: actualMicros }, expired, now);
        return this.#audited(check, details, mutation, now);
      });
    });
  }

  /**
   * Settles a reservation that lapsed: nothing is held for it any more (`g` is without the lapsed ones),
   * but a commit's actual cost is spent all the same, since the work was done. `held` is the amount it
   * held when still in the state (given back by this update), or 0.
   */
  #settleLapsed(
    g: AutonomyGuardrails,
    id: string,
    held: number,
    actualMicros: number | null,
    expired: readonly string[],
    now: number,
    said: Record<string, JsonValue>,
  ): PlanChange<GuardCheck> {
    const others = expired.filter((x) => x !== id);
    if (actualMicros === null) {
      const check = makeCheck(
        E.BUDGET_RELEASED,
        `reservation "${id}" had expired; its amount is released`,
        g.toolBudget,
        fromMicros(held),
      );
      const details: Record<string, JsonValue> = {
        reservation_id: id,
        amount: fromMicros(held),
        expired: true,
      };
      expiredDetails(details, others, 'also_expired');
      Object.assign(details, said);
      return this.#audited(check, details, expiring({ settleLapsed: id }, expired, now), now);
    }
    const budget = g.toolBudgetMicros;
    const after = g.budgetSpentMicros + actualMicros;
    const overrun = budget !== null && after + g.budgetReservedMicros > budget;
    const check = overrun
      ? makeCheck(E.BUDGET_OVERRUN, overrunReason, g.toolBudget, fromMicros(actualMicros), after)
      : makeCheck(E.BUDGET_COMMITTED, committedReason, g.toolBudget, fromMicros(actualMicros), after);
    const details: Record<string, JsonValue> = {
      reservation_id: id,
      reserved: 0,
      actual: fromMicros(actualMicros),
      spent: fromMicros(after),
      limit: check.limit ?? null,
      expired: true,
    };
    expiredDetails(details, others, 'also_expired');
    Object.assign(details, said);
    const mutation = expiring({ spendMicros: actualMicros, settleLapsed: id }, expired, now);
    return this.#audited(check, details, mutation, now);
  }

  /**
   * Atomic check-and-count of one call of `tool` against its calls-per-plan limit (from a policy): allowed
   * iff calls so far < `maxCallsPerPlan`, and then the call is counted. Recorded either way.
   */
  checkToolCalls(planId: string, tool: string, maxCallsPerPlan: number): Promise<GuardCheck> {
    return this.#checking(E.TOOL_CALLS_BLOCKED, checkItself, () => {
      validatePlanId(planId);
      const name = validRuntimeKey(tool, 'tool');
      const max = intField(maxCallsPerPlan, 'max_calls_per_plan', 1, false) as number;
      return this.#store.update(planId, (g) =>
        g
          ? this.#decideToolCalls(g, name, max)
          : this.#unconfigured(E.TOOL_CALLS_ALLOWED, E.TOOL_CALLS_BLOCKED, planId),
      );
    });
  }

  /**
   * Refuses a call of `tool` that may not run at all (a tool its caller hides): recorded as a
   * `tool_calls_blocked` check with a limit of 0, the tool, its input's hash and `reason`. Takes no step
   * and counts nothing. A plan that is not configured records nothing.
   */
  refuseToolCall(
    planId: string,
    call: { readonly tool: string; readonly input?: unknown; readonly reason: string },
  ): Promise<GuardCheck> {
    return this.#checking(E.TOOL_CALLS_BLOCKED, checkItself, () => {
      validatePlanId(planId);
      const o = objectWithKeys(call, 'call', ['tool', 'input', 'reason']);
      const tool = validRuntimeKey(o['tool'], 'tool');
      const reason = o['reason'];
      if (typeof reason !== 'string' || reason.length === 0) invalid('reason', 'a non-empty string', reason);
      const hash = inputHash({ tool, input: o['input'] ?? null });
      const now = this.#now();
      const check = makeCheck(E.TOOL_CALLS_BLOCKED, reason, 0);
      return this.#store.update(planId, (g) =>
        g
          ? { result: check, audit: this.#entry(check, { tool, input_hash: hash, limit: 0 }, now) }
          : { result: check },
      );
    });
  }

  /**
   * Checks whether `operation` needs a person's confirmation and, if it does, atomically opens a pending
   * approval for this decision and input, and stops the plan's wall clock until the approval is used or
   * denied (`pauseClock: false` leaves it running, for a caller that goes on while the person decides).
   * Recorded either way. The approval shows the person what they are asked about: `toolName`, and a
   * bounded one-line preview of `preview` (see {@link inputPreview}), or of `input` when only `toolName`
   * is given; without either, no preview.
   */
  requestConfirmation(planId: string, request: ConfirmationAsk): Promise<ConfirmationRequest> {
    return this.#checking(E.CONFIRMATION_REQUIRED, requestOf, () => {
      validatePlanId(planId);
      const now = this.#now();
      const c = this.#validConfirmation(request, now);
      const always = c.always;
      return this.#store.update(planId, (g): PlanChange<ConfirmationRequest> => {
        if (!g && always.length > 0) {
          // A rule says a person must confirm: with no plan to keep an approval in, nobody can (fail closed).
          const reason = `${always.join(', ')} always needs a person's confirmation, and plan "${planId}" is not configured to ask one`;
          return { result: { check: makeCheck(E.CONFIRMATION_REQUIRED, reason, null) } };
        }
        if (!g) {
          return {
            result: {
              check: this.#unconfigured(E.CONFIRMATION_NOT_REQUIRED, E.CONFIRMATION_REQUIRED, planId).result,
            },
          };
        }
        return this.#decideConfirmation(g, planId, c, now);
      });
    });
  }

  /** A person approves a pending confirmation: recorded with who and why. The grant is single-use. */
  approve(id: string, decision: Decision): Promise<Approval> {
    return rejecting(() => this.#decide(id, validDecision(decision, false), 'approved'));
  }

  /** A person denies a pending confirmation: recorded with who and why (a reason is required). */
  deny(id: string, decision: Decision): Promise<Approval> {
    return rejecting(() => this.#decide(id, validDecision(decision, true), 'denied'));
  }

  async #decide(
    id: string,
    who: { by: string; reason?: string },
    status: 'approved' | 'denied',
  ): Promise<Approval> {
    const found = await this.#store.getApproval(validRuntimeKey(id, 'approval_id'));
    if (!found) throw new GuardrailError('APPROVAL_NOT_FOUND', `no approval "${id}"`);
    const now = this.#now();
    return this.#store.update(
      found.planId,
      (_g, current) => {
        if (!current) throw new GuardrailError('APPROVAL_NOT_FOUND', `no approval "${id}"`);
        if (current.status !== 'pending') {
          throw new GuardrailError('APPROVAL_NOT_PENDING', `approval "${id}" is already ${current.status}`);
        }
        // A person may always say no; only a yes must come in time.
        if (status === 'approved' && now > parseIsoMs(current.expiresAt)) {
          throw new GuardrailError('APPROVAL_EXPIRED', `approval "${id}" expired at ${current.expiresAt}`);
        }
        const decided: Approval = Object.freeze({
          ...current,
          status,
          decidedBy: who.by,
          decidedAt: formatIso(now),
          ...(who.reason === undefined ? {} : { reason: who.reason }),
        });
        const eventType = status === 'approved' ? E.CONFIRMATION_APPROVED : E.CONFIRMATION_DENIED;
        const check = makeCheck(
          eventType,
          status === 'approved' ? 'a person approved' : 'a person denied',
          null,
        );
        const details = {
          approval_id: id,
          decision_id: current.decisionId,
          operation: current.operation,
          by: who.by,
          reason: who.reason ?? null,
        };
        // A denial ends the wait; an approval's wait ends when the grant is used.
        const audit = this.#entry(check, details, now);
        return status === 'denied'
          ? { result: decided, audit, approval: decided, mutation: { unpause: now } }
          : { result: decided, audit, approval: decided };
      },
      { approvalId: found.id },
    );
  }

  /**
   * Uses the grant of `approvalId` for a decision about to run: allowed once, for the same plan, decision,
   * normalized operation and input, before it expires. Marks it used and restarts the wall clock (unless
   * `pauseClock: false`, as the request was made, left it running).
   * Outcomes: `granted`; `pending` (nobody decided yet); `denied` (a person said no); `refused` (expired,
   * used already, or for something else — a new approval is needed). Recorded unless pending or denied.
   */
  useGrant(
    planId: string,
    approvalId: string,
    use: {
      decisionId: string;
      /** The operation, or all the operations of the decision, as given to requestConfirmation. */
      operation: string | readonly string[];
      input?: unknown;
      alwaysRequire?: readonly string[];
      /** As given to requestConfirmation: false leaves the wall clock as it is. Default true. */
      pauseClock?: boolean;
      /**
       * Record a use that finds the approval pending or denied too (default false: the request and the
       * decision were recorded, and a runner that waits asks again and again). For a caller whose use
       * means the call was about to run: an approval claimed where leash has none.
       */
      recordRefusal?: boolean;
    },
  ): Promise<GrantUse> {
    return rejecting(() => {
      validatePlanId(planId);
      if (!isPlainObject(use)) invalid('use', 'an object', use);
      const id = validRuntimeKey(approvalId, 'approval_id');
      const decisionId = validRuntimeKey(use.decisionId, 'decisionId');
      const ops = this.#operations(use.operation);
      const always = this.#operations(use.alwaysRequire ?? [], 'alwaysRequire', true);
      const hash = inputHash(use.input);
      const unpause = pauseClockOf(use.pauseClock);
      const record = use.recordRefusal ?? false;
      if (typeof record !== 'boolean') invalid('recordRefusal', 'a boolean', record);
      const now = this.#now();
      return this.#store.update(
        planId,
        (g, a): PlanChange<GrantUse> => {
          const details = { approval_id: id, decision_id: decisionId, ...operationsDetail(ops) };
          if (!g || !a) {
            const check = makeCheck(
              E.CONFIRMATION_GRANT_REFUSED,
              `no approval "${id}" for plan "${planId}"`,
              null,
            );
            const result: GrantUse = { outcome: 'refused', check, approval: null };
            if (!g) return { result };
            return { result, audit: this.#entry(check, details, now) };
          }
          const undecided = (outcome: 'pending' | 'denied', check: GuardCheck): PlanChange<GrantUse> => {
            const result: GrantUse = { outcome, check, approval: a };
            return record ? { result, audit: this.#entry(check, details, now) } : { result };
          };
          if (a.status === 'pending' && now <= parseIsoMs(a.expiresAt)) {
            return undecided('pending', makeCheck(E.CONFIRMATION_REQUIRED, 'awaiting a decision', null));
          }
          if (a.status === 'denied') {
            const reason = `denied by ${a.decidedBy ?? 'someone'}: ${a.reason ?? ''}`;
            return undecided('denied', makeCheck(E.CONFIRMATION_DENIED, reason, null));
          }
          // What needs a person now: a grant covers exactly that, so a wider need asks again.
          const op = requiredOf(g, ops, always).join(',');
          const problem =
            a.status === 'used'
              ? 'it was used already'
              : a.decisionId !== decisionId
                ? `it was given for decision "${a.decisionId}"`
                : a.operation !== op
                  ? `it was given for operation "${a.operation}"`
                  : a.inputHash !== hash
                    ? 'the input changed since it was given'
                    : now > parseIsoMs(a.expiresAt)
                      ? `it expired at ${a.expiresAt}`
                      : null;
          if (problem !== null) {
            const check = makeCheck(
              E.CONFIRMATION_GRANT_REFUSED,
              `approval "${id}" cannot be used: ${problem}`,
              null,
            );
            return {
              result: { outcome: 'refused', check, approval: a },
              audit: this.#entry(check, details, now),
            };
          }
          const used: Approval = Object.freeze({ ...a, status: 'used', usedAt: formatIso(now) });
          const check = makeCheck(E.CONFIRMATION_GRANT_USED, `approved by ${a.decidedBy ?? 'someone'}`, null);
          const audit = this.#entry(check, { ...details, by: a.decidedBy ?? null }, now);
          const result: GrantUse = { outcome: 'granted', check, approval: used };
          return unpause
            ? { result, audit, approval: used, mutation: { unpause: now } }
            : { result, audit, approval: used };
        },
        { approvalId: id },
      );
    });
  }

  /** An approval by id, or null. */
  async getApproval(id: string): Promise<Approval | null> {
    return this.#store.getApproval(validRuntimeKey(id, 'approval_id'));
  }

  /**
   * The newest approval of `planId` asked for decision `decisionId`, or null: how a caller that did not
   * keep an approval's id (a process that restarted) finds the one it asked for.
   */
  async findApproval(planId: string, decisionId: string): Promise<Approval | null> {
    validatePlanId(planId);
    const id = validRuntimeKey(decisionId, 'decisionId');
    if (this.#store.findApproval) return this.#store.findApproval(planId, id);
    const approvals = await this.#store.listApprovals({ planId });
    for (let i = approvals.length - 1; i >= 0; i--) {
      if ((approvals[i] as Approval).decisionId === id) return approvals[i] as Approval;
    }
    return null;
  }

  /** Approvals, oldest first, optionally of one plan and in one status. */
  async listApprovals(filter: { planId?: string; status?: ApprovalStatus } = {}): Promise<Approval[]> {
    if (!isPlainObject(filter)) invalid('filter', 'an object', filter);
    if (filter.planId !== undefined) validatePlanId(filter.planId);
    if (filter.status !== undefined && !APPROVAL_STATUSES.includes(filter.status)) {
      throw new GuardrailValidationError(
        'status',
        `status must be one of ${APPROVAL_STATUSES.join(', ')}, got ${describeValue(filter.status)}`,
      );
    }
    return this.#store.listApprovals(filter);
  }

  /** A copy of the plan's audit trail (the newest entries, oldest first), or null when it has none. */
  async getAuditTrail(planId: string): Promise<AuditTrail | null> {
    validatePlanId(planId);
    return (await this.#store.get(planId))?.audit ?? null;
  }

  /**
   * Returns `metadata` with the plan's state added under `autonomy_guardrails` (DESIGN.md §3). The input
   * object is not modified. For a plan with no guardrails, a copy of `metadata` as it was.
   */
  async toMetadata(planId: string, metadata: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    validatePlanId(planId);
    if (!isPlainObject(metadata)) {
      throw new GuardrailValidationError(
        'metadata',
        `metadata must be an object, got ${describeValue(metadata)}`,
      );
    }
    const record = await this.#store.get(planId);
    const out: Record<string, unknown> = { ...metadata };
    if (record) {
      Object.defineProperty(out, METADATA_KEY, {
        value: serializeState(record.guardrails, record.audit),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }

  /**
   * Replaces the plan's state with the one held in `metadata`, read as untrusted JSON. Validated in full
   * first: on any error nothing changes.
   * @throws GuardrailValidationError naming the path, e.g. `autonomy_guardrails.audit_trail.entries[3].result`
   */
  async loadFromMetadata(planId: string, metadata: unknown): Promise<AutonomyGuardrails> {
    validatePlanId(planId);
    const { guardrails, trail } = parseState(metadata, this.#limits);
    await this.#store.put(planId, guardrails, trail);
    return guardrails.clone();
  }

  /** Forgets the plan's guardrails and audit trail; true if it had any. */
  async removePlan(planId: string): Promise<boolean> {
    validatePlanId(planId);
    return this.#store.delete(planId);
  }

  /**
   * The change a check makes: its audit entry, and the mutation if any. A denial's entry also carries
   * the reason in words; an allowed entry's numbers say all there is.
   */
  // The decisions of the checks, from a configured plan's guardrails: each method's change, and the
  // parts of a tool call's one change (beginToolCall).

  #decideWallClock(g: AutonomyGuardrails, now: number): PlanChange<GuardCheck> {
    const check = g.checkWallClock(now);
    const limit = check.limit ?? null;
    const details = check.observed === undefined ? { limit } : { elapsed_seconds: check.observed, limit };
    return this.#audited(check, details, undefined, now); // the time the check was made against
  }

  #decideStep(g: AutonomyGuardrails, now?: number): PlanChange<GuardCheck> {
    const step = g.stepCount;
    const check = g.checkStepLimit(step);
    const details = { step, limit: check.limit ?? null };
    return this.#audited(check, details, check.allowed ? ONE_STEP : undefined, now);
  }

  #decideToolCalls(g: AutonomyGuardrails, name: string, max: number, now?: number): PlanChange<GuardCheck> {
    const calls = g.toolCallCount(name);
    const check =
      calls < max
        ? makeCheck(E.TOOL_CALLS_ALLOWED, toolCallsWithin, max, calls, name)
        : makeCheck(E.TOOL_CALLS_BLOCKED, toolCallsReach, max, calls, name);
    const details = { tool: name, calls, limit: max };
    return this.#audited(check, details, check.allowed ? { toolCall: name } : undefined, now);
  }

  #decideActorCalls(g: AutonomyGuardrails, currentCalls: number, now?: number): PlanChange<GuardCheck> {
    const check = g.checkActorToolCalls(currentCalls);
    return this.#audited(check, { current_calls: currentCalls, limit: check.limit ?? null }, undefined, now);
  }

  /** A confirmation request, checked (throws GuardrailValidationError naming the field), as of `now`. */
  #validConfirmation(request: ConfirmationAsk, now: number): ValidConfirmation {
    if (!isPlainObject(request)) invalid('request', 'an object', request);
    const decisionId = validRuntimeKey(request.decisionId, 'decisionId');
    const ops = this.#operations(request.operation);
    const always = this.#operations(request.alwaysRequire ?? [], 'alwaysRequire', true);
    const pause = pauseClockOf(request.pauseClock);
    const toolName = request.toolName === undefined ? undefined : validToolName(request.toolName);
    // What the person is shown of the input: `preview`, else the input of a named tool, else nothing.
    const shown =
      request.preview !== undefined
        ? { value: request.preview, field: 'preview' }
        : toolName === undefined
          ? null
          : { value: request.input, field: 'input' };
    const ttlMs = intField(request.ttlMs, 'ttlMs', 1, false) as number;
    if (ttlMs > MAX_APPROVAL_TTL_MS) invalid('ttlMs', `at most ${MAX_APPROVAL_TTL_MS} (ten years)`, ttlMs);
    const expires = now + ttlMs;
    if (!isSerializableTimestamp(expires))
      invalid('ttlMs', 'small enough to expire before the year 10000', ttlMs);
    return { decisionId, ops, always, pause, toolName, shown, input: request.input, expires };
  }

  #decideConfirmation(
    g: AutonomyGuardrails,
    planId: string,
    c: ValidConfirmation,
    now: number,
  ): PlanChange<ConfirmationRequest> {
    const { decisionId, ops, always, pause, toolName, shown, expires } = c;
    const required = requiredOf(g, ops, always);
    if (required.length === 0) {
      const check = makeCheck(E.CONFIRMATION_NOT_REQUIRED, confirmationReason(ops, false), null);
      return {
        result: { check },
        audit: this.#entry(check, { ...operationsDetail(ops), limit: null }, now),
      };
    }
    // The approval keeps them as one comma-separated string, as stores hold it.
    const op = required.join(',');
    const check = makeCheck(E.CONFIRMATION_REQUIRED, confirmationReason(required, true), null);
    // A new id only when a person is asked; the store refuses one already in use.
    const approval: Approval = Object.freeze({
      id: this.#newId(),
      planId,
      decisionId,
      operation: op,
      ...(toolName === undefined ? {} : { toolName }),
      // Like the hash, made only when a person must confirm.
      ...(shown === null ? {} : { inputPreview: inputPreview(shown.value, shown.field) }),
      inputHash: inputHash(c.input), // hashed only when a person must confirm
      requestedAt: formatIso(now),
      expiresAt: formatIso(expires),
      status: 'pending',
    });
    const details = {
      ...operationsDetail(required),
      decision_id: decisionId,
      approval_id: approval.id,
      expires_at: approval.expiresAt,
    };
    return {
      result: { check, approval },
      audit: this.#entry(check, details, now),
      ...(pause ? { mutation: { pause: approval.requestedAt } } : {}),
      newApproval: approval,
    };
  }

  #decideReservation(
    stored: AutonomyGuardrails,
    planId: string,
    id: string,
    micros: number,
    now: number,
    expiresAt: number,
  ): PlanChange<BudgetReservation> {
    // Lapsed reservations are given back in this same update, so the check must not count them.
    const expired = stored.expiredReservations(now);
    const g = expired.length === 0 ? stored : stored.withoutExpired(now);
    const held = g.reservationMicros(id);
    if (held !== undefined) {
      // Nothing is recorded for a repeated id, so lapsed reservations wait for the next operation.
      const check = makeCheck(
        E.BUDGET_RESERVED,
        `reservation "${id}" is already open`,
        g.toolBudget,
        fromMicros(held),
      );
      const heldUntil = g.reservationExpiresAt(id) ?? null;
      return { result: BudgetReservation.made(this, planId, id, held, check, true, heldUntil) };
    }
    const verdict = g.checkToolBudgetMicros(micros);
    const check = verdict.allowed
      ? makeCheck(E.BUDGET_RESERVED, reservedReason, verdict.limit ?? null, verdict.observed)
      : verdict;
    const details: Record<string, JsonValue> = {
      reservation_id: id,
      amount: fromMicros(micros),
      spent: g.budgetSpent,
      reserved: fromMicros(g.budgetReservedMicros + (check.allowed ? micros : 0)),
      limit: check.limit ?? null,
    };
    expiredDetails(details, expired);
    const result = BudgetReservation.made(this, planId, id, micros, check, check.allowed, expiresAt);
    const audit = this.#entry(check, details, now);
    const mutation = expiring(
      check.allowed ? { reserve: { id, micros, expiresAt } } : undefined,
      expired,
      now,
    );
    return mutation ? { result, audit, mutation } : { result, audit };
  }

  /** When a reservation made at `now` lapses. */
  #reservationExpiry(now: number): number {
    const expiresAt = now + this.#reservationTtlMs;
    if (!isSerializableTimestamp(expiresAt)) {
      invalid('reservationTtlMs', 'small enough to expire before the year 10000', this.#reservationTtlMs);
    }
    return expiresAt;
  }

  #audited(
    check: GuardCheck,
    details: Record<string, JsonValue>,
    mutation?: PlanMutation,
    at: number = this.#now(),
  ): PlanChange<GuardCheck> {
    const audit = this.#entry(check, details, at);
    return mutation ? { result: check, audit, mutation } : { result: check, audit };
  }

  /**
   * The audit entry of a check. Callers build their change as one literal around it: spreading a
   * change and adding keys would leave V8's fast path on every check.
   */
  #entry(check: GuardCheck, details: Record<string, JsonValue>, at: number = this.#now()): AuditEntry {
    if (!check.allowed && details['reason'] === undefined) details['reason'] = check.reason;
    const error = details['error'];
    if (typeof error === 'string') details['error'] = this.#fitted(details, error);
    return AuditEntry.fromCheck(check, at, details);
  }

  /** The end of `error` that lets `details` (which holds it as `error`) fit the details limit. */
  #fitted(details: Record<string, JsonValue>, error: string): string {
    let text = error;
    for (;;) {
      const bytes = Buffer.byteLength(JSON.stringify({ ...details, error: text }), 'utf8');
      const over = bytes - this.#limits.maxDetailsBytes;
      if (over <= 0) return text;
      const shorter = textTail(text, ERROR_TAIL_LINES, Buffer.byteLength(text, 'utf8') - over);
      if (shorter === text) return '';
      text = shorter;
    }
  }

  /** Normalized operation names, without repeats, in a stable order; at least one unless `mayBeEmpty`. */
  #operations(value: unknown, field = 'operation', mayBeEmpty = false): string[] {
    const list = typeof value === 'string' ? [value] : value;
    const max = this.#limits.maxRequiredConfirmations;
    if (!Array.isArray(list) || (list.length === 0 && !mayBeEmpty) || list.length > max) {
      invalid(field, `an operation name or a list of 1 to ${max}`, value);
    }
    const ops = new Set<string>();
    for (let i = 0; i < list.length; i++) {
      ops.add(normalizeOperation(list[i], `${field}[${i}]`, this.#limits.maxOperationNameLength));
    }
    return [...ops].sort();
  }

  #newId(): string {
    return validRuntimeKey(this.#ids(), 'ids()');
  }

  /** The clock's reading, refused if it could not be written to the audit trail and read back. */
  #now(): number {
    const now = this.#clock.now();
    if (!isSerializableTimestamp(now)) {
      throw new GuardrailValidationError(
        'clock',
        `clock.now() must return epoch milliseconds within the years 0000-9999, got ${describeValue(now)}`,
      );
    }
    return now;
  }

  /**
   * For `storeUnavailable: 'deny'`: `pending`, or what `answer` makes of a `denied` check when it rejects
   * because the store cannot be reached.
   */
  #orDenied<T>(
    denied: GuardrailEventType,
    answer: (check: GuardCheck) => T,
    pending: Promise<T>,
  ): Promise<T> {
    return pending.catch((error: unknown) => {
      // A change that may have been committed is not answered as if nothing happened.
      if (
        !isGuardrailError(error) ||
        error.code !== 'STORE_UNAVAILABLE' ||
        isStoreOutcomeUnknownError(error)
      ) {
        throw error;
      }
      const reason = `nothing is allowed while the store cannot be reached: ${error.message}`;
      return answer(makeCheck(denied, reason, null));
    });
  }

  /** {@link rejecting}, answering as {@link #orDenied} does when the store cannot be reached. */
  #checking<T>(
    denied: GuardrailEventType,
    answer: (check: GuardCheck) => T,
    fn: () => Promise<T>,
  ): Promise<T> {
    return this.#denyUnavailable ? this.#orDenied(denied, answer, rejecting(fn)) : rejecting(fn);
  }

  #unconfigured(
    allowed: GuardrailEventType,
    denied: GuardrailEventType,
    planId: string,
  ): PlanChange<GuardCheck> {
    return {
      result: this.#deny
        ? makeCheck(denied, unconfiguredDenied, null, undefined, planId)
        : makeCheck(allowed, unconfiguredAllowed, null, undefined, planId),
    };
  }
}
