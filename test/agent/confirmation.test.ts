import { describe, expect, it } from 'vitest';
import { RunGuard } from '../../src/index.js';
import { trailOf } from '../support/service.js';
import { counted, eventTypes, guarded, LOCAL_STORES, PLAN, type GuardOptions } from './support.js';

const DEPLOY = { requiredConfirmations: ['deploy'] };
const ANN = { by: 'ann', reason: 'reviewed' };

describe.each(LOCAL_STORES)('RunGuard confirmations on %s', (_name, makeStore) => {
  it('returns the same pending approval for every call with one tool call id', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY);
    const call = { toolCallId: 'c1', toolName: 'deploy', input: { to: 'prod' }, run: () => 'done' };
    const first = await guard.toolCall(call);
    const again = await guard.toolCall(call);
    expect(first.allowed === false && first.approval?.id).toBe('a1');
    expect(again.allowed === false && again.approval?.id).toBe('a1');
    expect(await service.listApprovals({ planId: PLAN })).toHaveLength(1);
    expect((await eventTypes(service)).filter((t) => t === 'step_allowed')).toHaveLength(1);
  });

  it('shows the tool name and a preview of the input on the pending approval of a denied call', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY);
    const input = { to: 'prod', replicas: 3 };
    const out = await guard.toolCall({ toolCallId: 'c1', toolName: 'deploy', input, run: () => 'done' });
    const shown = { toolName: 'deploy', inputPreview: '{"replicas":3,"to":"prod"}' };
    expect(out.allowed === false && out.approval).toMatchObject(shown);
    expect(await service.findApproval(PLAN, 'c1')).toMatchObject(shown);
  });

  it('previews the input of a call that has none as null', async () => {
    const { guard } = await guarded(makeStore, DEPLOY);
    const out = await guard.toolCall({ toolCallId: 'c1', toolName: 'deploy', run: () => 'done' });
    expect(out.allowed === false && out.approval?.inputPreview).toBe('null');
  });

  it('opens one approval for parallel calls with one tool call id', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY);
    const call = { toolCallId: 'c1', toolName: 'deploy', run: () => 'done' };
    await Promise.all([guard.toolCall(call), guard.toolCall(call), guard.toolCall(call)]);
    expect(await service.listApprovals({ planId: PLAN })).toHaveLength(1);
  });

  it('finds the pending approval of a call id asked for by an earlier guard of the plan', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY);
    const call = { toolCallId: 'c1', toolName: 'deploy', run: () => 'done' };
    await guard.toolCall(call);
    const restarted = new RunGuard({ service, planId: PLAN });
    const again = await restarted.toolCall(call);
    expect(again.allowed === false && again.approval?.id).toBe('a1');
    expect(await service.listApprovals({ planId: PLAN })).toHaveLength(1);
  });

  it('runs an approved call by using its grant', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY);
    const tool = counted('deployed');
    const call = { toolCallId: 'c1', toolName: 'deploy', input: { to: 'prod' }, run: tool.run };
    await guard.toolCall(call);
    await service.approve('a1', ANN);
    const out = await guard.toolCall(call);
    expect(out).toEqual({ allowed: true, output: 'deployed', cost: 0 });
    expect(tool.calls).toBe(1);
    expect((await service.getApproval('a1'))?.status).toBe('used');
    expect(await eventTypes(service)).toContain('confirmation_grant_used');
  });

  it('refuses a grant for a call whose input changed', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY);
    const tool = counted('deployed');
    await guard.toolCall({ toolCallId: 'c1', toolName: 'deploy', input: { to: 'staging' }, run: tool.run });
    await service.approve('a1', ANN);
    const out = await guard.toolCall({
      toolCallId: 'c1',
      toolName: 'deploy',
      input: { to: 'prod' },
      run: tool.run,
    });
    expect(out.allowed === false && out.check.eventType).toBe('confirmation_grant_refused');
    expect(out.allowed === false && out.reason).toContain('input changed');
    expect(tool.calls).toBe(0);
  });

  it('checks the grant against the input as it was when the call started', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY);
    const run = () => 'deployed';
    await guard.toolCall({ toolCallId: 'c1', toolName: 'deploy', input: { to: 'staging' }, run });
    await service.approve('a1', ANN);
    const input = { to: 'staging' };
    const call = guard.toolCall({ toolCallId: 'c1', toolName: 'deploy', input, run });
    input.to = 'prod';
    expect((await call).allowed).toBe(true);
  });

  it('refuses a grant for another tool with the same operation', async () => {
    const tools = { rm: { operation: 'delete' }, wipe: { operation: 'delete' } };
    const { guard, service } = await guarded(makeStore, { requiredConfirmations: ['delete'] }, { tools });
    const wipe = counted('wiped');
    await guard.toolCall({
      toolCallId: 'c1',
      toolName: 'rm',
      input: { path: '/tmp/x' },
      run: () => 'removed',
    });
    await service.approve('a1', ANN);
    const out = await guard.toolCall({
      toolCallId: 'c1',
      toolName: 'wipe',
      input: { path: '/tmp/x' },
      run: wipe.run,
    });
    expect(out.allowed === false && out.check.eventType).toBe('confirmation_grant_refused');
    expect(wipe.calls).toBe(0);
  });

  it('refuses a second use of a grant', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY);
    const tool = counted('deployed');
    const call = { toolCallId: 'c1', toolName: 'deploy', run: tool.run };
    await guard.toolCall(call);
    await service.approve('a1', ANN);
    await guard.toolCall(call);
    const second = await guard.toolCall(call);
    expect(second.allowed === false && second.check.eventType).toBe('confirmation_grant_refused');
    expect(second.allowed === false && second.reason).toContain('used already');
    expect(tool.calls).toBe(1);
  });

  it('denies a call a person denied', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY);
    const tool = counted('deployed');
    const call = { toolCallId: 'c1', toolName: 'deploy', run: tool.run };
    await guard.toolCall(call);
    await service.deny('a1', { by: 'ann', reason: 'not today' });
    const out = await guard.toolCall(call);
    expect(out.allowed === false && out.check.eventType).toBe('confirmation_denied');
    expect(tool.calls).toBe(0);
  });

  it('keeps the wall clock running while an approval is pending', async () => {
    const { guard, clock } = await guarded(makeStore, { ...DEPLOY, maxWallClockSeconds: 60 });
    await guard.toolCall({ toolCallId: 'c1', toolName: 'deploy', run: () => 'deployed' });
    clock.advance(60 * 60 * 1000);
    const tool = counted('found');
    const out = await guard.toolCall({ toolCallId: 'c2', toolName: 'search', run: tool.run });
    expect(out.allowed === false && out.check.eventType).toBe('wall_clock_blocked');
    expect(tool.calls).toBe(0);
  });

  it('asks a person for every call of a tool whose rule requires confirmation', async () => {
    const { guard } = await guarded(makeStore, {}, { tools: { shell: { requiresConfirmation: true } } });
    const out = await guard.toolCall({ toolCallId: 'c1', toolName: 'shell', run: () => 'x' });
    expect(out.allowed === false && out.approval?.operation).toBe('shell');
  });

  it('confirms a tool under the operation its rule names', async () => {
    const { guard } = await guarded(makeStore, DEPLOY, { tools: { kubectl: { operation: 'deploy' } } });
    const out = await guard.toolCall({ toolCallId: 'c1', toolName: 'kubectl', run: () => 'x' });
    expect(out.allowed === false && out.approval?.operation).toBe('deploy');
  });

  /**
   * A deploy costing 2 asked for, approved, and refused by a budget of 1 (`rules` the guard's tool rules):
   * the guard, the service, the tool, the call and the refusal.
   */
  async function approvedThenRefused(rules: GuardOptions = {}) {
    const { guard, service } = await guarded(makeStore, { ...DEPLOY, toolBudget: 1 }, rules);
    const tool = counted('deployed');
    const call = { toolCallId: 'c1', toolName: 'deploy', input: { to: 'prod' }, estimate: 2, run: tool.run };
    await guard.toolCall(call);
    await service.approve('a1', ANN);
    const refused = await guard.toolCall(call);
    return { guard, service, tool, call, refused };
  }

  it('leaves an approval approved when the budget refuses the approved call', async () => {
    const { service, tool, refused } = await approvedThenRefused();
    expect(refused.allowed === false && refused.check.eventType).toBe('budget_blocked');
    expect((await service.getApproval('a1'))?.status).toBe('approved');
    expect(await eventTypes(service)).not.toContain('confirmation_grant_used');
    expect(tool.calls).toBe(0);
  });

  it('runs an approved call once its budget allows it, after a refusal', async () => {
    const { guard, service, tool, call } = await approvedThenRefused();
    await service.configureGuardrails(PLAN, { ...DEPLOY, toolBudget: 5 });
    const out = await guard.toolCall(call);
    const again = await guard.toolCall(call);
    expect(out.allowed).toBe(true);
    expect(again.allowed === false && again.check.eventType).toBe('confirmation_grant_refused');
    expect(tool.calls).toBe(1);
    expect((await service.getApproval('a1'))?.status).toBe('used');
  });

  it('runs an approved call of a tool allowed once a plan after its budget refused it', async () => {
    const rules = { tools: { deploy: { maxCallsPerPlan: 1 } } };
    const { guard, service, tool, call } = await approvedThenRefused(rules);
    await service.configureGuardrails(PLAN, { ...DEPLOY, toolBudget: 5 });

    const out = await guard.toolCall(call);

    expect([out.allowed, tool.calls, (await service.getGuardrails(PLAN))?.toolCallCount('deploy')]).toEqual([
      true,
      1,
      1,
    ]);
  });

  it('leaves an approval approved when the calls of its tool refuse the approved call', async () => {
    const rules = { tools: { deploy: { maxCallsPerPlan: 1 } } };
    const { guard, service } = await guarded(makeStore, DEPLOY, rules);
    await guard.toolCall({ toolCallId: 'c0', toolName: 'search', run: () => 'x' });
    await guard.toolCall({ toolCallId: 'c1', toolName: 'deploy', input: 1, run: () => 'x' });
    await guard.toolCall({ toolCallId: 'c2', toolName: 'deploy', input: 2, run: () => 'x' });
    await service.approve('a1', ANN);
    await service.approve('a2', ANN);
    await guard.toolCall({ toolCallId: 'c1', toolName: 'deploy', input: 1, run: () => 'x' });
    const refused = await guard.toolCall({ toolCallId: 'c2', toolName: 'deploy', input: 2, run: () => 'x' });
    expect(refused.allowed === false && refused.check.eventType).toBe('tool_calls_blocked');
    expect((await service.getApproval('a2'))?.status).toBe('approved');
  });

  it('records the use of a grant with the checks of the call it let through, in order', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY);
    const call = { toolCallId: 'c1', toolName: 'deploy', run: () => 'deployed' };
    await guard.toolCall(call);
    await service.approve('a1', ANN);
    const before = (await eventTypes(service)).length;
    await guard.toolCall(call);
    expect((await eventTypes(service)).slice(before)).toEqual([
      'wall_clock_allowed',
      'confirmation_grant_used',
      'actor_tool_calls_allowed',
      'budget_reserved',
      'budget_committed',
    ]);
  });

  it('names the tool and the input hash in every check of a confirmed call before it runs', async () => {
    const { guard, service } = await guarded(makeStore, DEPLOY, { recordCalls: true });
    const call = { toolCallId: 'c1', toolName: 'deploy', input: { to: 'prod' }, run: () => 'deployed' };
    await guard.toolCall(call);
    await service.approve('a1', ANN);
    const before = (await trailOf(service, PLAN)).entries.length;
    await guard.toolCall(call);
    const all = (await trailOf(service, PLAN)).entries.slice(before);
    // Up to its reservation: what settles the call names the reservation, for any call.
    const entries = all.slice(0, all.findIndex((e) => e.eventType === 'budget_reserved') + 1);
    const asked = (await trailOf(service, PLAN)).entries[1]?.details;
    expect(entries.map((e) => e.details['tool'])).toEqual(entries.map(() => 'deploy'));
    expect(entries.map((e) => e.details['input_hash'])).toEqual(entries.map(() => asked?.['input_hash']));
    expect(typeof asked?.['input_hash']).toBe('string');
  });
});
