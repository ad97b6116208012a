import { describe, expect, it } from 'vitest';
import {
  AutonomyGuardrailService,
  ManualClock,
  type GuardrailsInit,
  type GuardrailStore,
  type ToolCallOpen,
} from '../../src/index.js';
import { LOCAL_STORES, rejectedField, T0, trailOf } from '../support/service.js';

const CALL: ToolCallOpen = {
  currentCalls: 0,
  operations: ['search', 'export'],
  tool: { name: 'search', maxCallsPerPlan: 3 },
  estimate: 0.1,
  reservationId: 'd1#1/0',
};

async function on(makeStore: () => Promise<GuardrailStore>, init: GuardrailsInit | null) {
  const service = new AutonomyGuardrailService({ store: await makeStore(), clock: new ManualClock(T0) });
  if (init !== null) await service.configureGuardrails('plan', init);
  return service;
}

const events = async (service: AutonomyGuardrailService) =>
  (await trailOf(service)).entries.map((e) => e.eventType);

describe.each(LOCAL_STORES)('openToolCall on %s', (_name, makeStore) => {
  it('records the same entries, with the same details, as the checks asked one by one', async () => {
    const fused = await on(makeStore, { toolBudget: 1 });
    const oneByOne = await on(makeStore, { toolBudget: 1 });

    const opened = await fused.openToolCall('plan', CALL);
    await oneByOne.checkActorToolCalls('plan', 0);
    await oneByOne.checkConfirmation('plan', 'search');
    await oneByOne.checkConfirmation('plan', 'export');
    await oneByOne.checkToolCalls('plan', 'search', 3);
    await oneByOne.reserveBudget('plan', 0.1, { reservationId: 'd1#1/0' });

    expect(opened?.reservation?.amount).toBe(0.1);
    const json = async (s: AutonomyGuardrailService) => (await trailOf(s)).entries.map((e) => e.toJSON());
    expect(await json(fused)).toEqual(await json(oneByOne));
  });

  it('refuses a call whose operation needs a person, opening no approval and setting nothing aside', async () => {
    const service = await on(makeStore, { toolBudget: 1, requiredConfirmations: ['export'] });

    const opened = await service.openToolCall('plan', CALL);

    expect([opened?.check.eventType, opened?.reservation]).toEqual(['confirmation_required', undefined]);
    expect(await events(service)).toEqual([
      'actor_tool_calls_allowed',
      'confirmation_not_required',
      'confirmation_required',
    ]);
    expect(await service.listApprovals({ planId: 'plan' })).toEqual([]);
    expect((await service.getGuardrails('plan'))?.budgetReserved).toBe(0);
  });

  it('refuses an operation a per-tool rule makes need a person, whatever the plan says', async () => {
    const service = await on(makeStore, { toolBudget: 1 });

    const opened = await service.openToolCall('plan', { ...CALL, alwaysRequire: ['search'] });

    expect(opened?.check.eventType).toBe('confirmation_required');
  });

  it('stops at the invocation’s tool calls, recording that check alone', async () => {
    const service = await on(makeStore, { toolBudget: 1, actorLimits: { maxToolCallsPerInvocation: 2 } });

    const opened = await service.openToolCall('plan', { ...CALL, currentCalls: 2 });

    expect(opened?.check.eventType).toBe('actor_tool_calls_blocked');
    expect(await events(service)).toEqual(['actor_tool_calls_blocked']);
  });

  it('checks the wall clock first when asked, and refuses the call once it ran out', async () => {
    const clock = new ManualClock(T0);
    const service = new AutonomyGuardrailService({ store: await makeStore(), clock });
    await service.configureGuardrails('plan', { toolBudget: 1, maxWallClockSeconds: 60 });
    await service.markStarted('plan');
    clock.advance(60_000);

    const opened = await service.openToolCall('plan', { ...CALL, wallClock: true });

    expect([opened?.check.eventType, opened?.wallClock?.eventType, opened?.reservation]).toEqual([
      'wall_clock_blocked',
      'wall_clock_blocked',
      undefined,
    ]);
    expect(await events(service)).toEqual(['wall_clock_blocked']);
  });

  it('gives the allowed wall-clock check with the reservation when asked', async () => {
    const service = await on(makeStore, { toolBudget: 1, maxWallClockSeconds: 60 });

    const opened = await service.openToolCall('plan', { ...CALL, wallClock: true });

    expect([opened?.wallClock?.eventType, opened?.reservation?.amount]).toEqual(['wall_clock_allowed', 0.1]);
    expect((await events(service))[0]).toBe('wall_clock_allowed');
  });

  it('resolves null for a plan with no guardrails, recording nothing', async () => {
    const service = await on(makeStore, null);

    expect(await service.openToolCall('plan', CALL)).toBeNull();
  });

  it('refuses operations that are not a list, naming the field, and records nothing', async () => {
    const service = await on(makeStore, { toolBudget: 1 });

    const field = await rejectedField(
      service.openToolCall('plan', { ...CALL, operations: 'search' as never }),
    );

    expect(field).toBe('operations');
    expect(await events(service)).toEqual([]);
  });
});
