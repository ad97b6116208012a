import { describe, expect, it } from 'vitest';
import {
  AutonomyGuardrailService,
  ManualClock,
  type GuardrailsInit,
  type GuardrailStore,
  type ToolCallBegin,
} from '../../src/index.js';
import { inputHash } from '../../src/service/hash.js';
import { LOCAL_STORES, rejectedField, T0, trailOf } from '../support/service.js';

const CALL: ToolCallBegin = {
  confirm: { decisionId: 'c1', operation: 'search', input: { q: 'x' }, ttlMs: 60_000, pauseClock: false },
  currentCalls: 0,
  estimate: 0.1,
  reservationId: 'tool:c1#1',
};

async function on(makeStore: () => Promise<GuardrailStore>, init: GuardrailsInit) {
  let n = 0;
  const service = new AutonomyGuardrailService({
    store: await makeStore(),
    clock: new ManualClock(T0),
    ids: () => `a${++n}`,
  });
  await service.configureGuardrails('plan', init);
  return service;
}

const events = async (service: AutonomyGuardrailService) =>
  (await trailOf(service)).entries.map((e) => e.eventType);

describe.each(LOCAL_STORES)('beginToolCall on %s', (_name, makeStore) => {
  it('records every check of a call it lets through, in order, and sets the estimate aside', async () => {
    const service = await on(makeStore, { toolBudget: 1, maxSteps: 5 });

    const begun = await service.beginToolCall('plan', {
      ...CALL,
      tool: { name: 'search', maxCallsPerPlan: 3 },
    });

    expect(begun?.reservation?.amount).toBe(0.1);
    expect(await events(service)).toEqual([
      'wall_clock_allowed',
      'step_allowed',
      'confirmation_not_required',
      'actor_tool_calls_allowed',
      'tool_calls_allowed',
      'budget_reserved',
    ]);
    const g = await service.getGuardrails('plan');
    expect([g?.stepCount, g?.toolCallCount('search'), g?.budgetReserved]).toEqual([1, 1, 0.1]);
  });

  it('records the same entries, with the same details, as the checks asked one by one', async () => {
    const fused = await on(makeStore, { toolBudget: 1, maxSteps: 5 });
    const oneByOne = await on(makeStore, { toolBudget: 1, maxSteps: 5 });

    await fused.beginToolCall('plan', { ...CALL, tool: { name: 'search', maxCallsPerPlan: 3 } });
    await oneByOne.checkWallClock('plan');
    await oneByOne.takeStep('plan');
    await oneByOne.requestConfirmation('plan', CALL.confirm);
    await oneByOne.checkActorToolCalls('plan', 0);
    await oneByOne.checkToolCalls('plan', 'search', 3);
    await oneByOne.reserveBudget('plan', 0.1, { reservationId: 'tool:c1#1' });

    const json = async (s: AutonomyGuardrailService) => (await trailOf(s)).entries.map((e) => e.toJSON());
    expect(await json(fused)).toEqual(await json(oneByOne));
  });

  it("leaves out the check of the invocation's tool calls when no count is given", async () => {
    const service = await on(makeStore, { toolBudget: 1, actorLimits: { maxToolCallsPerInvocation: 1 } });
    const { currentCalls: _none, ...call } = CALL;

    const begun = await service.beginToolCall('plan', call);

    expect(begun?.reservation?.amount).toBe(0.1);
    expect(await events(service)).toEqual([
      'wall_clock_allowed',
      'step_allowed',
      'confirmation_not_required',
      'budget_reserved',
    ]);
  });

  it('stops at the first check that refuses, recording it and nothing after it', async () => {
    const service = await on(makeStore, { toolBudget: 1, maxSteps: 1 });
    await service.takeStep('plan');

    const begun = await service.beginToolCall('plan', CALL);

    expect([begun?.check.eventType, begun?.reservation]).toEqual(['step_blocked', undefined]);
    expect((await events(service)).slice(1)).toEqual(['wall_clock_allowed', 'step_blocked']);
    expect((await service.getGuardrails('plan'))?.budgetReserved).toBe(0);
  });

  it('opens the approval of a call a person must confirm, its step taken, nothing reserved', async () => {
    const service = await on(makeStore, { toolBudget: 1, requiredConfirmations: ['search'] });

    const begun = await service.beginToolCall('plan', CALL);

    expect(begun?.approval).toMatchObject({ id: 'a1', decisionId: 'c1', status: 'pending' });
    expect((await service.getGuardrails('plan'))?.stepCount).toBe(1);
    expect((await service.getGuardrails('plan'))?.budgetReserved).toBe(0);
  });

  it('counts the step and the tool call of a call the budget refuses', async () => {
    const service = await on(makeStore, { toolBudget: 0.05 });

    const begun = await service.beginToolCall('plan', {
      ...CALL,
      tool: { name: 'search', maxCallsPerPlan: 3 },
    });

    expect(begun?.check.eventType).toBe('budget_blocked');
    const g = await service.getGuardrails('plan');
    expect([g?.stepCount, g?.toolCallCount('search')]).toEqual([1, 1]);
  });

  it('lets three of ten calls made at once through a budget for three', async () => {
    const service = await on(makeStore, { toolBudget: 0.3 });
    const calls = Array.from({ length: 10 }, (_, i) =>
      service.beginToolCall('plan', {
        ...CALL,
        confirm: { ...CALL.confirm, decisionId: `c${i}` },
        reservationId: `tool:c${i}#1`,
      }),
    );

    const begun = await Promise.all(calls);

    expect(begun.filter((b) => b?.reservation !== undefined)).toHaveLength(3);
  });

  it('resolves null for a plan that is not configured, writing nothing', async () => {
    const service = await on(makeStore, {});

    expect(await service.beginToolCall('elsewhere', CALL)).toBeNull();
  });

  it('refuses a negative count of the invocation’s calls, naming the field', async () => {
    const service = await on(makeStore, {});

    expect(await rejectedField(service.beginToolCall('plan', { ...CALL, currentCalls: -1 }))).toBe(
      'current_calls',
    );
  });

  it('names the call in every entry of its checks when asked to record it', async () => {
    const service = await on(makeStore, {});

    await service.beginToolCall('plan', {
      ...CALL,
      confirm: { ...CALL.confirm, toolName: 'search', input: { tool: 'search', input: { q: 'x' } } },
      recordCall: true,
    });

    const hash = inputHash({ tool: 'search', input: { q: 'x' } });
    for (const e of (await trailOf(service)).entries) {
      expect(e.details).toMatchObject({ tool: 'search', input_hash: hash });
    }
  });

  it('refuses a recordCall that is not a boolean, naming the field', async () => {
    const service = await on(makeStore, {});

    expect(
      await rejectedField(
        service.beginToolCall('plan', { ...CALL, recordCall: 'yes' as unknown as boolean }),
      ),
    ).toBe('recordCall');
  });
});

