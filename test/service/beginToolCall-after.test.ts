import { describe, expect, it } from 'vitest';
import {
  AutonomyGuardrailService,
  ManualClock,
  type GuardrailsInit,
  type GuardrailStore,
  type ToolCallBegin,
} from '../../src/index.js';
import { LOCAL_STORES, rejectedField, T0, trailOf } from '../support/service.js';

/** A call of decision `id`, setting 0.1 aside under reservation `${id}#1`. */
function call(id: string, after?: string): ToolCallBegin {
  const begin: ToolCallBegin = {
    confirm: { decisionId: id, operation: 'search', input: { q: id }, ttlMs: 60_000 },
    estimate: 0.1,
    reservationId: `${id}#1`,
  };
  return after === undefined ? begin : { ...begin, after };
}

async function on(makeStore: () => Promise<GuardrailStore>, init: GuardrailsInit) {
  const service = new AutonomyGuardrailService({ store: await makeStore(), clock: new ManualClock(T0) });
  await service.configureGuardrails('plan', init);
  return service;
}

const events = async (service: AutonomyGuardrailService) =>
  (await trailOf(service)).entries.map((e) => e.eventType);

describe.each(LOCAL_STORES)('beginToolCall after a reservation, on %s', (_name, makeStore) => {
  it('decides the call once that reservation is settled within the budget', async () => {
    const service = await on(makeStore, { toolBudget: 1 });
    const first = (await service.beginToolCall('plan', call('a')))?.reservation;

    const settled = first?.commit(0.1);
    const next = service.beginToolCall('plan', call('b', 'a#1'));

    expect([(await settled)?.eventType, (await next)?.reservation?.amount]).toEqual([
      'budget_committed',
      0.1,
    ]);
    expect((await service.getGuardrails('plan'))?.stepCount).toBe(2);
  });

  it('decides and records nothing, and answers null, while that reservation is open', async () => {
    const service = await on(makeStore, { toolBudget: 1 });
    await service.beginToolCall('plan', call('a'));
    const before = await events(service);

    const next = await service.beginToolCall('plan', call('b', 'a#1'));

    expect([next, await events(service), (await service.getGuardrails('plan'))?.stepCount]).toEqual([
      null,
      before,
      1,
    ]);
  });

  it('decides and records nothing when the settlement overran the budget', async () => {
    const service = await on(makeStore, { toolBudget: 1 });
    const first = (await service.beginToolCall('plan', call('a')))?.reservation;

    const settled = first?.commit(1.5);
    const next = service.beginToolCall('plan', call('b', 'a#1'));

    expect([(await settled)?.eventType, await next]).toEqual(['budget_overrun', null]);
    expect((await events(service)).at(-1)).toBe('budget_overrun');
    expect((await service.getGuardrails('plan'))?.stepCount).toBe(1);
  });

  it('decides the call after a reservation that was given back', async () => {
    const service = await on(makeStore, { toolBudget: 1 });
    const first = (await service.beginToolCall('plan', call('a')))?.reservation;
    await first?.release();

    const next = await service.beginToolCall('plan', call('b', 'a#1'));

    expect(next?.reservation?.amount).toBe(0.1);
  });

  it('refuses an after that is not a reservation id, naming the field', async () => {
    const service = await on(makeStore, { toolBudget: 1 });
    expect(await rejectedField(service.beginToolCall('plan', call('b', '')))).toBe('after');
  });
});
