import type { AuditEntry } from '../audit/AuditEntry.js';
import { GuardrailEventType as E } from '../events.js';
import { makeCheck, type GuardCheck } from '../GuardCheck.js';
import { scopeText } from '../guardrails/caps.js';
import {
  alertCrossed,
  holdIn,
  settleIn,
  spendIn,
  windowCovers,
  windowHasRoom,
  type CapRef,
  type CapWindowState,
} from '../guardrails/capLedger.js';
import { formatIso } from '../iso.js';
import type { JsonValue } from '../json.js';
import { fromMicros } from '../money.js';
import type { AppliedCap, CapView, CapWrite, PlanChange, PlanChangeFn } from '../store/GuardrailStore.js';
import type { ServiceCore } from './core.js';

// The rule of spend caps, written once for every store: an amount is taken from every cap that applies
// or from none, a hold is settled in the window it was made in, and crossing an alert fraction is
// recorded once per window.

/** A cap's alert fraction reached in a window: what `budget_cap_alert` records and `onBudgetAlert` gets. */
export interface BudgetAlert {
  readonly planId: string;
  readonly cap: string;
  /** The labels the cap matched, e.g. `{ team: 'ml' }`. */
  readonly labels: Readonly<Record<string, string>>;
  readonly window: string;
  /** The fraction of the limit reached (one of the cap's `alert_at`). */
  readonly fraction: number;
  readonly limit: number;
  readonly spent: number;
  readonly reserved: number;
  /** When the window ends (ISO-8601), or null for a lifetime cap. */
  readonly resetsAt: string | null;
}

/** What taking an amount from the caps writes: the windows' new states and the refs the amount is held in. */
export interface CapsTaken {
  readonly writes: CapWrite[];
  readonly refs: CapRef[];
  readonly alerts: BudgetAlert[];
}

const NOTHING: CapsTaken = Object.freeze({ writes: [], refs: [], alerts: [] }) as CapsTaken;

/** A hold to make in each window: the plan's reservation, and when it lapses. */
export interface HoldOf {
  readonly key: string;
  readonly expiresAt: number;
}

/**
 * Takes `micros` from every cap of `view` that applies: held for `hold`, or spent when null. Answers the
 * first cap (in id order) that cannot cover it, taking nothing, or what to write.
 */
export function takeFromCaps(
  view: CapView | null,
  planId: string,
  micros: number,
  hold: HoldOf | null,
): { readonly blocked: AppliedCap } | CapsTaken {
  if (view === null || view.applying.length === 0) return NOTHING;
  for (const a of view.applying) {
    if (!windowCovers(a.state, a.cap.limitMicros, micros) || (hold !== null && !windowHasRoom(a.state))) {
      return { blocked: a };
    }
  }
  const taken: CapsTaken = { writes: [], refs: [], alerts: [] };
  for (const a of view.applying) {
    if (hold === null) {
      add(taken, planId, a, spendIn(a.state, micros));
      continue;
    }
    // A hold spends nothing, so it crosses no alert fraction. Weighing one here would mark an alert that
    // a lowered limit made due as recorded, while a reservation records no alert entry and tells no
    // hook: the alert would be lost for the window. The next spend, commit or release records it.
    taken.writes.push({ ref: a.ref, state: holdIn(a.state, hold.key, micros, hold.expiresAt) });
    taken.refs.push(a.ref);
  }
  return taken;
}

/**
 * Settles a reservation in the caps: in each window of `refs` (the reservation's) its hold is given
 * back and `actual` spent. A reservation that lapsed has no refs left (null): its actual cost is spent
 * in the windows of the caps that apply now, since the work was done.
 */
export function settleInCaps(
  view: CapView | null,
  planId: string,
  refs: readonly CapRef[] | null,
  key: string,
  actual: number | null,
): CapsTaken {
  if (view === null) return NOTHING;
  if (refs === null) {
    if (actual === null || actual === 0) return NOTHING;
    const taken: CapsTaken = { writes: [], refs: [], alerts: [] };
    for (const a of view.applying) add(taken, planId, a, spendIn(a.state, actual));
    return taken;
  }
  const taken: CapsTaken = { writes: [], refs: [], alerts: [] };
  for (const ref of refs) {
    const state = view.state(ref);
    // A cap removed since keeps nothing to settle.
    if (state === undefined) continue;
    const applied = view.applying.find((a) => sameRef(a.ref, ref));
    const cap = applied?.cap ?? view.capOf(ref.cap);
    const next = settleIn(state, key, actual);
    if (cap === undefined) taken.writes.push({ ref, state: next });
    else
      add(
        taken,
        planId,
        { cap, ref, state, span: { key: ref.window, startMs: state.startMs, endMs: state.endMs } },
        next,
      );
  }
  return taken;
}

