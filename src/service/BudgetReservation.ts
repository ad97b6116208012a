import type { GuardCheck } from '../GuardCheck.js';
import { invalid } from '../errors.js';
import { objectWithKeys } from '../guardrails/validate.js';
import { toWellFormed } from '../json.js';
import { fromMicros, toMicros } from '../money.js';

/** Settles a reservation at its actual cost, or gives it back (null): the service's `settleReservation`. */
export type Settle = (
  planId: string,
  id: string,
  actual: number | null,
  options: { error?: string; note?: string; model?: string },
) => Promise<GuardCheck>;

/**
 * Budget set aside for one call in flight. Settle it once: `commit(actual)` spends the actual cost (an
 * actual cost beyond what the budget has left is spent all the same and comes back as a
 * `budget_overrun` denial), `release()` gives the amount back. Later calls return the first answer; a
 * refused actual cost can be given again.
 */
export class BudgetReservation {
  readonly planId: string;
  readonly id: string;
  /** The amount set aside, in units. */
  readonly amount: number;
  /** The reservation check: `budget_reserved` when allowed, `budget_blocked` when not. */
  readonly check: GuardCheck;
  /** True when the call may go ahead (`check.allowed`). */
  readonly allowed: boolean;
  /** True when an amount is set aside and must be settled (false for a plan with no guardrails). */
  readonly open: boolean;
  /**
   * When the amount set aside lapses (epoch ms), on the service's clock; null when not open, or for a
   * reservation read from state that recorded no expiry. A commit after it still spends the actual cost.
   */
  readonly expiresAt: number | null;
  /** The model the reservation is for (a model call's), recorded with it and its settlement. */
  readonly model: string | undefined;
  readonly #settle: Settle;
  #settled: Promise<GuardCheck> | undefined;

  /** @internal made by the service's `reserveBudget`; `settle` settles it. */
  static made(
    settle: Settle,
    planId: string,
    id: string,
    micros: number,
    check: GuardCheck,
    open: boolean,
    expiresAt: number | null,
    model?: string,
  ): BudgetReservation {
    return new BudgetReservation(settle, planId, id, micros, check, open, expiresAt, model);
  }

  private constructor(
    settle: Settle,
    planId: string,
    id: string,
    micros: number,
    check: GuardCheck,
    open: boolean,
    expiresAt: number | null,
    model: string | undefined,
  ) {
    this.#settle = settle;
    this.planId = planId;
    this.id = id;
    this.amount = fromMicros(micros);
    this.check = check;
    this.allowed = check.allowed;
    this.open = open;
    this.expiresAt = open ? expiresAt : null;
    this.model = model;
  }

  /**
   * Spends `actual` (units, >= 0) in place of the amount reserved. `note`, when given, is recorded with
   * the commit: why it spends what it spends (an estimate charged for a call cut short).
   */
  commit(actual: number, options: { note?: string } = {}): Promise<GuardCheck> {
    if (this.#settled) return this.#settled;
    try {
      toMicros(actual, 'actual', 'up'); // a bad amount is refused before anything is settled
      textOption(options, 'note');
    } catch (error) {
      return Promise.reject(error);
    }
    this.#settled = this.#settleOnce(actual, options);
    return this.#settled;
  }

  /**
   * Gives the reserved amount back unspent. `error`, the failure of the call, as text, is recorded with
   * the release (as much of its end as the audit entry's details limit lets).
   */
  release(options: { error?: string } = {}): Promise<GuardCheck> {
    if (this.#settled) return this.#settled;
    try {
      textOption(options, 'error'); // refused before anything is settled, so a release can be given again
    } catch (error) {
      return Promise.reject(error);
    }
    this.#settled = this.#settleOnce(null, options);
    return this.#settled;
  }

  #settleOnce(actual: number | null, options: { error?: string; note?: string } = {}): Promise<GuardCheck> {
    if (!this.open) return Promise.resolve(this.check);
    // A settle the store refused stays refused for this handle: settle again through a new reserveBudget
    // with the same id, which finds the reservation still open.
    const model = this.model;
    return this.#settle(this.planId, this.id, actual, model === undefined ? options : { ...options, model });
  }
}

const ONLY = { note: ['note'], error: ['error'] } as const;

/**
 * The text `options[key]` gives (a settlement's note, a failure's error), well-formed, or undefined;
 * throws GuardrailValidationError for keys not `allowed` (`key` alone unless told) or a value that is
 * not a string.
 */
export function textOption(
  options: unknown,
  key: 'note' | 'error',
  allowed: readonly string[] = ONLY[key],
): string | undefined {
  const text = objectWithKeys(options, 'options', allowed)[key];
  if (text === undefined) return undefined;
  if (typeof text !== 'string') invalid(`options.${key}`, 'a string', text);
  return toWellFormed(text);
}
