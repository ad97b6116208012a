import { describe, expect, it } from 'vitest';
import {
  AutonomyGuardrailService,
  GuardrailValidationError,
  ManualClock,
  type AutonomyGuardrailServiceOptions,
} from '../../src/index.js';
import { T0, configured, guardrailsOf, rejectedField, trailOf } from '../support/service.js';
import { fieldOf } from '../support/thrown.js';

async function lastEntry(service: AutonomyGuardrailService) {
  const entry = (await trailOf(service)).entries.at(-1);
  if (!entry) throw new Error('the audit trail should not be empty');
  return entry;
}

async function eventTypes(service: AutonomyGuardrailService): Promise<string[]> {
  return (await trailOf(service)).entries.map((e) => e.eventType);
}

/** The wire form of a plan's guardrails as toMetadata writes it, after a trip through JSON. */
async function wireGuardrails(service: AutonomyGuardrailService): Promise<Record<string, unknown>> {
  const metadata = JSON.parse(JSON.stringify(await service.toMetadata('plan'))) as {
    autonomy_guardrails: { guardrails: Record<string, unknown> };
  };
  return metadata.autonomy_guardrails.guardrails;
}

/** A second service holding the plan as read back from the first one's metadata, through JSON. */
async function reloaded(service: AutonomyGuardrailService): Promise<AutonomyGuardrailService> {
  const metadata: unknown = JSON.parse(JSON.stringify(await service.toMetadata('plan')));
  const copy = new AutonomyGuardrailService({ clock: new ManualClock(T0) });
  await copy.loadFromMetadata('plan', metadata);
  return copy;
}

describe('reserveBudget', () => {
  it('sets the amount aside when spent + reserved + amount fits the budget', async () => {
    const { service } = await configured({ toolBudget: 10, budgetSpent: 1 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    expect([r.allowed, r.check.allowed, r.check.eventType]).toEqual([true, true, 'budget_reserved']);
    expect([r.planId, r.id, r.amount]).toEqual(['plan', 'r1', 4]);
    const g = await guardrailsOf(service);
    expect([g.budgetReserved, g.budgetSpent]).toEqual([4, 1]);
  });

  it('records a budget_reserved entry with the reservation id, amount, spent, reserved and limit', async () => {
    const { service, clock } = await configured({ toolBudget: 10, budgetSpent: 1 });
    clock.advance(250);
    await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const entry = await lastEntry(service);
    expect([entry.eventType, entry.result, entry.timestamp]).toEqual([
      'budget_reserved',
      'allowed',
      T0 + 250,
    ]);
    expect(entry.details).toEqual({ reservation_id: 'r1', amount: 4, spent: 1, reserved: 4, limit: 10 });
  });

  it('refuses an amount that does not fit and sets nothing aside', async () => {
    const { service } = await configured({ toolBudget: 10, budgetSpent: 7 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    expect([r.allowed, r.check.allowed, r.check.eventType]).toEqual([false, false, 'budget_blocked']);
    expect((await guardrailsOf(service)).budgetReserved).toBe(0);
  });

  it('records a budget_blocked entry with the reason and the unchanged amount reserved', async () => {
    const { service } = await configured({ toolBudget: 10, budgetSpent: 7 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const entry = await lastEntry(service);
    expect([entry.eventType, entry.result]).toEqual(['budget_blocked', 'denied']);
    expect(entry.details).toEqual({
      reservation_id: 'r1',
      amount: 4,
      spent: 7,
      reserved: 0,
      limit: 10,
      reason: r.check.reason,
    });
  });

  it('admits a reservation that brings spent + reserved exactly to the budget', async () => {
    const { service } = await configured({ toolBudget: 10, budgetSpent: 3 });
    await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    expect((await service.reserveBudget('plan', 3, { reservationId: 'r2' })).allowed).toBe(true);
  });

  it('counts open reservations against further reservations', async () => {
    const { service } = await configured({ toolBudget: 10, budgetSpent: 3 });
    await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    expect((await service.reserveBudget('plan', 3.000001, { reservationId: 'r2' })).allowed).toBe(false);
  });

  it('counts open reservations against checkToolBudget', async () => {
    const { service } = await configured({ toolBudget: 10, budgetSpent: 3 });
    await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    expect((await service.checkToolBudget('plan', 3.5)).allowed).toBe(false);
    expect((await service.checkToolBudget('plan', 3)).allowed).toBe(true);
  });

  it('reserves any amount against a plan with no budget limit', async () => {
    const { service } = await configured({ maxSteps: 5 });
    const r = await service.reserveBudget('plan', 1_000_000, { reservationId: 'r1' });
    expect(r.allowed).toBe(true);
    expect((await guardrailsOf(service)).budgetReserved).toBe(1_000_000);
  });

  it('returns the open reservation when its id is asked for again, without reserving twice', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const again = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    expect([again.allowed, again.check.eventType, again.amount]).toEqual([true, 'budget_reserved', 4]);
    expect((await guardrailsOf(service)).budgetReserved).toBe(4);
  });

  it('records one entry for a reservation asked for twice', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    expect(await eventTypes(service)).toEqual(['budget_reserved']);
  });

  it('answers a repeated reservation id with the amount first reserved', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    expect((await service.reserveBudget('plan', 9, { reservationId: 'r1' })).amount).toBe(4);
    expect((await guardrailsOf(service)).budgetReserved).toBe(4);
  });

  it('opens a new reservation with the id of one already settled', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await (await service.reserveBudget('plan', 4, { reservationId: 'r1' })).commit(4);
    await service.reserveBudget('plan', 2, { reservationId: 'r1' });
    const g = await guardrailsOf(service);
    expect([g.budgetSpent, g.budgetReserved]).toEqual([4, 2]);
  });

  it('rounds a reserved amount finer than a micro-unit up', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 0.0000001, { reservationId: 'r1' });
    expect(r.amount).toBe(0.000001);
  });
});