describe.each(LOCAL_STORES)('beginToolCall of a call asked for already, on %s', (_name, makeStore) => {
  const ASKED = { requiredConfirmations: ['search'] };
  const ANN = { by: 'ann', reason: 'ok' };

  /** The service with the call asked for (approval a1), and decided as `decide` says. */
  async function asked(init: GuardrailsInit, decide?: 'approve' | 'deny') {
    const service = await on(makeStore, { ...ASKED, ...init });
    await service.beginToolCall('plan', CALL);
    if (decide === 'approve') await service.approve('a1', ANN);
    if (decide === 'deny') await service.deny('a1', ANN);
    return service;
  }

  it('uses the grant in place of the step and the confirmation, with the reservation', async () => {
    const service = await asked({ toolBudget: 1 }, 'approve');
    const before = (await events(service)).length;

    const begun = await service.beginToolCall('plan', { ...CALL, approvalId: 'a1' });

    expect(begun?.reservation?.amount).toBe(0.1);
    expect((await events(service)).slice(before)).toEqual([
      'wall_clock_allowed',
      'confirmation_grant_used',
      'actor_tool_calls_allowed',
      'budget_reserved',
    ]);
    expect((await service.getApproval('a1'))?.status).toBe('used');
    expect((await service.getGuardrails('plan'))?.stepCount).toBe(1);
  });

  it('leaves the approval approved when the budget refuses the call', async () => {
    const service = await asked({ toolBudget: 0.05 }, 'approve');

    const begun = await service.beginToolCall('plan', { ...CALL, approvalId: 'a1' });

    expect(begun?.check.eventType).toBe('budget_blocked');
    expect((await service.getApproval('a1'))?.status).toBe('approved');
    expect(await events(service)).not.toContain('confirmation_grant_used');
  });

  it("starts the plan's clock again when a call its budget refuses finds its approval decided", async () => {
    const service = await on(makeStore, { ...ASKED, toolBudget: 0.05 });
    await service.beginToolCall('plan', { ...CALL, confirm: { ...CALL.confirm, pauseClock: true } });
    await service.approve('a1', ANN);
    const paused = (await service.getGuardrails('plan'))?.pausedSince;

    await service.beginToolCall('plan', {
      ...CALL,
      confirm: { ...CALL.confirm, pauseClock: true },
      approvalId: 'a1',
    });

    expect([paused === null, (await service.getGuardrails('plan'))?.pausedSince]).toEqual([false, null]);
  });

  it('refuses a call whose approval is pending, with the approval, and records the claim', async () => {
    const service = await asked({});

    const begun = await service.beginToolCall('plan', { ...CALL, approvalId: 'a1' });

    expect([begun?.check.eventType, begun?.approval?.id]).toEqual(['confirmation_required', 'a1']);
    expect((await events(service)).at(-1)).toBe('confirmation_required');
    expect(begun?.reservation).toBeUndefined();
  });

  it('refuses a call a person denied, without an approval to wait for', async () => {
    const service = await asked({}, 'deny');

    const begun = await service.beginToolCall('plan', { ...CALL, approvalId: 'a1' });

    expect([begun?.check.eventType, begun?.approval]).toEqual(['confirmation_denied', undefined]);
  });

  it('refuses an approval id that is not a runtime key, naming the field', async () => {
    const service = await asked({});

    expect(await rejectedField(service.beginToolCall('plan', { ...CALL, approvalId: '' }))).toBe(
      'approvalId',
    );
  });
});

