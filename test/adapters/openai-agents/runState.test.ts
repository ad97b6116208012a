// A paused Agents SDK run kept in the leash store, decided in leash and resumed from it.
import { run, tool } from '@openai/agents';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  applyLeashDecisions,
  resumeRunState,
  saveRunState,
} from '../../../src/adapters/openai-agents/index.js';
import { GuardrailValidationError, type GuardrailsInit } from '../../../src/index.js';
import { LOCAL_STORES } from '../../agent/support.js';
import { scripted, setUp, writes } from './support.js';

const confirmed: GuardrailsInit = { requiredConfirmations: ['write'] };

describe.each(LOCAL_STORES)('a paused run in the store on %s', (_name, makeStore) => {
  async function paused() {
    const set = await setUp(makeStore, confirmed, scripted([writes('a')]));
    const result = await run(set.agent, 'go');
    const approval = await set.service.findApproval('plan', 'call-a-0');
    return { ...set, result, approvalId: approval?.id as string };
  }

  it('saves a run waiting on interruptions as the plan’s document, awaiting confirmation', async () => {
    const { service, guard, result } = await paused();

    await saveRunState(result.state, { guard });

    const saved = await service.store.getPlanDocument('plan');
    expect(saved).toMatchObject({ phase: 'awaiting_confirmation', revision: 1 });
    expect(saved?.body['format']).toBe('leash.openai-agents.run-state');
  });

  it('resumes the saved run once a person approved, and the call runs once', async () => {
    const { agent, service, guard, ran, result, approvalId } = await paused();
    await saveRunState(result.state, { guard });
    await service.approve(approvalId, { by: 'ann' });

    const state = await resumeRunState(agent, { guard });
    const resumed = await run(agent, state!);

    expect(ran).toEqual(['a']);
    expect(resumed.finalOutput).toBe('done');
    expect((await service.store.getPlanDocument('plan'))?.phase).toBe('resumed');
  });

  it('resumes nothing while nobody decided, and keeps the run saved', async () => {
    const { agent, service, guard, result } = await paused();
    await saveRunState(result.state, { guard });

    expect(await resumeRunState(agent, { guard })).toBeNull();
    expect((await service.store.getPlanDocument('plan'))?.phase).toBe('awaiting_confirmation');
  });

  it('lets one of two processes resume the run, never both', async () => {
    const { agent, service, guard, result, approvalId } = await paused();
    await saveRunState(result.state, { guard });
    await service.approve(approvalId, { by: 'ann' });

    const both = await Promise.all([resumeRunState(agent, { guard }), resumeRunState(agent, { guard })]);

    expect(both.filter((s) => s !== null)).toHaveLength(1);
  });

  it('resumes a denied call as rejected: it does not run and the run goes on', async () => {
    const { agent, service, guard, ran, result, approvalId } = await paused();
    await saveRunState(result.state, { guard });
    await service.deny(approvalId, { by: 'ann', reason: 'not today' });

    const resumed = await run(agent, (await resumeRunState(agent, { guard }))!);

    expect(ran).toEqual([]);
    expect(resumed.finalOutput).toBe('done');
  });

  it('resumes once the guarded calls are decided, leaving the calls of tools it does not guard to the app', async () => {
    const deploy = tool({
      name: 'deploy',
      description: 'deploy',
      parameters: z.object({}),
      needsApproval: true,
      execute: async () => 'deployed',
    });
    const both = { calls: [...writes('a').calls!, { id: 'd1', name: 'deploy', args: {} }] };
    const { agent, service, guard, ran } = await setUp(makeStore, confirmed, scripted([both]));
    agent.tools.push(deploy);
    const paused = await run(agent, 'go');
    await saveRunState(paused.state, { guard });
    await service.approve((await service.findApproval('plan', 'call-a-0'))?.id as string, { by: 'ann' });

    const state = await resumeRunState(agent, { guard });
    const left = state!.getInterruptions().filter((i) => i.name === 'deploy');
    for (const item of left) state!.reject(item);
    await run(agent, state!);

    expect(left).toHaveLength(1);
    expect(ran).toEqual(['a']);
  });

  it('refuses a run state over the plan-document limit, naming it and its size, and saves nothing', async () => {
    const { service, guard, agent } = await setUp(makeStore, confirmed, scripted([writes('a')]));
    const result = await run(agent, 'x'.repeat(9 * 1024 * 1024));

    const saving = saveRunState(result.state, { guard });

    await expect(saving).rejects.toThrow(GuardrailValidationError);
    await expect(saving).rejects.toThrow(
      /^state must be a run state within the plan-document limit .* got "\d+ bytes"$/,
    );
    expect(await service.store.getPlanDocument('plan')).toBeNull();
  });

  it('does not overwrite a document another program saved for the plan', async () => {
    const { service, guard, result } = await paused();
    const theirs = {
      planId: 'plan',
      phase: 'execute',
      body: { format: 'theirs' },
      updatedAt: '2026-01-01T00:00:00.000Z',
    };
    await service.store.savePlanDocument(theirs);

    await expect(saveRunState(result.state, { guard })).rejects.toMatchObject({
      code: 'PLAN_DOCUMENT_CONFLICT',
    });
    expect((await service.store.getPlanDocument('plan'))?.body).toEqual({ format: 'theirs' });
  });
});

describe.each(LOCAL_STORES)('applyLeashDecisions on %s', (_name, makeStore) => {
  it('rejects a guarded call whose arguments are not JSON, which no person can approve in leash', async () => {
    const model = scripted([{ calls: [{ id: 'c1', name: 'write', raw: '{not json' }] }]);
    const { agent, guard, ran } = await setUp(makeStore, confirmed, model);
    const paused = await run(agent, 'go');

    expect(await applyLeashDecisions(paused.state, { guard })).toEqual([]);
    const resumed = await run(agent, paused.state);

    expect(ran).toEqual([]);
    expect(resumed.finalOutput).toBe('done');
  });

  it('rejects a call whose leash approval expired undecided', async () => {
    const { agent, guard, clock, ran } = await setUp(makeStore, confirmed, scripted([writes('a')]));
    const paused = await run(agent, 'go');
    clock.advance(48 * 3600 * 1000);

    expect(await applyLeashDecisions(paused.state, { guard })).toEqual([]);
    await run(agent, paused.state);

    expect(ran).toEqual([]);
  });
});
