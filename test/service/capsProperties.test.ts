import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AutonomyGuardrailService,
  ManualClock,
  type BudgetReservation,
  type GuardCheck,
  type GuardrailStore,
  type SpendCapInit,
} from '../../src/index.js';
import {
  CapModel,
  type ModelCap,
  type ModelPlan,
  type ModelReservation,
  type Verdict,
} from '../support/capModel.js';
import { LOCAL_STORES, T0 } from '../support/service.js';

// Random interleavings of spends, reservations, commits, releases, lapses, limit changes and day changes,
// run against each local store and against a reference model (test/support/capModel.ts): after every
// command the stored windows must hold exactly what the model holds, and every answer must be the
// model's. Commits are never refused, so a window may pass its limit only through an actual cost above
// the estimate, as with plan budgets.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const TTL = HOUR;
const NUM_RUNS = 100;
const MAX_COMMANDS = 40;

// ---- arbitraries -------------------------------------------------------------------------------------

/** Micro-units up to `max`, often a multiple of 0.1 so that sums meet limits exactly. */
const micros = (max: number): fc.Arbitrary<number> =>
  fc.oneof(
    fc.integer({ min: 0, max }),
    fc.integer({ min: 0, max: Math.floor(max / 100_000) }).map((n) => n * 100_000),
  );

const capOf = (id: string, label: 'team' | 'user', value: string): fc.Arbitrary<ModelCap> =>
  fc.record({
    id: fc.constant(id),
    label: fc.constant(label),
    value: fc.constant(value),
    window: fc.constantFrom('day' as const, 'lifetime' as const),
    alertPpm: fc.subarray([250_000, 500_000, 800_000, 1_000_000]),
    limitMicros: micros(3_000_000),
  });

/** A team cap, a cap per user ('*'), or both. */
const capsArb: fc.Arbitrary<ModelCap[]> = fc
  .tuple(fc.option(capOf('team-ml', 'team', 'ml')), fc.option(capOf('per-user', 'user', '*')))
  .map((pair) => pair.filter((c): c is ModelCap => c !== null))
  .filter((caps) => caps.length > 0);

const plansArb: fc.Arbitrary<ModelPlan[]> = fc
  .array(
    fc.record({
      team: fc.constantFrom(undefined, 'ml', 'web'),
      user: fc.constantFrom(undefined, 'ann', 'bob'),
      budgetMicros: fc.option(micros(5_000_000), { nil: null }),
    }),
    { minLength: 2, maxLength: 4 },
  )
  .map((plans) =>
    plans.map(({ team, user, budgetMicros }, i) => {
      const labels: Record<string, string> = {};
      if (team !== undefined) labels['team'] = team;
      if (user !== undefined) labels['user'] = user;
      return { id: `p${i}`, labels, budgetMicros };
    }),
  );

type Command =
  | { op: 'reserve'; plan: number; micros: number }
  | { op: 'commit'; pick: number; actual: { pct: number } | { micros: number } }
  | { op: 'release'; pick: number }
  | { op: 'check'; plan: number; micros: number }
  | { op: 'advance'; ms: number }
  | { op: 'limit'; cap: number; micros: number }
  | { op: 'nextDay'; offset: number };

const commandArb: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ op: fc.constant('reserve' as const), plan: fc.nat(3), micros: micros(1_500_000) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('commit' as const),
      pick: fc.nat(7),
      actual: fc.oneof(
        fc.record({ pct: fc.integer({ min: 0, max: 200 }) }),
        fc.record({ micros: micros(1_500_000) }),
      ),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('release' as const), pick: fc.nat(7) }) },
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant('check' as const), plan: fc.nat(3), micros: micros(1_500_000) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('advance' as const),
      ms: fc.constantFrom(1, 60_000, TTL - 1, TTL, TTL + 1, 5 * HOUR),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('limit' as const), cap: fc.nat(1), micros: micros(3_000_000) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('nextDay' as const), offset: fc.constantFrom(0, 1, HOUR) }),
  },
);