describe('commit', () => {
  it('spends the actual cost and closes the reservation', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const check = await r.commit(4);
    expect([check.allowed, check.eventType]).toEqual([true, 'budget_committed']);
    const g = await guardrailsOf(service);
    expect([g.budgetSpent, g.budgetReserved, g.reservationMicros('r1')]).toEqual([4, 0, undefined]);
  });

  it('records a budget_committed entry with the reserved amount, actual cost, spent and limit', async () => {
    const { service, clock } = await configured({ toolBudget: 10, budgetSpent: 1 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    clock.advance(900);
    await r.commit(3.5);
    const entry = await lastEntry(service);
    expect([entry.eventType, entry.result, entry.timestamp]).toEqual([
      'budget_committed',
      'allowed',
      T0 + 900,
    ]);
    expect(entry.details).toEqual({ reservation_id: 'r1', reserved: 4, actual: 3.5, spent: 4.5, limit: 10 });
  });

  it('records the note a commit gives, saying why it spends what it spends', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    await r.commit(4, { note: 'cancelled before its finish' });
    expect((await lastEntry(service)).details['note']).toBe('cancelled before its finish');
  });

  it('refuses a note that is not a string and settles nothing', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    expect(await rejectedField(r.commit(4, { note: 7 as unknown as string }))).toBe('options.note');
    expect((await guardrailsOf(service)).reservationMicros('r1')).toBe(4_000_000);
  });

  it.each([
    ['with an unknown key', { note: 'why', extra: 1 }, 'options.extra'],
    ['that are a string', 'why', 'options'],
  ])(
    'refuses options %s, naming the field, and lets the commit be given again',
    async (_l, options, field) => {
      const { service } = await configured({ toolBudget: 10 });
      const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
      expect(await rejectedField(r.commit(4, options as { note?: string }))).toBe(field);
      expect((await r.commit(2)).eventType).toBe('budget_committed');
    },
  );

  it('spends only an actual cost below the estimate, and the rest is free again', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await (await service.reserveBudget('plan', 5, { reservationId: 'r1' })).commit(2);
    expect((await guardrailsOf(service)).budgetSpent).toBe(2);
    expect((await service.reserveBudget('plan', 8, { reservationId: 'r2' })).allowed).toBe(true);
  });

  it('commits an actual cost above the estimate that the budget still holds', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const check = await (await service.reserveBudget('plan', 4, { reservationId: 'r1' })).commit(6);
    expect(check.eventType).toBe('budget_committed');
    expect((await guardrailsOf(service)).budgetSpent).toBe(6);
  });

  it('commits an actual cost that, with the other open reservations, exactly uses up the budget', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const a = await service.reserveBudget('plan', 4, { reservationId: 'a' });
    await service.reserveBudget('plan', 4, { reservationId: 'b' });
    expect((await a.commit(6)).eventType).toBe('budget_committed');
  });

  it('spends an actual cost beyond what the budget has left all the same, answering budget_overrun', async () => {
    const { service } = await configured({ toolBudget: 10, budgetSpent: 2 });
    const check = await (await service.reserveBudget('plan', 4, { reservationId: 'r1' })).commit(9);
    expect([check.allowed, check.result, check.eventType]).toEqual([false, 'denied', 'budget_overrun']);
    const g = await guardrailsOf(service);
    expect([g.budgetSpent, g.budgetReserved]).toEqual([11, 0]);
  });

  it('counts the other open reservations in what the budget has left', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const a = await service.reserveBudget('plan', 4, { reservationId: 'a' });
    await service.reserveBudget('plan', 4, { reservationId: 'b' });
    const check = await a.commit(7);
    expect(check.eventType).toBe('budget_overrun');
    const g = await guardrailsOf(service);
    expect([g.budgetSpent, g.budgetReserved]).toEqual([7, 4]);
  });

  it('records an overrun as a denied budget_overrun entry with its reason', async () => {
    const { service } = await configured({ toolBudget: 10, budgetSpent: 2 });
    const check = await (await service.reserveBudget('plan', 4, { reservationId: 'r1' })).commit(9);
    const entry = await lastEntry(service);
    expect([entry.eventType, entry.result]).toEqual(['budget_overrun', 'denied']);
    expect(entry.details).toEqual({
      reservation_id: 'r1',
      reserved: 4,
      actual: 9,
      spent: 11,
      limit: 10,
      reason: check.reason,
    });
  });

  it('commits any actual cost against a plan with no budget limit', async () => {
    const { service } = await configured({ maxSteps: 5 });
    const check = await (await service.reserveBudget('plan', 1, { reservationId: 'r1' })).commit(500);
    expect(check.eventType).toBe('budget_committed');
    expect((await guardrailsOf(service)).budgetSpent).toBe(500);
  });

  it('answers a second commit with the first answer and spends once', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const first = await r.commit(3);
    expect(await r.commit(5)).toBe(first);
    expect((await guardrailsOf(service)).budgetSpent).toBe(3);
  });

  it('answers a release after a commit with the answer of the commit', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const committed = await r.commit(3);
    expect(await r.release()).toBe(committed);
    expect((await guardrailsOf(service)).budgetSpent).toBe(3);
  });

  it('records one entry for two concurrent commits of one reservation', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const [a, b] = await Promise.all([r.commit(3), r.commit(3)]);
    expect(a).toBe(b);
    expect(await eventTypes(service)).toEqual(['budget_reserved', 'budget_committed']);
  });

  it('answers a commit of a refused reservation with its budget_blocked check and spends nothing', async () => {
    const { service } = await configured({ toolBudget: 1 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    expect(await r.commit(4)).toBe(r.check);
    expect((await guardrailsOf(service)).budgetSpent).toBe(0);
    expect(await eventTypes(service)).toEqual(['budget_blocked']);
  });

  it.each([
    ['negative', -1],
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
  ])(
    'refuses an actual cost that is %s, naming actual, and keeps the reservation open',
    async (_l, actual) => {
      const { service } = await configured({ toolBudget: 10 });
      const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
      expect(await rejectedField(() => r.commit(actual))).toBe('actual');
      const g = await guardrailsOf(service);
      expect([g.budgetSpent, g.budgetReserved]).toEqual([0, 4]);
    },
  );

  it('lets a commit refused for a bad actual cost be tried again', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    await rejectedField(() => r.commit(-1));
    expect((await r.commit(2)).eventType).toBe('budget_committed');
    expect((await guardrailsOf(service)).budgetSpent).toBe(2);
  });
});

