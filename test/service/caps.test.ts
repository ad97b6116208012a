import { describe, expect, it } from 'vitest';
import {
  AutonomyGuardrailService,
  ManualClock,
  MemoryStore,
  type BudgetAlert,
  type GuardrailsInit,
  type SpendCapInit,
} from '../../src/index.js';

const T0 = Date.parse('2026-11-30T10:00:00.000Z');
const HOUR = 3_600_000;
const TEAM: SpendCapInit = { id: 'team-ml', match: { team: 'ml' }, limit: 1, window: 'day' };

async function withCaps(caps: SpendCapInit[], options: { onBudgetAlert?: (a: BudgetAlert) => void } = {}) {
  const clock = new ManualClock(T0);
  const store = new MemoryStore();
  const service = new AutonomyGuardrailService({ clock, store, reservationTtlMs: HOUR, ...options });
  await service.installSpendCaps(caps);
  const plan = (id: string, init: GuardrailsInit = {}) =>
    service.configureGuardrails(id, { toolBudget: 10, labels: { team: 'ml' }, ...init });
  return { clock, service, plan, store };
}

async function eventsOf(service: AutonomyGuardrailService, planId: string): Promise<string[]> {
  return ((await service.getAuditTrail(planId))?.entries ?? []).map((e) => e.eventType);
}

