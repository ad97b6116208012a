import { AuditEntry } from '../audit/AuditEntry.js';
import { isSerializableTimestamp } from '../iso.js';
import type { Clock } from '../clock.js';
import {
  describeValue,
  ERROR_TAIL_LINES,
  GuardrailValidationError,
  invalid,
  isGuardrailError,
  isStoreOutcomeUnknownError,
  textTail,
} from '../errors.js';
import { validRuntimeKey } from '../guardrails/AutonomyGuardrails.js';
import type { ApprovalRules } from '../identity/rules.js';
import type { GuardrailEventType } from '../events.js';
import { makeCheck, type GuardCheck, type Reason } from '../GuardCheck.js';
import { normalizeOperation } from '../guardrails/operation.js';
import type { JsonValue } from '../json.js';
import type {
  GuardrailStore,
  PlanChange,
  PlanChangeFn,
  PlanMutation,
  UpdateOptions,
} from '../store/GuardrailStore.js';
import type { Settle } from './BudgetReservation.js';
import type { BudgetAlert } from './caps.js';
import { readCapStandings } from './capStandings.js';
import type { MetadataLimits } from './metadata.js';
import { alertNotifications, approvalTargets, enqueue, type NotifyTarget } from './notifications.js';
import { parseOptions } from '../validation.js';
import { Telemetry } from '../telemetry/Telemetry.js';
import { tracedUpdate } from '../telemetry/decisions.js';
import { serviceOptions, storeOf, type AutonomyGuardrailServiceOptions } from './options.js';

export {
  DEFAULT_RESERVATION_TTL_MS,
  MAX_APPROVAL_TTL_MS,
  type AutonomyGuardrailServiceOptions,
} from './options.js';

/** The answer of a check that is the check itself. */
export const checkItself = (check: GuardCheck): GuardCheck => check;

const unconfiguredAllowed: Reason = (_c, planId) => `plan "${planId}" has no guardrails configured`;
const unconfiguredDenied: Reason = (_c, planId) =>
  `plan "${planId}" has no guardrails and unconfiguredPlans is "deny"`;

/** Runs `fn`, turning a synchronous throw into a rejection without the extra ticks of an async frame. */
export function rejecting<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return fn();
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * What every part of the service works with: the store, the clock, the options as checked, and the
 * helpers that turn a check into its audit entry. Made once per service; the service's modules per
 * concern (checks, budget, confirmations, tool calls) are functions of it.
 */
export class ServiceCore {
  readonly store: GuardrailStore;
  readonly clock: Clock;
  readonly limits: MetadataLimits;
  readonly #deny: boolean;
  readonly #denyUnavailable: boolean;
  readonly #ids: () => string;
  readonly reservationTtlMs: number;
  readonly #onBudgetAlert: ((alert: BudgetAlert) => void | Promise<void>) | undefined;
  /** The rules of who decides approvals, if any. */
  readonly approvalRules: ApprovalRules | undefined;
  /** The notification targets this service knows. */
  readonly notifyTargets: readonly NotifyTarget[];
  /** The names of those that want approval events: what a new approval keeps in `notify`. */
  readonly approvalTargets: readonly string[];
  /** Where decisions are reported to OpenTelemetry; null when they are not. */
  readonly telemetry: Telemetry | null;

  /**
   * Checks `options` (throws GuardrailValidationError naming the field). `settle` settles a reservation:
   * what each {@link BudgetReservation} made by the service calls.
   */
  constructor(
    options: AutonomyGuardrailServiceOptions,
    readonly settle: Settle,
  ) {
    const o = parseOptions(serviceOptions, options);
    this.limits = o.metadataLimits;
    this.clock = o.clock;
    this.#deny = o.unconfiguredPlans === 'deny';
    this.#denyUnavailable = o.storeUnavailable === 'deny';
    this.#ids = o.ids;
    this.reservationTtlMs = o.reservationTtlMs;
    this.#onBudgetAlert = o.onBudgetAlert;
    this.approvalRules = o.approvalRules;
    this.notifyTargets = Object.freeze(o.notify?.targets ?? []);
    this.approvalTargets = Object.freeze(approvalTargets(this.notifyTargets));
    this.store = storeOf(o.store, o.auditCapacity, this.limits);
    this.telemetry = Telemetry.from(o.telemetry);
    this.telemetry?.metrics?.observeCaps(() => readCapStandings(this.store, this.now()));
  }

  /**
   * `store.update`, through which every decision of the service goes: reported to OpenTelemetry when
   * the service has telemetry.
   */
  update<T>(planId: string, change: PlanChangeFn<T>, options?: UpdateOptions): Promise<T> {
    const telemetry = this.telemetry;
    return telemetry === null
      ? this.store.update(planId, change, options)
      : tracedUpdate(telemetry, this.store, planId, change, options, this.limits.maxDetailsBytes);
  }