describe('release', () => {
  it('gives the amount back unspent', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const check = await r.release();
    expect([check.allowed, check.eventType]).toEqual([true, 'budget_released']);
    const g = await guardrailsOf(service);
    expect([g.budgetSpent, g.budgetReserved]).toEqual([0, 0]);
  });

  it('records a budget_released entry with the amount given back', async () => {
    const { service, clock } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    clock.advance(40);
    await r.release();
    const entry = await lastEntry(service);
    expect([entry.eventType, entry.result, entry.timestamp]).toEqual(['budget_released', 'allowed', T0 + 40]);
    expect(entry.details).toEqual({ reservation_id: 'r1', amount: 4 });
  });

  it('answers a second release with the first answer and records one entry', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const first = await r.release();
    expect(await r.release()).toBe(first);
    expect(await eventTypes(service)).toEqual(['budget_reserved', 'budget_released']);
  });

  it('answers a commit after a release with the answer of the release and spends nothing', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const released = await r.release();
    expect(await r.commit(4)).toBe(released);
    expect((await guardrailsOf(service)).budgetSpent).toBe(0);
  });

  it('refuses options with an unknown key, naming the field, and lets the release be given again', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const bad = { error: 'boom', extra: 1 } as { error?: string };
    expect(await rejectedField(r.release(bad))).toBe('options.extra');
    expect((await r.release()).eventType).toBe('budget_released');
    expect((await guardrailsOf(service)).budgetReserved).toBe(0);
  });

  it('frees the amount for another reservation', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await (await service.reserveBudget('plan', 8, { reservationId: 'r1' })).release();
    expect((await service.reserveBudget('plan', 10, { reservationId: 'r2' })).allowed).toBe(true);
  });
});

