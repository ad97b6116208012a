import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AutonomyGuardrailService,
  ManualClock,
  type GuardrailsInit,
  type GuardrailStore,
} from '../../src/index.js';
import { guardrailsOf, LOCAL_STORES, rejectedField, T0, trailOf } from '../support/service.js';

// A lone surrogate (half of a UTF-16 pair) has no UTF-8 form, and RFC 8785 makes it an error: a log
// holding one could be verified by no other implementation. Each edge refuses it before anything is kept.
const LONE = 'dep\udc00loy';
const INPUT = { target: 'prod' };
const REQUEST = { decisionId: 'd1', operation: 'deploy', input: INPUT, ttlMs: 60_000 };

/** A service on a manual clock whose approval ids are a1, a2, …, with `plan` configured by `init`. */
async function configured(init: GuardrailsInit = { requiredConfirmations: ['deploy'] }) {
  let n = 0;
  const service = new AutonomyGuardrailService({ clock: new ManualClock(T0), ids: () => `a${++n}` });
  await service.configureGuardrails('plan', init);
  return service;
}

async function entryCount(service: AutonomyGuardrailService): Promise<number> {
  return (await trailOf(service)).entries.length;
}

describe('operation names holding a lone surrogate', () => {
  it('checkConfirmation refuses one, naming operation, and records nothing', async () => {
    const service = await configured();
    expect(await rejectedField(service.checkConfirmation('plan', LONE))).toBe('operation');
    expect(await entryCount(service)).toBe(0);
  });

  it('checkConfirmation refuses one on an unconfigured plan too', async () => {
    const service = new AutonomyGuardrailService({ clock: new ManualClock(T0) });
    expect(await rejectedField(service.checkConfirmation('plan', LONE))).toBe('operation');
  });

  it('configureGuardrails refuses one among the required confirmations and keeps the old list', async () => {
    const service = await configured();
    const field = await rejectedField(
      service.configureGuardrails('plan', { requiredConfirmations: ['pay', LONE] }),
    );
    expect(field).toBe('required_confirmations[1]');
    expect((await guardrailsOf(service)).requiredConfirmations).toEqual(['deploy']);
  });

  it('requestConfirmation refuses one, naming operation[0], and opens no approval', async () => {
    const service = await configured();
    const field = await rejectedField(service.requestConfirmation('plan', { ...REQUEST, operation: [LONE] }));
    expect(field).toBe('operation[0]');
    expect(await service.listApprovals()).toEqual([]);
  });
});

describe('approvals holding a lone surrogate', () => {
  it('approve refuses a decider holding one, naming by, and the approval stays pending', async () => {
    const service = await configured();
    await service.requestConfirmation('plan', REQUEST);
    expect(await rejectedField(service.approve('a1', { by: 'ann\ud800' }))).toBe('by');
    expect((await service.getApproval('a1'))?.status).toBe('pending');
  });

  it('deny refuses a reason holding one, naming reason, and the approval stays pending', async () => {
    const service = await configured();
    await service.requestConfirmation('plan', REQUEST);
    expect(await rejectedField(service.deny('a1', { by: 'ann', reason: 'no\udfff' }))).toBe('reason');
    expect((await service.getApproval('a1'))?.status).toBe('pending');
  });

  it('requestConfirmation refuses a decision id holding one, naming decisionId', async () => {
    const service = await configured();
    const field = await rejectedField(service.requestConfirmation('plan', { ...REQUEST, decisionId: LONE }));
    expect(field).toBe('decisionId');
  });

  it('useGrant refuses a decision id holding one, naming decisionId, and records nothing', async () => {
    const service = await configured();
    await service.requestConfirmation('plan', REQUEST);
    await service.approve('a1', { by: 'ann' });
    const before = await entryCount(service);
    const use = service.useGrant('plan', 'a1', { decisionId: LONE, operation: 'deploy', input: INPUT });
    expect(await rejectedField(use)).toBe('decisionId');
    expect(await entryCount(service)).toBe(before);
  });

  it('useGrant refuses a decision id that is not a string, naming decisionId', async () => {
    const service = await configured();
    const use = { decisionId: 7 as unknown as string, operation: 'deploy', input: INPUT };
    expect(await rejectedField(service.useGrant('plan', 'a1', use))).toBe('decisionId');
  });
});

describe('tool inputs holding a lone surrogate', () => {
  it('requestConfirmation refuses one, naming its path, and opens no approval', async () => {
    const service = await configured();
    const input = { target: LONE };
    expect(await rejectedField(service.requestConfirmation('plan', { ...REQUEST, input }))).toBe(
      'input.target',
    );
    expect(await service.listApprovals()).toEqual([]);
  });

  it('useGrant refuses one, naming its path, and the grant stays unused', async () => {
    const service = await configured();
    await service.requestConfirmation('plan', REQUEST);
    await service.approve('a1', { by: 'ann' });
    const use = service.useGrant('plan', 'a1', { decisionId: 'd1', operation: 'deploy', input: [LONE] });
    expect(await rejectedField(use)).toBe('input[0]');
    expect((await service.getApproval('a1'))?.status).toBe('approved');
  });

  it('requestConfirmation refuses a key holding one, naming the object it is in', async () => {
    const service = await configured();
    const input = { nested: { ['\ud800']: 1 } };
    expect(await rejectedField(service.requestConfirmation('plan', { ...REQUEST, input }))).toBe(
      'input.nested',
    );
  });
});

// A tool's error is foreign text the service only records: a lone half in it is kept as U+FFFD rather
// than refused, so that a release always gives its reservation back.
describe.each(LOCAL_STORES)('tool errors holding a lone surrogate, on %s', (_name, newStore) => {
  const ERROR = { error: 'boom \ud800' };
  const KEPT = 'boom \ufffd';
  let store: GuardrailStore;
  let service: AutonomyGuardrailService;
  beforeEach(async () => {
    store = await newStore();
    service = new AutonomyGuardrailService({ store, clock: new ManualClock(T0) });
    await service.configureGuardrails('plan', { toolBudget: 10, actorLimits: { maxRetriesPerFailure: 2 } });
  });
  afterEach(() => store.close());

  /** The `error` of the plan's audit entries of one event type, oldest first. */
  async function errorsOf(eventType: string): Promise<unknown[]> {
    const entries = (await trailOf(service)).entries.filter((e) => e.eventType === eventType);
    return entries.map((e) => e.details['error']);
  }

  it('checkRetries records the error with U+FFFD for the lone half', async () => {
    await service.checkRetries('plan', 0, ERROR);
    expect(await errorsOf('retry_allowed')).toEqual([KEPT]);
  });

  it('release records the error with U+FFFD for the lone half', async () => {
    await (await service.reserveBudget('plan', 4, { reservationId: 'r1' })).release(ERROR);
    expect(await errorsOf('budget_released')).toEqual([KEPT]);
  });

  it('release gives the reservation back', async () => {
    await (await service.reserveBudget('plan', 4, { reservationId: 'r1' })).release(ERROR);
    expect((await guardrailsOf(service)).budgetReserved).toBe(0);
  });

  it('settleReservation records the error with U+FFFD for the lone half', async () => {
    await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    await service.settleReservation('plan', 'r1', null, ERROR);
    expect(await errorsOf('budget_released')).toEqual([KEPT]);
  });

  it('settleReservation gives the reservation back', async () => {
    await service.reserveBudget('plan', 4, { reservationId: 'r1' });
    await service.settleReservation('plan', 'r1', null, ERROR);
    expect((await guardrailsOf(service)).budgetReserved).toBe(0);
  });
});
