// A reference model of spend caps across plans, for the property tests: what every window and every
// plan budget should hold after each operation, written as plainly as possible so that the service can
// be compared with it. Amounts are integer micro-units; a hold whose expiry is <= now is gone.

/** A cap on one label: `value` is the value a plan must have, or '*' for one window per value. */
export interface ModelCap {
  readonly id: string;
  readonly label: 'team' | 'user';
  readonly value: string;
  readonly window: 'day' | 'lifetime';
  readonly alertPpm: readonly number[];
  limitMicros: number;
}

export interface ModelPlan {
  readonly id: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly budgetMicros: number | null;
}

interface Hold {
  readonly micros: number;
  readonly expiresAt: number;
}

/** A window as the model keeps it: the key is `cap\nscope\nwindow`, as the stores' refKey. */
export interface ModelWindow {
  spent: number;
  readonly holds: Map<string, Hold>;
  alertedPpm: number;
}

/** A reservation the service allowed and the test has not settled yet. */
export interface ModelReservation {
  readonly plan: string;
  readonly id: string;
  readonly micros: number;
  readonly expiresAt: number;
  /** The windows it holds its amount in (refKeys). */
  readonly refs: readonly string[];
}

/** A `budget_cap_alert` the model expects in a plan's trail. */
export interface ModelAlert {
  readonly plan: string;
  readonly cap: string;
  readonly scope: string;
  readonly window: string;
  readonly ppm: number;
}

/** What the model answers a check or a reservation: allowed, or refused by the plan budget or a cap. */
export type Verdict =
  | { readonly kind: 'allowed'; readonly refs: readonly string[] }
  | { readonly kind: 'plan' }
  | { readonly kind: 'cap'; readonly cap: string };

interface Slot {
  readonly cap: ModelCap;
  readonly key: string;
}

export class CapModel {
  readonly caps: ModelCap[];
  readonly plans: ModelPlan[];
  readonly windows = new Map<string, ModelWindow>();
  readonly alerts: ModelAlert[] = [];
  readonly #planSpent = new Map<string, number>();
  readonly #planHolds = new Map<string, Map<string, Hold>>();

  constructor(caps: ModelCap[], plans: ModelPlan[]) {
    this.caps = [...caps].sort((a, b) => (a.id < b.id ? -1 : 1));
    this.plans = plans;
    for (const p of plans) {
      this.#planSpent.set(p.id, 0);
      this.#planHolds.set(p.id, new Map());
    }
  }

  /** The windows of the caps that apply to `plan` at `now`, in cap id order. */
  slots(planId: string, now: number): Slot[] {
    const plan = this.#plan(planId);
    const out: Slot[] = [];
    for (const cap of this.caps) {
      const value = plan.labels[cap.label];
      if (value === undefined || (cap.value !== '*' && cap.value !== value)) continue;
      const scope = JSON.stringify({ [cap.label]: value });
      const window =
        cap.window === 'lifetime' ? 'lifetime' : `day:${new Date(now).toISOString().slice(0, 10)}`;
      out.push({ cap, key: `${cap.id}\n${scope}\n${window}` });
    }
    return out;
  }

  capOf(key: string): ModelCap {
    const id = key.split('\n')[0];
    const cap = this.caps.find((c) => c.id === id);
    if (!cap) throw new Error(`no cap ${id}`);
    return cap;
  }

  /** Spent plus the live holds of a window at `now`. */
  used(key: string, now: number): number {
    const w = this.windows.get(key);
    return w === undefined ? 0 : w.spent + live(w.holds, now);
  }