describe('concurrent reservations', () => {
  it('never spends beyond a budget of 100 over 1,000 concurrent reserve-and-commit pairs of cost 1', async () => {
    const { service } = await configured({ toolBudget: 100 }, { auditCapacity: 2000 });
    const pairs = await Promise.all(
      Array.from({ length: 1000 }, async (_, i) => {
        const r = await service.reserveBudget('plan', 1, { reservationId: `r${i}` });
        return (await r.commit(1)).allowed;
      }),
    );
    expect(pairs.filter(Boolean)).toHaveLength(100);
    const g = await guardrailsOf(service);
    expect([g.budgetSpent, g.budgetReserved]).toEqual([100, 0]);
  });

  it('records every attempt of 1,000 concurrent reserve-and-commit pairs', async () => {
    const { service } = await configured({ toolBudget: 100 }, { auditCapacity: 2000 });
    await Promise.all(
      Array.from({ length: 1000 }, async (_, i) => {
        await (await service.reserveBudget('plan', 1, { reservationId: `r${i}` })).commit(1);
      }),
    );
    const count = (type: string, types: string[]) => types.filter((t) => t === type).length;
    const types = await eventTypes(service);
    expect(types).toHaveLength(1100);
    expect(count('budget_reserved', types)).toBe(100);
    expect(count('budget_blocked', types)).toBe(900);
    expect(count('budget_committed', types)).toBe(100);
  });
});

describe('reservations of unconfigured plans', () => {
  it('answers an unconfigured plan with budget_allowed by default, setting nothing aside', async () => {
    const service = new AutonomyGuardrailService({ clock: new ManualClock(T0) });
    const r = await service.reserveBudget('unknown', 4, { reservationId: 'r1' });
    expect([r.check.allowed, r.check.eventType]).toEqual([true, 'budget_allowed']);
    expect(await service.getGuardrails('unknown')).toBeNull();
  });

  it('answers an unconfigured plan with budget_blocked under unconfiguredPlans "deny"', async () => {
    const service = new AutonomyGuardrailService({ clock: new ManualClock(T0), unconfiguredPlans: 'deny' });
    const r = await service.reserveBudget('unknown', 4, { reservationId: 'r1' });
    expect([r.allowed, r.check.allowed, r.check.eventType]).toEqual([false, false, 'budget_blocked']);
  });

  it('stores nothing when a reservation of an unconfigured plan is committed', async () => {
    const service = new AutonomyGuardrailService({ clock: new ManualClock(T0) });
    const r = await service.reserveBudget('unknown', 4, { reservationId: 'r1' });
    expect(await r.commit(4)).toBe(r.check);
    expect(await service.getGuardrails('unknown')).toBeNull();
  });
});

