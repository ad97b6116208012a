import { AuditEntry, isSerializableTimestamp } from '../audit/AuditEntry.js';
import type { AuditTrail } from '../audit/AuditTrail.js';
import { systemClock, type Clock } from '../clock.js';
import { describeValue, GuardrailValidationError } from '../errors.js';
import { AutonomyGuardrails, type GuardrailsInit } from '../guardrails/AutonomyGuardrails.js';
import { GuardrailEventType as E, type GuardrailEventType } from '../guardrails/events.js';
import { makeCheck, type GuardCheck, type Reason } from '../guardrails/GuardCheck.js';
import { normalizeOperation } from '../guardrails/operation.js';
import { intField, objectWithKeys } from '../guardrails/validate.js';
import { formatIso } from '../iso.js';
import { isPlainObject, type JsonValue } from '../json.js';
import { fromMicros, toMicros } from '../money.js';
import type { GuardrailStore, PlanChange, PlanMutation } from '../store/GuardrailStore.js';
import { MemoryStore } from '../store/memory/MemoryStore.js';
import {
  METADATA_KEY,
  parseState,
  resolveMetadataLimits,
  serializeState,
  type MetadataLimits,
} from './metadata.js';
import { validatePlanId } from './planId.js';

export interface AutonomyGuardrailServiceOptions {
  /** Where state lives; defaults to a new {@link MemoryStore}. */
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
}

const unconfiguredAllowed: Reason = (_c, planId) => `plan "${planId}" has no guardrails configured`;
const unconfiguredDenied: Reason = (_c, planId) =>
  `plan "${planId}" has no guardrails and unconfiguredPlans is "deny"`;

const ONE_STEP: PlanMutation = Object.freeze({ steps: 1 });

/** Runs `fn`, turning a synchronous throw into a rejection without the extra ticks of an async frame. */
function rejecting<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return fn();
  } catch (error) {
    return Promise.reject(error);
  }
}

const STORE_METHODS = ['update', 'put', 'get', 'delete', 'close'] as const;

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

const OPTION_KEYS = ['store', 'clock', 'auditCapacity', 'metadataLimits', 'unconfiguredPlans'];

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
        ? new MemoryStore(capacity ? { auditCapacity: capacity } : {})
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
      return { result: merged, replace: merged };
    });
    if (replaced) return replaced.clone();
    await this.#store.put(planId, fresh);
    return fresh.clone();
  }

  /** A copy of the plan's guardrails, or null when it has none. */
  async getGuardrails(planId: string): Promise<AutonomyGuardrails | null> {
    validatePlanId(planId);
    return (await this.#store.get(planId))?.guardrails ?? null;
  }

  /** Checks `step` against `max_steps` and records the check. Counts nothing: see {@link takeStep}. */
  checkStepLimit(planId: string, step: number): Promise<GuardCheck> {
    return rejecting(() => {
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
    return rejecting(() => {
      validatePlanId(planId);
      return this.#store.update(planId, (g) => {
        if (!g) return this.#unconfigured(E.STEP_ALLOWED, E.STEP_BLOCKED, planId);
        const step = g.stepCount;
        const check = g.checkStepLimit(step);
        return this.#audited(
          check,
          { step, limit: check.limit ?? null },
          check.allowed ? ONE_STEP : undefined,
        );
      });
    });
  }

  /**
   * Atomic check-and-spend: allowed iff `budget_spent + cost <= tool_budget`, and then `cost` is spent.
   * Concurrent calls never overspend. Recorded either way.
   */
  checkToolBudget(planId: string, cost: number): Promise<GuardCheck> {
    return rejecting(() => {
      validatePlanId(planId);
      const micros = toMicros(cost, 'cost', 'up');
      return this.#store.update(planId, (g) => {
        if (!g) return this.#unconfigured(E.BUDGET_ALLOWED, E.BUDGET_BLOCKED, planId);
        const check = g.checkToolBudgetMicros(micros);
        const spend = check.allowed && micros > 0;
        const spent = fromMicros(spend ? g.budgetSpentMicros + micros : g.budgetSpentMicros);
        const details = { cost: fromMicros(micros), spent, limit: check.limit ?? null };
        return this.#audited(check, details, spend ? { spendMicros: micros } : undefined);
      });
    });
  }

  /** Denied (`confirmation_required`) when a person must confirm `operation`. Recorded either way. */
  checkConfirmation(planId: string, operation: string): Promise<GuardCheck> {
    return rejecting(() => {
      validatePlanId(planId);
      const op = normalizeOperation(operation, 'operation', this.#limits.maxOperationNameLength);
      return this.#store.update(planId, (g) =>
        g
          ? this.#audited(g.checkConfirmation(op), { operation: op, limit: null })
          : this.#unconfigured(E.CONFIRMATION_NOT_REQUIRED, E.CONFIRMATION_REQUIRED, planId),
      );
    });
  }

  /** Checks the elapsed wall-clock time against the plan's limit, on the service's clock. */
  checkWallClock(planId: string): Promise<GuardCheck> {
    return rejecting(() => {
      validatePlanId(planId);
      const now = this.#now();
      return this.#store.update(planId, (g) => {
        if (!g) return this.#unconfigured(E.WALL_CLOCK_ALLOWED, E.WALL_CLOCK_BLOCKED, planId);
        const check = g.checkWallClock(now);
        const limit = check.limit ?? null;
        const details = check.observed === undefined ? { limit } : { elapsed_seconds: check.observed, limit };
        return this.#audited(check, details, undefined, now); // the time the check was made against
      });
    });
  }

  /** Checks `currentCalls` against `max_tool_calls_per_invocation` and records the check. */
  checkActorToolCalls(planId: string, currentCalls: number): Promise<GuardCheck> {
    return rejecting(() => {
      validatePlanId(planId);
      intField(currentCalls, 'current_calls', 0, false);
      return this.#store.update(planId, (g) => {
        if (!g) return this.#unconfigured(E.ACTOR_TOOL_CALLS_ALLOWED, E.ACTOR_TOOL_CALLS_BLOCKED, planId);
        const check = g.checkActorToolCalls(currentCalls);
        return this.#audited(check, { current_calls: currentCalls, limit: check.limit ?? null });
      });
    });
  }

  /** Checks `currentRetries` against `max_retries_per_failure` and records the check. */
  checkRetries(planId: string, currentRetries: number): Promise<GuardCheck> {
    return rejecting(() => {
      validatePlanId(planId);
      intField(currentRetries, 'current_retries', 0, false);
      return this.#store.update(planId, (g) => {
        if (!g) return this.#unconfigured(E.RETRY_ALLOWED, E.RETRY_BLOCKED, planId);
        const check = g.checkRetries(currentRetries);
        return this.#audited(check, { current_retries: currentRetries, limit: check.limit ?? null });
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
  #audited(
    check: GuardCheck,
    details: Record<string, JsonValue>,
    mutation?: PlanMutation,
    at: number = this.#now(),
  ): PlanChange<GuardCheck> {
    if (!check.allowed) details['reason'] = check.reason;
    const audit = AuditEntry.fromCheck(check, at, details);
    return mutation ? { result: check, audit, mutation } : { result: check, audit };
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