  /** The verdict on taking `micros` for `planId` at `now`, changing nothing. */
  verdict(planId: string, micros: number, now: number): Verdict {
    const plan = this.#plan(planId);
    const planUsed = this.planSpent(planId) + live(this.#holdsOf(planId), now);
    if (plan.budgetMicros !== null && planUsed + micros > plan.budgetMicros) return { kind: 'plan' };
    const slots = this.slots(planId, now);
    for (const s of slots) {
      if (this.used(s.key, now) + micros > s.cap.limitMicros) return { kind: 'cap', cap: s.cap.id };
    }
    return { kind: 'allowed', refs: slots.map((s) => s.key) };
  }

  /** A spend at once (checkToolBudget): what the service answers, and its effect when allowed. */
  check(planId: string, micros: number, now: number): Verdict {
    const v = this.verdict(planId, micros, now);
    if (v.kind !== 'allowed') return v;
    this.#planSpent.set(planId, this.planSpent(planId) + micros);
    for (const key of v.refs) this.#write(planId, key, now, (w) => (w.spent += micros));
    return v;
  }

  /** A reservation: held in the plan and in every window that applies when allowed. */
  reserve(planId: string, id: string, micros: number, now: number, expiresAt: number): Verdict {
    const v = this.verdict(planId, micros, now);
    if (v.kind !== 'allowed') return v;
    const hold = { micros, expiresAt };
    this.#holdsOf(planId).set(id, hold);
    // A hold spends nothing, so it crosses no alert fraction (one a lowered limit made due waits).
    for (const key of v.refs) {
      this.#write(planId, key, now, (w) => w.holds.set(`${planId}\n${id}`, hold), false);
    }
    return v;
  }

  /**
   * Settles `r` at `actual` (null: released) at `now`: answers whether the plan's spend then passes its
   * budget (an overrun). A live reservation settles in its own windows; a lapsed one held nothing any
   * more, and its actual cost goes to the windows of now.
   */
  settle(r: ModelReservation, actual: number | null, now: number): boolean {
    const holds = this.#holdsOf(r.plan);
    const lapsed = r.expiresAt <= now;
    holds.delete(r.id);
    const hold = `${r.plan}\n${r.id}`;
    if (!lapsed) {
      for (const key of r.refs) {
        this.#write(r.plan, key, now, (w) => {
          w.holds.delete(hold);
          w.spent += actual ?? 0;
        });
      }
    } else if (actual !== null && actual > 0) {
      for (const s of this.slots(r.plan, now)) this.#write(r.plan, s.key, now, (w) => (w.spent += actual));
    }
    if (actual === null) return false;
    const spent = this.planSpent(r.plan) + actual;
    this.#planSpent.set(r.plan, spent);
    const budget = this.#plan(r.plan).budgetMicros;
    return budget !== null && spent + live(holds, now) > budget;
  }

  planSpent(planId: string): number {
    return this.#planSpent.get(planId) ?? 0;
  }

  /** The live holds of a window at `now`, by key. */
  liveHolds(key: string, now: number): Map<string, Hold> {
    const out = new Map<string, Hold>();
    for (const [k, h] of this.windows.get(key)?.holds ?? []) if (h.expiresAt > now) out.set(k, h);
    return out;
  }

  /**
   * A write of window `key` by an update of `planId`: lapsed holds go, `change` applies, and the highest
   * alert fraction its spend reached that was not recorded yet is recorded (and expected in the trail),
   * unless `alerting` is false.
   */
  #write(planId: string, key: string, now: number, change: (w: ModelWindow) => void, alerting = true): void {
    const w = this.windows.get(key) ?? { spent: 0, holds: new Map(), alertedPpm: 0 };
    for (const [k, h] of w.holds) if (h.expiresAt <= now) w.holds.delete(k);
    change(w);
    this.windows.set(key, w);
    if (!alerting) return;
    const cap = this.capOf(key);
    let crossed = 0;
    for (const ppm of cap.alertPpm) {
      if (ppm > w.alertedPpm && BigInt(w.spent) * 1_000_000n >= BigInt(ppm) * BigInt(cap.limitMicros)) {
        crossed = ppm;
      }
    }
    if (crossed === 0) return;
    w.alertedPpm = crossed;
    const [, scope, window] = key.split('\n') as [string, string, string];
    this.alerts.push({ plan: planId, cap: cap.id, scope, window, ppm: crossed });
  }

  #plan(planId: string): ModelPlan {
    const plan = this.plans.find((p) => p.id === planId);
    if (!plan) throw new Error(`no plan ${planId}`);
    return plan;
  }

  #holdsOf(planId: string): Map<string, Hold> {
    return this.#planHolds.get(planId) as Map<string, Hold>;
  }
}

function live(holds: ReadonlyMap<string, Hold>, now: number): number {
  let sum = 0;
  for (const h of holds.values()) if (h.expiresAt > now) sum += h.micros;
  return sum;
}
