import { describe, expect, it } from 'vitest';
import { eventTypes, guarded, LOCAL_STORES, PLAN } from './support.js';

const DEPLOY = { requiredConfirmations: ['deploy'] };
const CALL = { toolCallId: 'c1', toolName: 'deploy', input: { to: 'prod' } };

describe.each(LOCAL_STORES)('RunGuard.approvalFor on %s', (_name, makeStore) => {
  it('opens the approval of a call that needs a person, taking its step', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY);

    const approval = await guard.approvalFor(CALL);

    expect(approval).toMatchObject({ id: 'a1', decisionId: 'c1', status: 'pending' });
    expect((await service.getGuardrails(PLAN))?.stepCount).toBe(1);
  });

  it('answers with the same approval however often it is asked, taking one step', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY);

    await Promise.all([guard.approvalFor(CALL), guard.approvalFor(CALL)]);
    const again = await guard.approvalFor(CALL);

    expect(again?.id).toBe('a1');
    expect(await service.listApprovals({ planId: PLAN })).toHaveLength(1);
    expect((await service.getGuardrails(PLAN))?.stepCount).toBe(1);
  });

  it('answers null for a call that needs no person, taking no step and writing nothing', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY);

    const approval = await guard.approvalFor({ ...CALL, toolName: 'read' });

    expect(approval).toBeNull();
    expect(await eventTypes(service)).toEqual([]);
    expect((await service.getGuardrails(PLAN))?.stepCount).toBe(0);
  });

  it('answers null for a call whose approval was asked under a list the plan no longer has', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY);
    await guard.approvalFor(CALL);
    await service.configureGuardrails(PLAN, {});

    expect(await guard.approvalFor(CALL)).toBeNull();
  });

  it('asks a person for a call that says it needs one, though the policy does not list it', async () => {
    const { guard } = await guarded(makeStore, {});

    const approval = await guard.approvalFor({ ...CALL, toolName: 'read', requiresConfirmation: true });

    expect(approval?.operation).toBe('read');
  });

  it('opens nothing when the steps ran out: the call itself answers with the denial', async () => {
    const { guard, service } = await guarded(makeStore, { ...DEPLOY, maxSteps: 1 });
    await guard.toolCall({ toolCallId: 'c0', toolName: 'read', run: () => 'ok' });

    expect(await guard.approvalFor(CALL)).toBeNull();
    expect(await service.listApprovals({ planId: PLAN })).toEqual([]);
  });

  it('asks anew for a call id used again with other input once its approval was used', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY);
    await service.approve((await guard.approvalFor(CALL))!.id, { by: 'ann' });
    await guard.toolCall({ ...CALL, run: () => 'deployed' });

    const again = await guard.approvalFor({ ...CALL, input: { to: 'staging' } });

    expect(again).toMatchObject({ id: 'a2', status: 'pending' });
  });

  it('asks anew for a call id used again with other input once its approval was denied', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY);
    await service.deny((await guard.approvalFor(CALL))!.id, { by: 'ann', reason: 'not now' });

    expect((await guard.approvalFor({ ...CALL, input: { to: 'staging' } }))?.id).toBe('a2');
  });

  it('keeps a used approval for the same call id and input: a replay is refused, not asked again', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY);
    await service.approve((await guard.approvalFor(CALL))!.id, { by: 'ann' });
    await guard.toolCall({ ...CALL, run: () => 'deployed' });

    const replay = await guard.toolCall({ ...CALL, run: () => 'deployed again' });

    expect(replay.allowed === false && replay.check.eventType).toBe('confirmation_grant_refused');
    expect(await service.listApprovals({ planId: PLAN })).toHaveLength(1);
  });

  it('lets the call use the grant of the approval it opened, without a second step', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY);
    const approval = await guard.approvalFor(CALL);
    await service.approve(approval!.id, { by: 'ann' });

    const done = await guard.toolCall({ ...CALL, run: () => 'deployed' });

    expect(done).toMatchObject({ allowed: true, output: 'deployed' });
    expect((await service.getGuardrails(PLAN))?.stepCount).toBe(1);
  });
});

describe.each(LOCAL_STORES)('RunGuard.limitReached on %s', (_name, makeStore) => {
  it('is null while the run may go on', async () => {
    const { guard } = await guarded(makeStore, { maxSteps: 3, toolBudget: 1, maxWallClockSeconds: 60 });

    expect(await guard.limitReached()).toBeNull();
  });

  it('names the step limit once every step is taken', async () => {
    const { guard } = await guarded(makeStore, { maxSteps: 1 });
    await guard.toolCall({ toolCallId: 'c1', toolName: 'read', run: () => 'ok' });

    expect((await guard.limitReached())?.eventType).toBe('step_blocked');
  });

  it('names the wall clock once it ran out', async () => {
    const { guard, clock } = await guarded(makeStore, { maxWallClockSeconds: 10 });
    await guard.toolCall({ toolCallId: 'c1', toolName: 'read', run: () => 'ok' });
    clock.advance(10_000);

    expect((await guard.limitReached())?.eventType).toBe('wall_clock_blocked');
  });

  it('names the budget once what is left cannot cover the last model call', async () => {
    const models = { m: { input: 1_000_000, output: 0 } }; // one unit per token
    const { guard } = await guarded(makeStore, { toolBudget: 3 }, { models });
    const run = () => ({ output: 'ok', usage: { inputTokens: 2, outputTokens: 0 } });
    await guard.modelCall({ modelId: 'm', estimate: { inputTokens: 2, maxOutputTokens: 0 }, run });

    expect((await guard.limitReached())?.eventType).toBe('budget_blocked');
  });

  it('counts what the last step added to the prompt into the next model call', async () => {
    const models = { m: { input: 1_000_000, output: 0 } }; // one unit per token
    const { guard } = await guarded(makeStore, { toolBudget: 5 }, { models });
    const run = () => ({ output: 'ok', usage: { inputTokens: 2, outputTokens: 0 } });
    await guard.modelCall({ modelId: 'm', estimate: { inputTokens: 2, maxOutputTokens: 0 }, run });

    expect(await guard.limitReached()).toBeNull();
    expect((await guard.limitReached({ moreInputTokens: 2 }))?.eventType).toBe('budget_blocked');
  });

  it('names the budget once none is left, before any model call', async () => {
    const { guard } = await guarded(makeStore, { toolBudget: 1 }, { tools: { t: { costPerCall: 1 } } });
    await guard.toolCall({ toolCallId: 'c1', toolName: 't', run: () => 'ok' });

    expect((await guard.limitReached())?.eventType).toBe('budget_blocked');
  });

  it('does not count a reservation past its time', async () => {
    const { guard, service, clock } = await guarded(makeStore, { toolBudget: 1 });
    await service.reserveBudget(PLAN, 1, { reservationId: 'r1' });
    clock.advance(24 * 60 * 60 * 1000);

    expect(await guard.limitReached()).toBeNull();
  });

  it('refuses a negative moreInputTokens, naming the field', async () => {
    const { guard } = await guarded(makeStore, {});

    await expect(guard.limitReached({ moreInputTokens: -1 })).rejects.toThrow(/moreInputTokens/);
  });

  it('writes nothing to the log', async () => {
    const { guard, service } = await guarded(makeStore, { maxSteps: 1 });
    await guard.toolCall({ toolCallId: 'c0', toolName: 'read', run: () => 'ok' });
    const before = await eventTypes(service);

    await guard.limitReached();

    expect(await eventTypes(service)).toEqual(before);
  });
});
