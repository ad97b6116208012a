// The model a reservation is for: recorded with the reservation and with its settlement, so that what a
// model call spent can be told apart by model.
import { describe, expect, it } from 'vitest';
import { GuardrailValidationError, type AutonomyGuardrailService } from '../../src/index.js';
import { configured, trailOf } from '../support/service.js';

async function detailsOf(service: AutonomyGuardrailService) {
  return (await trailOf(service)).entries.map((e) => [e.eventType, e.details]);
}

describe('the model of a reservation', () => {
  it('records the model in the budget_reserved entry', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 4, { reservationId: 'r1', model: 'gpt-x' });
    expect(await detailsOf(service)).toEqual([
      [
        'budget_reserved',
        { reservation_id: 'r1', amount: 4, spent: 0, reserved: 4, limit: 10, model: 'gpt-x' },
      ],
    ]);
  });

  it('records the model in the budget_blocked entry of a reservation the budget refuses', async () => {
    const { service } = await configured({ toolBudget: 1 });
    await service.reserveBudget('plan', 4, { reservationId: 'r1', model: 'gpt-x' });
    const [entry] = (await trailOf(service)).entries;
    expect([entry?.eventType, entry?.details['model']]).toEqual(['budget_blocked', 'gpt-x']);
  });

  it('records the model in the commit of the reservation', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1', model: 'gpt-x' });
    await r.commit(3, { note: 'why' });
    expect((await detailsOf(service))[1]).toEqual([
      'budget_committed',
      { reservation_id: 'r1', reserved: 4, actual: 3, spent: 3, limit: 10, note: 'why', model: 'gpt-x' },
    ]);
  });

  it('records the model in the release of the reservation', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1', model: 'gpt-x' });
    await r.release({ error: 'reset' });
    expect((await detailsOf(service))[1]).toEqual([
      'budget_released',
      { reservation_id: 'r1', amount: 4, error: 'reset', model: 'gpt-x' },
    ]);
  });

  it('keeps the model on the reservation handle', async () => {
    const { service } = await configured({ toolBudget: 10 });
    const r = await service.reserveBudget('plan', 4, { reservationId: 'r1', model: 'gpt-x' });
    expect(r.model).toBe('gpt-x');
  });

  it.each([
    ['empty', ''],
    ['holding a control character', 'gpt\u0000x'],
    ['longer than 256 characters', 'm'.repeat(257)],
    ['a number', 7],
  ])('refuses a model that is %s, naming model and the value, and records nothing', async (_l, model) => {
    const { service } = await configured({ toolBudget: 10 });
    const options = { reservationId: 'r1', model } as { reservationId: string; model: string };
    const error = await service.reserveBudget('plan', 1, options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GuardrailValidationError);
    expect((error as GuardrailValidationError).field).toBe('model');
    expect((error as Error).message).toContain(JSON.stringify(model).slice(0, 20));
    expect((await trailOf(service)).size).toBe(0);
  });

  it('refuses a bad model given to a settlement, naming options.model, and settles nothing', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    const settling = service.settleReservation('plan', 'r1', 3, { model: '' });
    const error = await settling.catch((e: unknown) => e);
    expect((error as GuardrailValidationError).field).toBe('options.model');
    expect((await trailOf(service)).size).toBe(1);
  });
});