describe('spend caps across plans', () => {
  it('refuses a spend the team cap cannot cover, whatever plan of the team asks', async () => {
    const { service, plan } = await withCaps([TEAM]);
    await plan('a');
    await plan('b');
    expect((await service.checkToolBudget('a', 0.6)).allowed).toBe(true);
    const check = await service.checkToolBudget('b', 0.6);
    expect([check.allowed, check.eventType]).toEqual([false, 'budget_cap_blocked']);
  });

  it('names the cap, its labels, window, limit, spent, reserved and reset in the refusal', async () => {
    const { service, plan } = await withCaps([TEAM]);
    await plan('a');
    await service.checkToolBudget('a', 0.6);
    await service.checkToolBudget('a', 0.6);
    const last = (await service.getAuditTrail('a'))?.entries.at(-1);
    expect(last?.details).toMatchObject({
      cap: 'team-ml',
      labels: { team: 'ml' },
      window: 'day:2026-11-30',
      amount: 0.6,
      limit: 1,
      spent: 0.6,
      reserved: 0,
      resets_at: '2026-12-01T00:00:00.000Z',
    });
  });

  it('leaves plans whose labels the cap does not match alone', async () => {
    const { service, plan } = await withCaps([TEAM]);
    await plan('other', { labels: { team: 'web' } });
    expect((await service.checkToolBudget('other', 5)).allowed).toBe(true);
  });

  it('keeps one window per distinct value of a label matched with *', async () => {
    const { service, plan } = await withCaps([
      { id: 'per-user', match: { user: '*' }, limit: 1, window: 'day' },
    ]);
    await plan('ann-1', { labels: { user: 'ann' } });
    await plan('bob-1', { labels: { user: 'bob' } });
    expect((await service.checkToolBudget('ann-1', 1)).allowed).toBe(true);
    expect((await service.checkToolBudget('bob-1', 1)).allowed).toBe(true);
    expect((await service.checkToolBudget('ann-1', 0.01)).eventType).toBe('budget_cap_blocked');
  });

  it('refuses when the plan budget refuses first, with the plan budget named', async () => {
    const { service, plan } = await withCaps([TEAM]);
    await plan('a', { toolBudget: 0.5 });
    expect((await service.checkToolBudget('a', 0.6)).eventType).toBe('budget_blocked');
  });

  it('holds a reservation in the cap until it is committed at its actual cost', async () => {
    const { service, plan } = await withCaps([TEAM]);
    await plan('a');
    await plan('b');
    const r = await service.reserveBudget('a', 0.7, { reservationId: 'r1' });
    expect((await service.reserveBudget('b', 0.4, { reservationId: 'r1' })).allowed).toBe(false);
    await r.commit(0.2);
    expect((await service.reserveBudget('b', 0.8, { reservationId: 'r2' })).allowed).toBe(true);
  });

  it('gives a released reservation back to the cap', async () => {
    const { service, plan } = await withCaps([TEAM]);
    await plan('a');
    const r = await service.reserveBudget('a', 1, { reservationId: 'r1' });
    await r.release();
    expect((await service.checkToolBudget('a', 1)).allowed).toBe(true);
  });

  it('lets the holds of a plan that never settles lapse after their time, so other plans are not refused', async () => {
    const { clock, service, plan } = await withCaps([TEAM]);
    await plan('dead');
    await plan('alive');
    await service.reserveBudget('dead', 1, { reservationId: 'r1' });
    expect((await service.checkToolBudget('alive', 0.5)).allowed).toBe(false);
    clock.advance(HOUR);
    expect((await service.checkToolBudget('alive', 0.5)).allowed).toBe(true);
  });

  it('settles a reservation in the window it was made in, after the day has changed', async () => {
    const { clock, service, plan, store } = await withCaps([TEAM]);
    await plan('a');
    clock.set(Date.parse('2026-11-30T23:50:00.000Z'));
    const r = await service.reserveBudget('a', 0.5, { reservationId: 'r1' });
    clock.set(Date.parse('2026-12-01T00:10:00.000Z'));
    await r.commit(0.4);
    const windows = await store.listCapWindows();
    const old = windows.find((w) => w.window === 'day:2026-11-30');
    expect([old?.state.spentMicros, old?.state.reservedMicros]).toEqual([400_000, 0]);
    expect(windows.filter((w) => w.state.spentMicros > 0)).toHaveLength(1);
  });

  it('refuses a tool call the cap cannot cover, recording budget_cap_blocked', async () => {
    const { service, plan } = await withCaps([TEAM]);
    await plan('a');
    const begun = await service.beginToolCall('a', {
      confirm: { decisionId: 'call-1', operation: 'search', ttlMs: HOUR },
      estimate: 2,
      reservationId: 'call-1',
    });
    expect([begun?.check.allowed, begun?.check.eventType]).toEqual([false, 'budget_cap_blocked']);
    expect(await eventsOf(service, 'a')).toContain('budget_cap_blocked');
  });

  it('records one alert per cap and window when spending crosses an alert fraction, and tells the hook once', async () => {
    const alerts: BudgetAlert[] = [];
    const { service, plan } = await withCaps([{ ...TEAM, alertAt: [0.5] }], {
      onBudgetAlert: (a) => void alerts.push(a),
    });
    await plan('a');
    await service.checkToolBudget('a', 0.3);
    await service.checkToolBudget('a', 0.3);
    await service.checkToolBudget('a', 0.3);
    expect((await eventsOf(service, 'a')).filter((e) => e === 'budget_cap_alert')).toHaveLength(1);
    expect(alerts.map((a) => [a.planId, a.cap, a.fraction, a.spent, a.window])).toEqual([
      ['a', 'team-ml', 0.5, 0.6, 'day:2026-11-30'],
    ]);
  });

  it('records an alert a lowered limit made due at the next spend, not swallowed by a reservation before it', async () => {
    const { service, plan } = await withCaps([{ ...TEAM, alertAt: [0.5] }]);
    await plan('a');
    await service.checkToolBudget('a', 0.4);
    await service.installSpendCaps([{ ...TEAM, limit: 0.6, alertAt: [0.5] }]);
    const r = await service.reserveBudget('a', 0.1, { reservationId: 'r1' });
    await r.commit(0.1);
    expect((await eventsOf(service, 'a')).filter((e) => e === 'budget_cap_alert')).toHaveLength(1);
  });

  it('answers a check whose alert hook throws as if it had none', async () => {
    const { service, plan } = await withCaps([{ ...TEAM, alertAt: [0.5] }], {
      onBudgetAlert: () => {
        throw new Error('down');
      },
    });
    await plan('a');
    expect((await service.checkToolBudget('a', 0.9)).allowed).toBe(true);
  });

  it('applies a cap from the moment it is installed, counting nothing spent before', async () => {
    const { service, plan } = await withCaps([]);
    await plan('a');
    await service.checkToolBudget('a', 5);
    await service.installSpendCaps([TEAM]);
    expect((await service.checkToolBudget('a', 1)).allowed).toBe(true);
    expect((await service.checkToolBudget('a', 0.01)).eventType).toBe('budget_cap_blocked');
  });

  it('refuses caps that do not validate, naming the field, and installs none', async () => {
    const { service } = await withCaps([]);
    const error = await service.installSpendCaps([TEAM, { ...TEAM, id: 'x', limit: -1 }]).catch((e) => e);
    expect(error).toMatchObject({ field: 'budgets[1].limit' });
    expect(await service.listSpendCaps()).toEqual([]);
  });
});