describe('bad reservation arguments', () => {
  it.each([
    ['negative', -1],
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['a string', '4'],
  ])('refuses an amount that is %s, naming amount, and records nothing', async (_label, amount) => {
    const { service } = await configured({ toolBudget: 10 });
    const call = () => service.reserveBudget('plan', amount as number, { reservationId: 'r1' });
    expect(await rejectedField(call)).toBe('amount');
    expect((await trailOf(service)).size).toBe(0);
    expect((await guardrailsOf(service)).budgetReserved).toBe(0);
  });

  it.each([
    ['empty', ''],
    ['holding a control character', 'r\u00001'],
    ['longer than 256 characters', 'r'.repeat(257)],
    ['a number', 1],
  ])('refuses a reservation id that is %s, naming reservationId', async (_label, reservationId) => {
    const { service } = await configured({ toolBudget: 10 });
    const options = { reservationId } as { reservationId: string };
    expect(await rejectedField(() => service.reserveBudget('plan', 1, options))).toBe('reservationId');
    expect((await trailOf(service)).size).toBe(0);
  });

  it('refuses missing options, naming reservationId', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const options = undefined as unknown as { reservationId: string };
    expect(await rejectedField(() => service.reserveBudget('plan', 1, options))).toBe('reservationId');
  });

  it('refuses a bad plan id, naming plan_id', async () => {
    const { service } = await configured({ toolBudget: 10 });
    expect(await rejectedField(() => service.reserveBudget('', 1, { reservationId: 'r1' }))).toBe('plan_id');
  });
});

describe('reservations in metadata', () => {
  it('writes open reservations under the wire key reservations', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 2.5, { reservationId: 'r1' });
    await service.reserveBudget('plan', 0.1, { reservationId: 'r2' });
    expect((await wireGuardrails(service))['reservations']).toEqual([
      { id: 'r1', amount: 2.5, expires_at: '2026-11-30T10:15:00.000Z' },
      { id: 'r2', amount: 0.1, expires_at: '2026-11-30T10:15:00.000Z' },
    ]);
  });

  it('reads open reservations back from metadata that went through JSON', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 2.5, { reservationId: 'r1' });
    const g = await guardrailsOf(await reloaded(service));
    expect([g.budgetReserved, g.reservationMicros('r1')]).toEqual([2.5, 2_500_000]);
  });

  it('counts reservations read back from metadata against the budget', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 8, { reservationId: 'r1' });
    const copy = await reloaded(service);
    expect((await copy.reserveBudget('plan', 3, { reservationId: 'r2' })).allowed).toBe(false);
  });

  it('commits a reservation read back from metadata once its id is asked for again', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const copy = await reloaded(service);
    const r = await copy.reserveBudget('plan', 4, { reservationId: 'r1' });
    expect((await r.commit(3)).eventType).toBe('budget_committed');
    const g = await guardrailsOf(copy);
    expect([g.budgetSpent, g.budgetReserved]).toEqual([3, 0]);
  });

  it('writes no runtime keys for a plan without runtime state, as DESIGN.md §3 shows', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.checkToolBudget('plan', 1);
    expect(Object.keys(await wireGuardrails(service)).sort()).toEqual([
      'actor_limits',
      'budget_spent',
      'max_steps',
      'max_wall_clock_seconds',
      'required_confirmations',
      'start_time',
      'step_count',
      'tool_budget',
    ]);
  });

  it('writes no reservations key once every reservation is settled', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await (await service.reserveBudget('plan', 4, { reservationId: 'r1' })).commit(4);
    expect(await wireGuardrails(service)).not.toHaveProperty('reservations');
  });

  it('reads state without runtime keys (DESIGN.md §3) as nothing reserved, paused or counted', async () => {
    const service = new AutonomyGuardrailService({ clock: new ManualClock(T0) });
    const g = await service.loadFromMetadata('plan', {
      autonomy_guardrails: {
        schema_version: 1,
        guardrails: {
          max_steps: 5,
          tool_budget: 10.0,
          required_confirmations: ['deploy'],
          max_wall_clock_seconds: null,
          start_time: '2026-11-30T10:00:00.000Z',
          actor_limits: { max_tool_calls_per_invocation: null, max_retries_per_failure: 3 },
          step_count: 1,
          budget_spent: 2.5,
        },
        audit_trail: {
          max_entries: 1000,
          allowed_count: 1,
          denied_count: 0,
          entries: [
            {
              event_type: 'step_allowed',
              guard_name: 'step_limit',
              result: 'allowed',
              timestamp: '2026-11-30T10:00:01.000Z',
              details: { step: 0, limit: 5 },
            },
          ],
        },
      },
    });
    expect([g.budgetSpent, g.budgetReserved, g.pausedMs, g.pausedSince]).toEqual([2.5, 0, 0, null]);
    expect(g.toolCallCount('search')).toBe(0);
  });

  it('refuses a reservation whose amount is not a number, naming its path', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const metadata = JSON.parse(JSON.stringify(await service.toMetadata('plan'))) as {
      autonomy_guardrails: { guardrails: { reservations: { id: string; amount: unknown }[] } };
    };
    const [first] = metadata.autonomy_guardrails.guardrails.reservations;
    if (first) first.amount = 'four';
    expect(await rejectedField(() => service.loadFromMetadata('plan', metadata))).toBe(
      'autonomy_guardrails.guardrails.reservations[0].amount',
    );
  });

  it('refuses two reservations with one id, naming the second', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const metadata = JSON.parse(JSON.stringify(await service.toMetadata('plan'))) as {
      autonomy_guardrails: { guardrails: { reservations: { id: string; amount: number }[] } };
    };
    metadata.autonomy_guardrails.guardrails.reservations.push({ id: 'r1', amount: 1 });
    expect(await rejectedField(() => service.loadFromMetadata('plan', metadata))).toBe(
      'autonomy_guardrails.guardrails.reservations[1].id',
    );
  });
});

