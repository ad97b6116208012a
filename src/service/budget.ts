import { validRuntimeKey, type AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';
import { GuardrailEventType as E } from '../events.js';
import { makeCheck, type GuardCheck, type Reason } from '../GuardCheck.js';
import { invalid } from '../errors.js';
import { validatePlanId } from '../ids.js';
import { optionField } from '../validation.js';
import { isPlainObject, type JsonValue } from '../json.js';
import { fromMicros, toMicros } from '../money.js';
import type { CapView, PlanChange, PlanMutation } from '../store/GuardrailStore.js';
import { holdKey } from '../guardrails/capLedger.js';
import { Alerts, capBlocked, settleInCaps, takeFromCaps } from './caps.js';
import { BudgetReservation, textOption } from './BudgetReservation.js';
import { checkPlan } from './checks.js';
import { checkItself, rejecting, type ServiceCore } from './core.js';
import { expiredDetails, expiring } from './decisions.js';

// The budget: spending at once, reservations for calls in flight and their settlement, and models
// without a price.

const reservedReason: Reason = (c) => `${c.observed} reserved within tool_budget ${c.limit ?? 'unlimited'}`;
const committedReason: Reason = (c, after) =>
  `actual cost ${c.observed} committed: ${fromMicros(after as number)} of tool_budget ${c.limit ?? 'unlimited'}`;
const overrunReason: Reason = (c, after) =>
  `actual cost ${c.observed} brought spending to ${fromMicros(after as number)}, over tool_budget ${c.limit}`;
const unpricedUnmetered: Reason = (_c, model) =>
  `model "${model}" has no price and the plan no budget: it runs unmetered`;
const unpricedBlocked: Reason = (_c, model) =>
  `model "${model}" has no price while the plan has a budget: add models.${model} (input, output and cached_input per million tokens) to the policy, or set unpriced_models: allow`;
const unpricedInOptions: Reason = (_c, model) =>
  `model "${model}" has no price while the plan has a budget: add ${optionField(['models', model])} (input, output and cached_input per million tokens) to the run guard's models option, or set its unpricedModels: 'allow'`;

/** Where the prices of a model call came from: a policy file, or the application's own options. */
export type PricesFrom = 'policy' | 'options';

/** See {@link AutonomyGuardrailService.checkToolBudget}. */
export function checkToolBudget(core: ServiceCore, planId: string, cost: number): Promise<GuardCheck> {
  // Written out, not through checkPlan: the check timed against a rate limiter, without its two closures.
  return core.checking(E.BUDGET_BLOCKED, checkItself, () => {
    validatePlanId(planId);
    const micros = toMicros(cost, 'cost', 'up');
    const now = core.now();
    const alerts = new Alerts(core);
    const checking = core.update(
      planId,
      alerts.changing((stored, _approval, caps): PlanChange<GuardCheck> => {
        if (!stored) return core.unconfigured(E.BUDGET_ALLOWED, E.BUDGET_BLOCKED, planId);
        // Lapsed reservations are given back in this same update, so the check must not count them.
        const expired = stored.expiredReservations(now);
        const g = expired.length === 0 ? stored : stored.withoutExpired(now);
        const verdict = g.checkToolBudgetMicros(micros);
        const taken = verdict.allowed ? takeFromCaps(caps, planId, micros, null) : null;
        if (taken !== null && 'blocked' in taken) {
          const { check, details } = capBlocked(taken.blocked, micros);
          expiredDetails(details, expired);
          return core.audited(check, details, expiring(undefined, expired, now), now);
        }
        const check = verdict;
        const spend = check.allowed && micros > 0;
        const spent = fromMicros(spend ? g.budgetSpentMicros + micros : g.budgetSpentMicros);
        const details: Record<string, JsonValue> = {
          cost: fromMicros(micros),
          spent,
          limit: check.limit ?? null,
        };
        expiredDetails(details, expired);
        const mutation = expiring(spend ? { spendMicros: micros } : undefined, expired, now);
        const change = core.audited(check, details, mutation, now);
        return taken === null ? change : alerts.with(change, taken, now);
      }),
      { capsAt: now },
    );
    return alerts.after(checking);
  });
}

/** See {@link AutonomyGuardrailService.checkUnpricedModel}. */
export function checkUnpricedModel(
  core: ServiceCore,
  planId: string,
  modelId: string,
  options: { readonly pricesFrom?: PricesFrom } = {},
): Promise<GuardCheck> {
  return checkPlan(core, planId, E.BUDGET_ALLOWED, E.BUDGET_BLOCKED, () => {
    const model = validRuntimeKey(modelId, 'modelId');
    const from = isPlainObject(options) ? (options.pricesFrom ?? 'policy') : options;
    if (from !== 'policy' && from !== 'options') invalid('pricesFrom', '"policy" or "options"', from);
    return (g) => {
      const limit = g.toolBudget;
      if (limit === null) return { result: makeCheck(E.BUDGET_ALLOWED, unpricedUnmetered, null, 0, model) };
      if (from === 'policy') {
        const check = makeCheck(E.BUDGET_BLOCKED, unpricedBlocked, limit, 0, model);
        return core.audited(check, { model, policy_key: `models.${model}`, limit });
      }
      const check = makeCheck(E.BUDGET_BLOCKED, unpricedInOptions, limit, 0, model);
      return core.audited(check, { model, option: optionField(['models', model]), limit });
    };
  });
}

/** See {@link AutonomyGuardrailService.reserveBudget}. */
export function reserveBudget(
  core: ServiceCore,
  planId: string,
  amount: number,
  options: { reservationId: string; model?: string },
): Promise<BudgetReservation> {
  return rejecting(() => {
    validatePlanId(planId);
    const micros = toMicros(amount, 'amount', 'up');
    const o = isPlainObject(options) ? options : undefined;
    const id = validRuntimeKey(o?.['reservationId'], 'reservationId');
    const given = o?.['model'];
    const model = given === undefined ? undefined : validRuntimeKey(given, 'model');
    const now = core.now();
    const expiresAt = core.reservationExpiry(now);
    const notOpen = (check: GuardCheck) =>
      BudgetReservation.made(core.settle, planId, id, micros, check, false, null, model);
    const reserving = core.update(
      planId,
      (stored, _approval, caps): PlanChange<BudgetReservation> => {
        if (!stored)
          return { result: notOpen(core.unconfigured(E.BUDGET_ALLOWED, E.BUDGET_BLOCKED, planId).result) };
        return decideReservation(core, stored, planId, id, micros, now, expiresAt, caps, model);
      },
      { capsAt: now },
    );
    return core.deniesUnavailable ? core.orDenied(E.BUDGET_BLOCKED, notOpen, reserving) : reserving;
  });
}

/**
 * The reservation of `micros` under `id` (epoch-ms `expiresAt`) decided from the plan's guardrails: an id
 * already open is answered with the reservation it holds, recording nothing. `model`, the model the call
 * is for when it is a model's, is recorded in the entry's details.
 */
export function decideReservation(
  core: ServiceCore,
  stored: AutonomyGuardrails,
  planId: string,
  id: string,
  micros: number,
  now: number,
  expiresAt: number,
  caps: CapView | null,
  model?: string,
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
    return { result: BudgetReservation.made(core.settle, planId, id, held, check, true, heldUntil, model) };
  }
  const verdict = g.checkToolBudgetMicros(micros);
  const hold = { key: holdKey(planId, id), expiresAt };
  const taken = verdict.allowed ? takeFromCaps(caps, planId, micros, hold) : null;
  if (taken !== null && 'blocked' in taken) {
    const { check, details } = capBlocked(taken.blocked, micros);
    details['reservation_id'] = id;
    if (model !== undefined) details['model'] = model;
    expiredDetails(details, expired);
    const result = BudgetReservation.made(core.settle, planId, id, micros, check, false, expiresAt, model);
    const audit = core.entry(check, details, now);
    const mutation = expiring(undefined, expired, now);
    return mutation ? { result, audit, mutation } : { result, audit };
  }
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
  if (model !== undefined) details['model'] = model;
  expiredDetails(details, expired);
  if (taken !== null && taken.refs.length > 0) details['caps'] = taken.refs.map((r) => r.cap);
  const result = BudgetReservation.made(
    core.settle,
    planId,
    id,
    micros,
    check,
    check.allowed,
    expiresAt,
    model,
  );
  const audit = core.entry(check, details, now);
  if (taken !== null && taken.refs.length > 0) {
    const reserve = { id, micros, expiresAt, caps: taken.refs };
    return {
      result,
      audit,
      mutation: expiring({ reserve }, expired, now) as PlanMutation,
      caps: taken.writes,
    };
  }
  const mutation = expiring(check.allowed ? { reserve: { id, micros, expiresAt } } : undefined, expired, now);
  return mutation ? { result, audit, mutation } : { result, audit };
}