// ---- running -------------------------------------------------------------------------------------------

interface Run {
  readonly store: GuardrailStore;
  readonly service: AutonomyGuardrailService;
  readonly clock: ManualClock;
  readonly model: CapModel;
  /** Allowed reservations not settled yet, with their handles. */
  readonly open: (ModelReservation & { readonly handle: BudgetReservation })[];
  next: number;
}

const capInit = (c: ModelCap): SpendCapInit => ({
  id: c.id,
  match: { [c.label]: c.value },
  limit: c.limitMicros / 1_000_000,
  window: c.window,
  alertAt: c.alertPpm.map((ppm) => ppm / 1_000_000),
});

async function start(
  makeStore: () => Promise<GuardrailStore>,
  caps: ModelCap[],
  plans: ModelPlan[],
): Promise<Run> {
  const store = await makeStore();
  const clock = new ManualClock(T0);
  const service = new AutonomyGuardrailService({ store, clock, reservationTtlMs: TTL });
  await service.installSpendCaps(caps.map(capInit));
  for (const p of plans) {
    const toolBudget = p.budgetMicros === null ? null : p.budgetMicros / 1_000_000;
    await service.configureGuardrails(p.id, { toolBudget, labels: p.labels });
  }
  return {
    store,
    service,
    clock,
    model: new CapModel(
      caps.map((c) => ({ ...c })),
      plans,
    ),
    open: [],
    next: 0,
  };
}

/** The service's answer is the model's: allowed as `allowedEvent`, or refused by the plan or the cap named. */
function expectVerdict(check: GuardCheck, verdict: Verdict, allowedEvent: string): void {
  if (verdict.kind === 'allowed') expect(check.eventType).toBe(allowedEvent);
  else if (verdict.kind === 'plan') expect(check.eventType).toBe('budget_blocked');
  else {
    expect(check.eventType).toBe('budget_cap_blocked');
    expect(check.reason).toMatch(new RegExp(`^spend cap "${verdict.cap}"`));
  }
}

async function step(run: Run, c: Command): Promise<void> {
  const { service, clock, model, open } = run;
  const now = clock.now();
  const plans = model.plans;
  switch (c.op) {
    case 'reserve': {
      const plan = (plans[c.plan % plans.length] as ModelPlan).id;
      const id = `r${run.next++}`;
      const expected = model.reserve(plan, id, c.micros, now, now + TTL);
      const handle = await service.reserveBudget(plan, c.micros / 1_000_000, { reservationId: id });
      expectVerdict(handle.check, expected, 'budget_reserved');
      if (expected.kind !== 'allowed') return;
      open.push({ plan, id, micros: c.micros, expiresAt: now + TTL, refs: expected.refs, handle });
      await expectWithinLimits(run, expected.refs);
      return;
    }
    case 'check': {
      const plan = (plans[c.plan % plans.length] as ModelPlan).id;
      const expected = model.check(plan, c.micros, now);
      expectVerdict(await service.checkToolBudget(plan, c.micros / 1_000_000), expected, 'budget_allowed');
      if (expected.kind === 'allowed') await expectWithinLimits(run, expected.refs);
      return;
    }
    case 'commit':
    case 'release': {
      if (open.length === 0) return;
      const [r] = open.splice(c.pick % open.length, 1) as [(typeof open)[number]];
      const actual =
        c.op === 'release'
          ? null
          : 'pct' in c.actual
            ? Math.floor((r.micros * c.actual.pct) / 100)
            : c.actual.micros;
      const overrun = model.settle(r, actual, now);
      const check = actual === null ? await r.handle.release() : await r.handle.commit(actual / 1_000_000);
      const event = actual === null ? 'budget_released' : overrun ? 'budget_overrun' : 'budget_committed';
      expect(check.eventType).toBe(event);
      return;
    }
    case 'advance':
      clock.advance(c.ms);
      return;
    case 'nextDay':
      clock.set(Math.floor(now / DAY) * DAY + DAY + c.offset);
      return;
    case 'limit': {
      const cap = model.caps[c.cap % model.caps.length] as ModelCap;
      cap.limitMicros = c.micros;
      await service.installSpendCaps([capInit(cap)]);
      return;
    }
  }
}