describe('reservations at their edges', () => {
  it('keeps open reservations when the plan is configured again, so their commit is spent', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const reservation = await service.reserveBudget('plan', 5, { reservationId: 'r1' });
    await service.configureGuardrails('plan', { toolBudget: 10 });
    await reservation.commit(5);
    expect((await guardrailsOf(service)).budgetSpent).toBe(5);
  });

  it('keeps tool-call counts when the plan is configured again', async () => {
    const { service } = await configured({});
    await service.checkToolCalls('plan', 'search', 1);
    await service.configureGuardrails('plan', {});
    expect((await service.checkToolCalls('plan', 'search', 1)).allowed).toBe(false);
  });

  it('allows the call of an unconfigured plan without holding anything open', async () => {
    const service = new AutonomyGuardrailService({ clock: new ManualClock(T0) });
    const reservation = await service.reserveBudget('nobody', 1, { reservationId: 'r1' });
    expect([reservation.allowed, reservation.open]).toEqual([true, false]);
  });

  it('refuses reservations that would hold more than the largest amount in all', async () => {
    const { service } = await configured({});
    await service.reserveBudget('plan', 9e9, { reservationId: 'r1' });
    await expect(service.reserveBudget('plan', 9e9, { reservationId: 'r2' })).rejects.toBeInstanceOf(
      GuardrailValidationError,
    );
    expect((await guardrailsOf(service)).budgetReserved).toBe(9e9);
  });
});