/** A call of decision `id`, setting 0.1 aside under reservation `${id}#1`. */
function call(id: string, after?: string): ToolCallBegin {
  const begin: ToolCallBegin = {
    confirm: { decisionId: id, operation: 'search', input: { q: id }, ttlMs: 60_000 },
    estimate: 0.1,
    reservationId: `${id}#1`,
  };
  return after === undefined ? begin : { ...begin, after };
}

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

describe.each(LOCAL_STORES)('refuseToolCall on %s', (_name, makeStore) => {
  it('records a refusal with a limit of 0, the tool and its input’s hash, without a step', async () => {
    const service = await on(makeStore, { maxSteps: 5 });

    const check = await service.refuseToolCall('plan', {
      tool: 'rm',
      input: { path: '/' },
      reason: 'hidden',
    });

    expect(check).toMatchObject({
      allowed: false,
      eventType: 'tool_calls_blocked',
      limit: 0,
      reason: 'hidden',
    });
    const [entry, ...more] = (await trailOf(service)).entries;
    expect(more).toEqual([]);
    expect(entry?.details).toMatchObject({
      tool: 'rm',
      input_hash: inputHash({ tool: 'rm', input: { path: '/' } }),
    });
    expect((await service.getGuardrails('plan'))?.stepCount).toBe(0);
  });

  it('refuses an empty reason, naming the field', async () => {
    const service = await on(makeStore, {});

    expect(await rejectedField(service.refuseToolCall('plan', { tool: 'rm', reason: '' }))).toBe('reason');
  });
});