function sameRef(a: CapRef, b: CapRef): boolean {
  return a.cap === b.cap && a.scope === b.scope && a.window === b.window;
}

/** Adds a window's new state, and the alert its spending crossed, if any (then marked as recorded). */
function add(taken: CapsTaken, planId: string, a: AppliedCap, state: CapWindowState): void {
  const ppm = alertCrossed(a.cap.alertAt.map(toPpm), a.cap.limitMicros, state);
  const next = ppm === null ? state : { ...state, alertedPpm: ppm };
  taken.writes.push({ ref: a.ref, state: next });
  taken.refs.push(a.ref);
  if (ppm === null) return;
  taken.alerts.push(
    Object.freeze({
      planId,
      cap: a.cap.id,
      labels: Object.freeze(JSON.parse(a.ref.scope) as Record<string, string>),
      window: a.ref.window,
      fraction: ppm / 1_000_000,
      limit: a.cap.limit,
      spent: fromMicros(next.spentMicros),
      reserved: fromMicros(next.reservedMicros),
      resetsAt: next.endMs === null ? null : formatIso(next.endMs),
    }),
  );
}

const toPpm = (fraction: number): number => Math.round(fraction * 1_000_000);

/** The denial of an amount a cap cannot cover, and the details its audit entry records. */
export function capBlocked(
  a: AppliedCap,
  micros: number,
): { readonly check: GuardCheck; readonly details: Record<string, JsonValue> } {
  const resetsAt = a.span.endMs === null ? null : formatIso(a.span.endMs);
  const spent = fromMicros(a.state.spentMicros);
  const reserved = fromMicros(a.state.reservedMicros);
  const amount = fromMicros(micros);
  const reason =
    `spend cap "${a.cap.id}" (${scopeText(a.ref.scope)}, ${a.ref.window}) cannot cover ${amount}: ` +
    `${spent} spent and ${reserved} reserved of its limit ${a.cap.limit}` +
    (resetsAt === null ? '' : `; it resets at ${resetsAt}`);
  const check = makeCheck(E.BUDGET_CAP_BLOCKED, reason, a.cap.limit, amount);
  const details: Record<string, JsonValue> = {
    cap: a.cap.id,
    labels: JSON.parse(a.ref.scope) as Record<string, string>,
    window: a.ref.window,
    amount,
    limit: a.cap.limit,
    spent,
    reserved,
    resets_at: resetsAt,
  };
  return { check, details };
}

/** The `budget_cap_alert` entries of `alerts`, at `now`. */
export function alertEntries(core: ServiceCore, alerts: readonly BudgetAlert[], now: number): AuditEntry[] {
  return alerts.map((alert) => {
    const check = makeCheck(
      E.BUDGET_CAP_ALERT,
      `spend cap "${alert.cap}" reached ${alert.fraction * 100}% of its limit ${alert.limit}`,
      alert.limit,
      alert.spent,
    );
    return core.entry(check, alertDetails(alert), now);
  });
}

/**
 * The alerts an update's change crossed, for the service's `onBudgetAlert` once it has committed. A
 * store may run a change more than once (deciding again after another writer): only the last run counts.
 */
export class Alerts {
  #alerts: readonly BudgetAlert[] = [];

  constructor(readonly core: ServiceCore) {}

  /** `change`, forgetting what an earlier run of it crossed. */
  changing<T>(change: PlanChangeFn<T>): PlanChangeFn<T> {
    return (g, approval, caps) => {
      this.#alerts = [];
      return change(g, approval, caps);
    };
  }

  /** `change` with the cap windows of `taken` and the `budget_cap_alert` entries of what it crossed. */
  with<T>(change: PlanChange<T>, taken: CapsTaken, now: number): PlanChange<T> {
    if (taken.writes.length === 0) return change;
    this.#alerts = taken.alerts;
    if (taken.alerts.length === 0) return { ...change, caps: taken.writes };
    const entries = alertEntries(this.core, taken.alerts, now);
    return { ...change, caps: taken.writes, entries: [...(change.entries ?? []), ...entries] };
  }

  /** `pending`, telling `onBudgetAlert` of the alerts, and queuing their notifications, once it has resolved. */
  after<T>(pending: Promise<T>): Promise<T> {
    return pending.then(async (result) => {
      if (this.#alerts.length > 0) await this.core.budgetAlerts(this.#alerts);
      return result;
    });
  }
}

/** A spend cap's alert as its audit entry records it, and as notifications carry it (with the plan). */
export function alertDetails(alert: BudgetAlert): Record<string, JsonValue> {
  return {
    cap: alert.cap,
    labels: { ...alert.labels },
    window: alert.window,
    fraction: alert.fraction,
    limit: alert.limit,
    spent: alert.spent,
    reserved: alert.reserved,
    resets_at: alert.resetsAt,
  };
}