describe('reservation expiry', () => {
  const TTL = 15 * 60 * 1000;

  /** Metadata of the plan, through JSON, with the first reservation's expires_at taken out. */
  async function withoutExpiry(service: AutonomyGuardrailService): Promise<unknown> {
    const metadata = JSON.parse(JSON.stringify(await service.toMetadata('plan'))) as {
      autonomy_guardrails: { guardrails: { reservations: Record<string, unknown>[] } };
    };
    const [first] = metadata.autonomy_guardrails.guardrails.reservations;
    if (first) delete first['expires_at'];
    return metadata;
  }

  it('records when a reservation lapses: now plus 15 minutes by default', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    expect(r.expiresAt).toBe(T0 + TTL);
    expect((await guardrailsOf(service)).reservationExpiresAt('r1')).toBe(T0 + TTL);
  });

  it('holds a reservation for reservationTtlMs when given', async () => {
    const { service } = await configured({ toolBudget: 10 }, { reservationTtlMs: 1000 });
    expect((await service.reserveBudget('plan', 4, { reservationId: 'r1' })).expiresAt).toBe(T0 + 1000);
  });

  it('stops counting a reservation against the budget once its TTL has passed', async () => {
    const { service, clock } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 8, { reservationId: 'r1' });
    clock.advance(TTL);
    expect((await service.checkToolBudget('plan', 5)).allowed).toBe(true);
  });

  it('still counts a reservation whose TTL has not passed', async () => {
    const { service, clock } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 8, { reservationId: 'r1' });
    clock.advance(TTL - 1);
    expect((await service.checkToolBudget('plan', 5)).allowed).toBe(false);
  });

  it('gives a lapsed amount back in the state during the budget operation that finds it', async () => {
    const { service, clock } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 8, { reservationId: 'r1' });
    clock.advance(TTL);
    await service.checkToolBudget('plan', 1);
    const g = await guardrailsOf(service);
    expect([g.budgetReserved, g.reservationMicros('r1'), g.budgetSpent]).toEqual([0, undefined, 1]);
  });

  it('frees a lapsed amount for a new reservation', async () => {
    const { service, clock } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 8, { reservationId: 'r1' });
    clock.advance(TTL);
    expect((await service.reserveBudget('plan', 8, { reservationId: 'r2' })).allowed).toBe(true);
    expect((await guardrailsOf(service)).budgetReserved).toBe(8);
  });

  it('records the ids it gave back in the details of the call that found them lapsed', async () => {
    const { service, clock } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 2, { reservationId: 'r1' });
    await service.reserveBudget('plan', 3, { reservationId: 'r2' });
    clock.advance(TTL);
    await service.checkToolBudget('plan', 1);
    expect((await lastEntry(service)).details).toEqual({
      cost: 1,
      spent: 1,
      limit: 10,
      expired: ['r1', 'r2'],
    });
  });

  it('records no extra audit entry for the reservations it gives back', async () => {
    const { service, clock } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 2, { reservationId: 'r1' });
    clock.advance(TTL);
    await service.reserveBudget('plan', 1, { reservationId: 'r2' });
    expect(await eventTypes(service)).toEqual(['budget_reserved', 'budget_reserved']);
    expect((await lastEntry(service)).details['expired']).toEqual(['r1']);
  });

  it('spends the actual cost of a commit after the reservation lapsed', async () => {
    const { service, clock } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    clock.advance(TTL);
    const check = await r.commit(3);
    expect([check.allowed, check.eventType]).toEqual([true, 'budget_committed']);
    const g = await guardrailsOf(service);
    expect([g.budgetSpent, g.budgetReserved, g.reservationMicros('r1')]).toEqual([3, 0, undefined]);
  });

  it('records a lapsed commit with reserved 0 and expired true', async () => {
    const { service, clock } = await configured({ toolBudget: 10, budgetSpent: 1 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    clock.advance(TTL);
    await r.commit(3);
    expect((await lastEntry(service)).details).toEqual({
      reservation_id: 'r1',
      reserved: 0,
      actual: 3,
      spent: 4,
      limit: 10,
      expired: true,
    });
  });

  it('spends the actual cost of a commit after another operation gave the reservation back', async () => {
    const { service, clock } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    clock.advance(TTL);
    await service.checkToolBudget('plan', 1);
    expect((await r.commit(3)).eventType).toBe('budget_committed');
    expect((await guardrailsOf(service)).budgetSpent).toBe(4);
  });

  it('answers a lapsed commit beyond what the budget has left with budget_overrun, spending it', async () => {
    const { service, clock } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    clock.advance(TTL);
    await service.checkToolBudget('plan', 8);
    const check = await r.commit(3);
    expect([check.allowed, check.eventType]).toEqual([false, 'budget_overrun']);
    expect((await guardrailsOf(service)).budgetSpent).toBe(11);
  });

  it('records the release of a lapsed reservation as expired', async () => {
    const { service, clock } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    clock.advance(TTL);
    expect((await r.release()).eventType).toBe('budget_released');
    expect((await lastEntry(service)).details).toEqual({ reservation_id: 'r1', amount: 4, expired: true });
    expect((await guardrailsOf(service)).budgetReserved).toBe(0);
  });

  it('spends once when two handles of one reservation commit, one before it lapsed and one after', async () => {
    const { service, clock } = await configured({ toolBudget: 10 });
    const first = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const second = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    await first.commit(3);
    clock.advance(TTL);
    const late = await second.commit(3);
    expect([late.eventType, (await guardrailsOf(service)).budgetSpent]).toEqual(['budget_released', 3]);
  });

  it('spends once when two handles of a lapsed reservation both commit', async () => {
    const { service, clock } = await configured({ toolBudget: 10 });
    const first = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const second = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    clock.advance(TTL);
    await service.checkToolBudget('plan', 1);
    await first.commit(3);
    await second.commit(3);
    expect((await guardrailsOf(service)).budgetSpent).toBe(4);
  });

  it('settles a lapsed reservation by its release, so a later commit of it spends nothing', async () => {
    const { service, clock } = await configured({ toolBudget: 10 });
    const first = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const second = await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    clock.advance(TTL);
    await service.checkToolBudget('plan', 1);
    await first.release();
    await second.commit(3);
    expect((await guardrailsOf(service)).budgetSpent).toBe(1);
  });

  it('keeps the ids of lapsed, unsettled reservations through the metadata round trip', async () => {
    const { service, clock } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    clock.advance(TTL);
    await service.checkToolBudget('plan', 1);
    expect((await wireGuardrails(service))['lapsed']).toEqual(['r1']);
  });

  it('refuses a lapsed id that is also open, naming its path', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const metadata = JSON.parse(JSON.stringify(await service.toMetadata('plan'))) as {
      autonomy_guardrails: { guardrails: Record<string, unknown> };
    };
    metadata.autonomy_guardrails.guardrails['lapsed'] = ['r1'];
    expect(await rejectedField(() => service.loadFromMetadata('plan', metadata))).toBe(
      'autonomy_guardrails.guardrails.lapsed[0]',
    );
  });

  it('keeps a reservation expiry through the metadata round trip', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    expect((await guardrailsOf(await reloaded(service))).reservationExpiresAt('r1')).toBe(T0 + TTL);
  });

  it('frees a reservation read from state without expires_at at the next budget operation', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 8, { reservationId: 'r1' });
    await service.loadFromMetadata('plan', await withoutExpiry(service));
    expect((await service.checkToolBudget('plan', 5)).allowed).toBe(true);
    expect((await lastEntry(service)).details['expired']).toEqual(['r1']);
  });

  it('writes a reservation read without expires_at back without it', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 8, { reservationId: 'r1' });
    await service.loadFromMetadata('plan', await withoutExpiry(service));
    expect((await wireGuardrails(service))['reservations']).toEqual([{ id: 'r1', amount: 8 }]);
  });

  it('refuses an expires_at that is not an ISO-8601 date-time, naming its path', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const metadata = JSON.parse(JSON.stringify(await service.toMetadata('plan'))) as {
      autonomy_guardrails: { guardrails: { reservations: Record<string, unknown>[] } };
    };
    const [first] = metadata.autonomy_guardrails.guardrails.reservations;
    if (first) first['expires_at'] = 'soon';
    expect(await rejectedField(() => service.loadFromMetadata('plan', metadata))).toBe(
      'autonomy_guardrails.guardrails.reservations[0].expires_at',
    );
  });

  it.each([0, -1, 1.5, '60000', null, Number.NaN, 10 * 365 * 24 * 60 * 60 * 1000 + 1])(
    'refuses reservationTtlMs %s, naming the field',
    (ttl) => {
      const options = { reservationTtlMs: ttl } as unknown as AutonomyGuardrailServiceOptions;
      expect(fieldOf(() => new AutonomyGuardrailService(options))).toBe('reservationTtlMs');
    },
  );
});

describe('ids that databases cannot keep apart', () => {
  it('refuses a reservation id holding a lone surrogate, naming reservationId', async () => {
    const { service } = await configured({ toolBudget: 10 });
    expect(await rejectedField(service.reserveBudget('plan', 1, { reservationId: 'r\udc00' }))).toBe(
      'reservationId',
    );
  });
});