/** The options a settlement takes: a release's error or a commit's note, and the model. */
const SETTLE_KEYS = { error: ['error', 'model'], note: ['note', 'model'] } as const;

/** See {@link AutonomyGuardrailService.settleReservation}. */
export function settleReservation(
  core: ServiceCore,
  planId: string,
  id: string,
  actual: number | null,
  options: { error?: string; note?: string; model?: string } = {},
): Promise<GuardCheck> {
  return rejecting(() => {
    const actualMicros = actual === null ? null : toMicros(actual, 'actual', 'up');
    // A release may say why the call failed; a commit may say why it spends what it spends. Either
    // names the model the reservation was for, when it was a model call's.
    const key = actual === null ? 'error' : 'note';
    const text = textOption(options, key, SETTLE_KEYS[key]);
    const said: Record<string, JsonValue> = text === undefined ? {} : { [key]: text };
    const model = (options as { model?: unknown } | undefined)?.model;
    if (model !== undefined) said['model'] = validRuntimeKey(model, 'options.model');
    const now = core.now();
    const alerts = new Alerts(core);
    const settling = core.update(
      planId,
      alerts.changing((stored, _approval, caps) => {
        const open = stored?.reservationMicros(id);
        // Lapsed reservations are given back in this same update, so the check must not count them.
        const expired = stored?.expiredReservations(now) ?? [];
        const lapsed = open === undefined ? stored?.hasLapsed(id) === true : expired.includes(id);
        if (!stored || (open === undefined && !lapsed)) {
          const reason = `reservation "${id}" is not open (settled already, or never reserved); nothing changed`;
          return { result: makeCheck(E.BUDGET_RELEASED, reason, null) };
        }
        const g = expired.length === 0 ? stored : stored.withoutExpired(now);
        const key = holdKey(planId, id);
        // A lapsed reservation's windows are forgotten with it: its cost goes to the windows of now.
        const refs = lapsed ? null : (stored.runtime.reservations.get(id)?.caps ?? []);
        const taken = settleInCaps(caps, planId, refs, key, actualMicros);
        if (lapsed) {
          return alerts.with(
            settleLapsed(core, g, id, open ?? 0, actualMicros, expired, now, said),
            taken,
            now,
          );
        }
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
          return alerts.with(
            core.audited(check, details, expiring({ release: id }, expired, now), now),
            taken,
            now,
          );
        }
        const budget = g.toolBudgetMicros;
        const after = g.budgetSpentMicros + actualMicros;
        const overrun = budget !== null && after + g.budgetReservedMicros - held > budget;
        const check = spendCheck(g, overrun, actualMicros, after);
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
        return alerts.with(core.audited(check, details, mutation, now), taken, now);
      }),
      { capsAt: now },
    );
    return alerts.after(settling);
  });
}