/** After an allowed spend or reservation: each window it took from holds at most its limit. */
async function expectWithinLimits(run: Run, refs: readonly string[]): Promise<void> {
  const now = run.clock.now();
  const windows = await run.store.listCapWindows();
  for (const key of refs) {
    const w = windows.find((x) => `${x.cap}\n${x.scope}\n${x.window}` === key);
    expect(w, key).toBeDefined();
    const state = w?.state;
    let live = 0;
    for (const h of state?.holds.values() ?? []) if (h.expiresAt > now) live += h.micros;
    expect((state?.spentMicros ?? 0) + live).toBeLessThanOrEqual(run.model.capOf(key).limitMicros);
  }
}

/** Every stored window as the model holds it, and every alert recorded once, as the model expects. */
async function expectInvariants(run: Run): Promise<void> {
  const { store, service, model } = run;
  const now = run.clock.now();
  const stored = new Map<string, unknown>();
  for (const { cap, scope, window, state } of await store.listCapWindows()) {
    const key = `${cap}\n${scope}\n${window}`;
    for (const v of [state.spentMicros, state.reservedMicros]) {
      expect(Number.isSafeInteger(v) && v >= 0, `${key}: ${v}`).toBe(true);
    }
    let held = 0;
    for (const h of state.holds.values()) held += h.micros;
    expect(state.reservedMicros, key).toBe(held);
    const live = [...state.holds].filter(([, h]) => h.expiresAt > now);
    stored.set(key, { spent: state.spentMicros, holds: sorted(live), alertedPpm: state.alertedPpm });
  }
  const expected = new Map<string, unknown>();
  for (const [key, w] of model.windows) {
    expected.set(key, {
      spent: w.spent,
      holds: sorted([...model.liveHolds(key, now)]),
      alertedPpm: w.alertedPpm,
    });
  }
  expect(stored).toEqual(expected);

  const perWindow = new Map<string, number>();
  for (const plan of model.plans) {
    const entries = (await service.getAuditTrail(plan.id))?.entries ?? [];
    const alerts = entries
      .filter((e) => e.eventType === 'budget_cap_alert')
      .map((e) => ({
        plan: plan.id,
        cap: e.details['cap'],
        scope: JSON.stringify(e.details['labels']),
        window: e.details['window'],
        ppm: Math.round((e.details['fraction'] as number) * 1_000_000),
      }));
    for (const a of alerts) {
      const key = `${a.cap as string}\n${a.scope}\n${a.window as string}`;
      perWindow.set(key, (perWindow.get(key) ?? 0) + 1);
    }
    expect(alerts).toEqual(model.alerts.filter((a) => a.plan === plan.id));
  }
  for (const [key, count] of perWindow) {
    expect(count, key).toBeLessThanOrEqual(model.capOf(key).alertPpm.length);
  }
}

const sorted = <T>(entries: [string, T][]): [string, T][] => entries.sort(([a], [b]) => (a < b ? -1 : 1));

describe.each(LOCAL_STORES)('spend caps under random interleavings, %s', (_name, makeStore) => {
  it('keeps every window equal to the reference model and every answer the model’s, after each command', async () => {
    await fc.assert(
      fc.asyncProperty(
        capsArb,
        plansArb,
        fc.array(commandArb, { minLength: 1, maxLength: MAX_COMMANDS, size: 'max' }),
        async (caps, plans, commands) => {
          const run = await start(makeStore, caps, plans);
          try {
            for (const c of commands) {
              await step(run, c);
              await expectInvariants(run);
            }
          } finally {
            await run.store.close();
          }
        },
      ),
      { numRuns: NUM_RUNS },
    );
  }, 60_000);
});