  /**
   * Tells `onBudgetAlert` of each alert, and queues their notifications (resolving once they are
   * queued); what either throws or rejects with is dropped.
   */
  budgetAlerts(alerts: readonly BudgetAlert[]): Promise<void> {
    const hook = this.#onBudgetAlert;
    if (hook !== undefined) {
      for (const alert of alerts) {
        try {
          void Promise.resolve(hook(alert)).catch(() => undefined);
        } catch {
          // an alert never fails a check
        }
      }
    }
    const targets = this.notifyTargets;
    if (targets.length === 0) return Promise.resolve();
    return enqueue(this, (at) => alertNotifications(targets, alerts, at));
  }

  /** True when a check that rejects because the store cannot be reached answers denied instead. */
  get deniesUnavailable(): boolean {
    return this.#denyUnavailable;
  }

  /** The clock's reading, refused if it could not be written to the audit trail and read back. */
  now(): number {
    const now = this.clock.now();
    if (!isSerializableTimestamp(now)) {
      throw new GuardrailValidationError(
        'clock',
        `clock.now() must return epoch milliseconds within the years 0000-9999, got ${describeValue(now)}`,
      );
    }
    return now;
  }

  /** A new approval id, from the `ids` option. */
  newId(): string {
    return validRuntimeKey(this.#ids(), 'ids()');
  }

  /** When a reservation made at `now` lapses. */
  reservationExpiry(now: number): number {
    const expiresAt = now + this.reservationTtlMs;
    if (!isSerializableTimestamp(expiresAt)) {
      invalid('reservationTtlMs', 'small enough to expire before the year 10000', this.reservationTtlMs);
    }
    return expiresAt;
  }

  /** The change a check makes: its audit entry, and the mutation if any. */
  audited(
    check: GuardCheck,
    details: Record<string, JsonValue>,
    mutation?: PlanMutation,
    at: number = this.now(),
  ): PlanChange<GuardCheck> {
    const audit = this.entry(check, details, at);
    return mutation ? { result: check, audit, mutation } : { result: check, audit };
  }

  /**
   * The audit entry of a check. A denial's entry also carries the reason in words; an allowed entry's
   * numbers say all there is. Callers build their change as one literal around it: spreading a change
   * and adding keys would leave V8's fast path on every check.
   */
  entry(check: GuardCheck, details: Record<string, JsonValue>, at: number = this.now()): AuditEntry {
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
      const over = bytes - this.limits.maxDetailsBytes;
      if (over <= 0) return text;
      const shorter = textTail(text, ERROR_TAIL_LINES, Buffer.byteLength(text, 'utf8') - over);
      if (shorter === text) return '';
      text = shorter;
    }
  }

  /** Normalized operation names, without repeats, in a stable order; at least one unless `mayBeEmpty`. */
  operations(value: unknown, field = 'operation', mayBeEmpty = false): string[] {
    const list = typeof value === 'string' ? [value] : value;
    const max = this.limits.maxRequiredConfirmations;
    if (!Array.isArray(list) || (list.length === 0 && !mayBeEmpty) || list.length > max) {
      invalid(field, `an operation name or a list of 1 to ${max}`, value);
    }
    // Most lists hold one operation, or none (`alwaysRequire`): no set to dedupe, nothing to sort.
    if (list.length === 0) return [];
    if (list.length === 1) {
      return [normalizeOperation(list[0], `${field}[0]`, this.limits.maxOperationNameLength)];
    }
    const ops = new Set<string>();
    for (let i = 0; i < list.length; i++) {
      ops.add(normalizeOperation(list[i], `${field}[${i}]`, this.limits.maxOperationNameLength));
    }
    return [...ops].sort();
  }

  /**
   * For `storeUnavailable: 'deny'`: `pending`, or what `answer` makes of a `denied` check when it rejects
   * because the store cannot be reached.
   */
  orDenied<T>(denied: GuardrailEventType, answer: (check: GuardCheck) => T, pending: Promise<T>): Promise<T> {
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

  /** {@link rejecting}, answering as {@link orDenied} does when the store cannot be reached. */
  checking<T>(
    denied: GuardrailEventType,
    answer: (check: GuardCheck) => T,
    fn: () => Promise<T>,
  ): Promise<T> {
    return this.#denyUnavailable ? this.orDenied(denied, answer, rejecting(fn)) : rejecting(fn);
  }

  /** What a check of a plan with no guardrails answers, as `unconfiguredPlans` says; records nothing. */
  unconfigured(
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