/**
 * Whether reservation `id` is settled (neither open nor lapsed and waiting for its settlement) and the
 * plan's spend and open reservations are within its budget: the state a settlement that did not overrun
 * leaves. A settlement that overran leaves them over the budget (see settleReservation).
 */
export function settledWithinBudget(g: AutonomyGuardrails, id: string): boolean {
  if (g.reservationMicros(id) !== undefined || g.hasLapsed(id)) return false;
  const budget = g.toolBudgetMicros;
  return budget === null || g.budgetSpentMicros + g.budgetReservedMicros <= budget;
}

/** The check of a commit that spends `actualMicros`, bringing the spend to `after`. */
function spendCheck(
  g: AutonomyGuardrails,
  overrun: boolean,
  actualMicros: number,
  after: number,
): GuardCheck {
  return overrun
    ? makeCheck(E.BUDGET_OVERRUN, overrunReason, g.toolBudget, fromMicros(actualMicros), after)
    : makeCheck(E.BUDGET_COMMITTED, committedReason, g.toolBudget, fromMicros(actualMicros), after);
}

/**
 * Settles a reservation that lapsed: nothing is held for it any more (`g` is without the lapsed ones),
 * but a commit's actual cost is spent all the same, since the work was done. `held` is the amount it
 * held when still in the state (given back by this update), or 0.
 */
function settleLapsed(
  core: ServiceCore,
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
    return core.audited(check, details, expiring({ settleLapsed: id }, expired, now), now);
  }
  const budget = g.toolBudgetMicros;
  const after = g.budgetSpentMicros + actualMicros;
  const overrun = budget !== null && after + g.budgetReservedMicros > budget;
  const check = spendCheck(g, overrun, actualMicros, after);
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
  return core.audited(check, details, mutation, now);
}
