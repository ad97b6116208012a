import { randomUUID } from 'node:crypto';
import {
  errorTail,
  GuardrailError,
  invalid,
  isGuardrailValidationError,
  isGuardrailViolationError,
} from '../errors.js';
import { validRuntimeKey } from '../guardrails/AutonomyGuardrails.js';
import { GuardrailEventType as E } from '../events.js';
import type { GuardCheck } from '../GuardCheck.js';
import { objectWithKeys } from '../guardrails/validate.js';
import { fromMicros } from '../money.js';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import type { BudgetReservation } from '../service/BudgetReservation.js';
import type { ModelCallSpan } from '../telemetry/spans.js';
import {
  estimateCostMicros,
  FREE_RATES,
  pricesFrom,
  usageCostMicros,
  type ModelPrices,
  type ModelRates,
  type TokenEstimate,
  type TokenUsage,
} from './prices.js';

/** What to do with a model the price table does not list, while the plan has a budget. */
export type UnpricedModels = 'deny' | 'allow';

/** A model call about to start: the model, and the most it may use. */
export interface ModelCallStart {
  readonly modelId: string;
  readonly estimate: TokenEstimate;
  /**
   * Names the call's budget reservation (as `model:<callId>`); default a new random id. One id is one
   * call: a guard refuses the id of a call it has open (GuardrailValidationError naming `callId`).
   */
  readonly callId?: string;
}

/** What a model call's `run` is handed. */
export interface ModelCallContext {
  /** Aborts when the plan's wall-clock limit runs out while the call runs. */
  readonly signal: AbortSignal;
}

/** A model call to meter and run; `run` reports what the call used. */
export interface ModelCallRequest<T> extends ModelCallStart {
  readonly run: (
    ctx: ModelCallContext,
  ) => Promise<{ output: T; usage: TokenUsage }> | { output: T; usage: TokenUsage };
}

/** How a metered call was settled: what it cost and the budget's answer (`budget_overrun` past it). */
export interface ModelCallSettled {
  readonly cost: number;
  readonly check: GuardCheck;
}

export interface ModelCallDone<T> extends ModelCallSettled {
  readonly allowed: true;
  readonly output: T;
  readonly usage: TokenUsage;
}

const ABANDONED =
  'the stream was cancelled before its finish: the reserved estimate is charged, since the provider may have billed it';

/**
 * A model call in flight (a stream) with its estimate set aside: settle it once, with `commit(usage)` at
 * its finish, `release()` when it failed before anything was billed, or `abandon()` when it was cancelled
 * before its finish, which charges the estimate (and says so in the audit entry). Later calls return the
 * first answer.
 */
export class ModelCallHandle {
  readonly modelId: string;
  /** The amount set aside, in units. */
  readonly reserved: number;
  readonly #reservation: BudgetReservation;
  readonly #rates: ModelRates | null;
  readonly #onSettled: () => void;
  #settled: Promise<ModelCallSettled> | undefined;
  /** The call's span, told how it was settled: set only when the service has telemetry. */
  #span: ModelCallSpan | undefined;

  /** @internal made by {@link RunGuard.openModelCall}; `onSettled` runs once the call is settled. */
  static made(
    modelId: string,
    reservation: BudgetReservation,
    rates: ModelRates | null,
    onSettled: () => void = () => undefined,
  ): ModelCallHandle {
    return new ModelCallHandle(modelId, reservation, rates, onSettled);
  }

  private constructor(
    modelId: string,
    reservation: BudgetReservation,
    rates: ModelRates | null,
    onSettled: () => void,
  ) {
    this.modelId = modelId;
    this.reserved = reservation.amount;
    this.#reservation = reservation;
    this.#rates = rates;
    this.#onSettled = onSettled;
  }

  /** @internal tells `span` how the call is settled, and ends it then when leash started it. */
  trace(span: ModelCallSpan): void {
    this.#span = span;
  }

  /**
   * Spends what `usage` costs at the model's price (nothing for an unpriced model). A usage that cannot
   * be priced charges the estimate, as `abandon()` does, and rejects with its GuardrailValidationError.
   * Rejects with `RESERVATION_NOT_OPEN` when the reservation was settled already (by another handle of
   * its id).
   */
  commit(usage: TokenUsage): Promise<ModelCallSettled> {
    if (this.#settled) return this.#settled;
    let cost: number;
    try {
      cost = this.#rates === null ? 0 : fromMicros(usageCostMicros(this.#rates, usage));
    } catch (error) {
      // A usage that cannot be priced leaves what the call was allowed: the estimate is charged.
      return this.abandon().then(() => Promise.reject(error));
    }
    return this.#settle(cost, this.#reservation.commit(cost), true, usage);
  }

  /** Gives the estimate back: the call failed and nothing was billed. `error` is recorded with it. */
  release(options: { error?: string } = {}): Promise<ModelCallSettled> {
    return (
      this.#settled ?? this.#settle(0, this.#reservation.release(options), false, undefined, options?.error)
    );
  }

  /** Charges the estimate for a stream cancelled before its finish, saying so in the audit entry. */
  abandon(): Promise<ModelCallSettled> {
    return (
      this.#settled ??
      this.#settle(this.reserved, this.#reservation.commit(this.reserved, { note: ABANDONED }))
    );
  }

  /** `usage` the call reported, `error` the failure it was released for: told to its span. */
  #settle(
    cost: number,
    settling: Promise<GuardCheck>,
    spends = true,
    usage?: TokenUsage,
    error?: string,
  ): Promise<ModelCallSettled> {
    const settled = settling.then((check) => {
      this.#onSettled();
      // A commit the service answers with a release found nothing open: nothing was spent for this call.
      if (spends && check.eventType === E.BUDGET_RELEASED) {
        throw new GuardrailError(
          'RESERVATION_NOT_OPEN',
          `model call reservation "${this.#reservation.id}" was not open: ${check.reason}`,
        );
      }
      this.#span?.settled(usage, cost, error);
      return Object.freeze({ cost, check });
    });
    // Options the reservation refused settled nothing: the call can be settled again.
    settled.catch((reason: unknown) => {
      if (isGuardrailValidationError(reason) && this.#settled === settled) this.#settled = undefined;
      else this.#span?.threw(reason);
    });
    this.#settled = settled;
    return settled;
  }
}

/**
 * Checks a model call's request, claims its id in `open` (the ids of calls open, given up once settled),
 * asks `gate` (the wall clock), and sets its estimate aside: returns the handle with the gate's answer, or
 * the check that refused (the gate's, or `budget_blocked`: also for a model with no price while the plan
 * has a budget, unless `unpriced` is `allow`). Throws GuardrailValidationError for an id already open;
 * `unconfigured` is called for a plan with no guardrails, and may throw to refuse the call.
 */
export async function openModelCall(
  service: AutonomyGuardrailService,
  planId: string,
  prices: ModelPrices,
  unpriced: UnpricedModels,
  start: ModelCallStart,
  gate: () => Promise<GuardCheck>,
  open: Set<string>,
  onSettled: () => void,
  unconfigured: () => void,
): Promise<{ handle: ModelCallHandle; gate: GuardCheck; rates: ModelRates | null } | { denied: GuardCheck }> {
  const s = objectWithKeys(start, 'request', ['modelId', 'estimate', 'callId', 'run']);
  const modelId = validRuntimeKey(s['modelId'], 'modelId');
  const rates = prices.get(modelId) ?? null;
  // An unpriced model's estimate is checked all the same, and costs nothing.
  const micros = estimateCostMicros(rates ?? FREE_RATES, s['estimate'] as TokenEstimate);
  const given = s['callId'] === undefined ? randomUUID() : validRuntimeKey(s['callId'], 'callId');
  // Two calls with one id would share one reservation and the second would never be charged.
  if (open.has(given)) invalid('callId', 'the id of no model call still open', given);
  open.add(given);
  const forget = (): void => {
    open.delete(given);
    onSettled();
  };
  try {
    // Asked once the request is known good, so a bad one leaves nothing in the audit log.
    const passed = await gate();
    let refused: GuardCheck | null = passed.allowed ? null : passed;
    if (refused === null && rates === null && unpriced === 'deny') {
      const priced = await service.checkUnpricedModel(planId, modelId, { pricesFrom: pricesFrom(prices) });
      if (!priced.allowed) refused = priced;
    }
    if (refused !== null) {
      forget();
      return { denied: refused };
    }
    const reservationId = `model:${given}`;
    const reservation = await service.reserveBudget(planId, fromMicros(micros), {
      reservationId,
      model: modelId,
    });
    if (!reservation.allowed) {
      forget();
      return { denied: reservation.check };
    }
    // Allowed with nothing set aside: the plan has no guardrails.
    if (!reservation.open) unconfigured();
    return { handle: ModelCallHandle.made(modelId, reservation, rates, forget), gate: passed, rates };
  } catch (error) {
    forget();
    throw error;
  }
}

/**
 * Runs a metered model call on its handle: commits its usage, or gives the estimate back when it throws.
 * When `expired` rejects first (the wall clock ran out, or could not be read: `ctx.signal` aborted) the
 * call is no longer waited for, its estimate is charged as for an abandoned stream, and the rejection is
 * passed on.
 */
export async function runModelCall<T>(
  handle: ModelCallHandle,
  run: ModelCallRequest<T>['run'],
  ctx: ModelCallContext,
  expired?: Promise<never>,
): Promise<ModelCallDone<T>> {
  let result: { output: T; usage: TokenUsage };
  try {
    const running = Promise.resolve().then(() => run(ctx));
    result = await (expired ? Promise.race([running, expired]) : running);
  } catch (error) {
    if (isGuardrailViolationError(error)) await handle.abandon();
    // Cut short because the wall clock could not be read: the call may still run, so its estimate is
    // charged as far as the store lets it be, and the store's error passed on.
    else if (ctx.signal.aborted) await handle.abandon().catch(() => undefined);
    else await handle.release({ error: errorTail(error) });
    throw error;
  }
  if (typeof result !== 'object' || result === null) {
    // The call ran and may have been billed, but says nothing of it: its estimate is charged.
    await handle.abandon();
    invalid('run', 'a function that resolves { output, usage }', result);
  }
  const settled = await handle.commit(result.usage);
  return Object.freeze({ allowed: true as const, output: result.output, usage: result.usage, ...settled });
}
