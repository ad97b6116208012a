// leash/openai-agents' guarded tools on the OpenAI Agents SDK's own run loop, with a scripted Model.
import { Agent, run, RunState } from '@openai/agents';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { applyLeashDecisions, guardedTool } from '../../../src/adapters/openai-agents/index.js';
import type { GuardrailsInit } from '../../../src/index.js';
import { guarded, LOCAL_STORES } from '../../agent/support.js';
import { quorumGuard } from '../quorum.js';
import { scripted, setUp, writes, writeTool, type Call } from './support.js';

/** A model asking for each call in its own turn, then answering `done`. */
const oneEach = (...calls: Call[]) => scripted(calls.map((c) => ({ calls: [c] })));

const writeA = { id: 'call-1', name: 'write', args: { path: 'a' } };
const confirmed: GuardrailsInit = { requiredConfirmations: ['write'] };

describe.each(LOCAL_STORES)('guardedTool on %s', (_name, makeStore) => {
  it('does not run a tool again after the app aborted the run while it failed', async () => {
    const { guard } = await guarded(makeStore, {});
    const app = new AbortController();
    let runs = 0;
    const send = guardedTool(
      {
        name: 'send',
        description: 'send a message',
        parameters: z.object({ path: z.string() }),
        execute: async () => {
          runs++;
          app.abort();
          throw new TypeError('aborted while sending');
        },
      },
      { guard },
    );
    const agent = new Agent({
      name: 'sender',
      model: oneEach({ id: 'call-1', name: 'send', args: { path: 'a' } }),
      tools: [send],
    });
    await run(agent, 'go', { signal: app.signal }).catch(() => undefined);
    expect(runs).toBe(1);
  });

  it('stops for a call that needs a person, and runs it once a leash approval is applied', async () => {
    const { agent, service, guard, ran } = await setUp(makeStore, confirmed, oneEach(writeA));

    const paused = await run(agent, 'go');
    expect(paused.interruptions).toHaveLength(1);
    expect(ran).toEqual([]);
    const approval = await service.findApproval('plan', 'call-1');
    await service.approve(approval?.id as string, { by: 'ann' });
    expect(await applyLeashDecisions(paused.state, { guard })).toEqual([]);
    const resumed = await run(agent, paused.state);

    expect(ran).toEqual(['a']);
    expect(resumed.finalOutput).toBe('done');
  });

  it('runs a call under a quorum of two once two people other than its requester approved it', async () => {
    const { guard, vote, refused } = await quorumGuard(makeStore, confirmed);
    const ran: unknown[] = [];
    const agent = new Agent({ name: 'writer', model: oneEach(writeA), tools: [writeTool(guard, ran)] });
    const paused = await run(agent, 'go');
    const id = (await guard.service.findApproval('plan', 'call-1'))?.id as string;

    expect(await refused(id, 'ann')).toBe('APPROVAL_SELF');
    await vote(id, 'bob');
    const waiting = await applyLeashDecisions(paused.state, { guard });
    await vote(id, 'carol');
    expect(await applyLeashDecisions(paused.state, { guard })).toEqual([]);
    await run(agent, paused.state);

    expect(waiting).toHaveLength(1);
    expect(ran).toEqual(['a']);
  });

  it('runs an approved serialized state once, however often it is run', async () => {
    const { agent, service, guard, ran } = await setUp(makeStore, confirmed, oneEach(writeA));
    const paused = await run(agent, 'go');
    await service.approve((await service.findApproval('plan', 'call-1'))?.id as string, { by: 'ann' });
    await applyLeashDecisions(paused.state, { guard });
    const saved = paused.state.toString();

    await run(agent, await RunState.fromString(agent, saved));
    const replay = await RunState.fromString(agent, saved);
    const again = await run(agent, replay);

    expect(ran).toEqual(['a']);
    const outputs = JSON.stringify(again.newItems.map((i) => i.rawItem));
    expect(outputs).toContain('used already');
  });

  it('does not run an approved call whose arguments were changed in the saved state', async () => {
    const { agent, service, guard, ran } = await setUp(makeStore, confirmed, oneEach(writeA));
    const paused = await run(agent, 'go');
    await service.approve((await service.findApproval('plan', 'call-1'))?.id as string, { by: 'ann' });
    await applyLeashDecisions(paused.state, { guard });
    const edited = paused.state.toString().replaceAll('{\\"path\\":\\"a\\"}', '{\\"path\\":\\"etc\\"}');
    expect(edited).not.toBe(paused.state.toString());

    const result = await run(agent, await RunState.fromString(agent, edited));

    expect(ran).toEqual([]);
    expect(JSON.stringify(result.newItems.map((i) => i.rawItem))).toContain('leash denied this call');
  });

  it('does not run a call approved in the run state alone, without a leash grant', async () => {
    const { agent, ran } = await setUp(makeStore, confirmed, oneEach(writeA));
    const paused = await run(agent, 'go');

    for (const item of paused.interruptions) paused.state.approve(item);
    await run(agent, paused.state);

    expect(ran).toEqual([]);
  });

  it.each([
    ['the policy', confirmed, false],
    ['the tool’s own needsApproval', {}, true],
  ] as const)(
    'does not let the SDK’s sticky alwaysApprove run a later call without its own grant (%s asks)',
    async (_who, init, own) => {
      const writeB = { id: 'call-2', name: 'write', args: { path: 'b' } };
      const { agent, service, guard, ran } = await setUp(makeStore, init, oneEach(writeA, writeB), {}, own);
      const paused = await run(agent, 'go');
      await service.approve((await service.findApproval('plan', 'call-1'))?.id as string, { by: 'ann' });
      for (const item of paused.interruptions) paused.state.approve(item, { alwaysApprove: true });
      await applyLeashDecisions(paused.state, { guard });

      await run(agent, paused.state);

      expect(ran).toEqual(['a']);
      expect(await service.findApproval('plan', 'call-2')).toMatchObject({ status: 'pending' });
    },
  );

  it('rejects in the run a call a person denied in leash, and it does not run', async () => {
    const { agent, service, guard, ran } = await setUp(makeStore, confirmed, oneEach(writeA));
    const paused = await run(agent, 'go');
    await service.deny((await service.findApproval('plan', 'call-1'))?.id as string, {
      by: 'ann',
      reason: 'no',
    });

    expect(await applyLeashDecisions(paused.state, { guard })).toEqual([]);
    await run(agent, paused.state);

    expect(ran).toEqual([]);
  });

  it('answers a call the budget cannot cover with the reason, and the run goes on to its end', async () => {
    const calls = [writeA, { id: 'call-2', name: 'write', args: { path: 'b' } }];
    const { agent, ran } = await setUp(makeStore, { toolBudget: 1 }, oneEach(...calls), {
      tools: { write: { costPerCall: 1 } },
    });

    const result = await run(agent, 'go');

    expect(ran).toEqual(['a']);
    expect(JSON.stringify(result.newItems.map((i) => i.rawItem))).toContain('budget_blocked');
    expect(result.finalOutput).toBe('done');
  });

  it('runs only the calls the budget covers when a model asks for ten at once', async () => {
    const paths = Array.from({ length: 10 }, (_, i) => `f${i}`);
    const { agent, service, ran } = await setUp(makeStore, { toolBudget: 3 }, scripted([writes(...paths)]), {
      tools: { write: { costPerCall: 1 } },
    });

    await run(agent, 'go');

    expect(ran).toHaveLength(3);
    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(3);
  });

  describe('a tool whose own needsApproval asks for a person', () => {
    const ownApproval = (...calls: Call[]) => setUp(makeStore, {}, oneEach(...calls), {}, true);

    it('asks it with the arguments as its schema reads them, defaults included', async () => {
      const { agent, ran } = await ownApproval(writeA);

      const paused = await run(agent, 'go');

      expect(paused.interruptions).toHaveLength(1);
      expect(ran).toEqual([]);
    });

    it('runs the call once a person approved it in leash', async () => {
      const { agent, service, guard, ran } = await ownApproval(writeA);
      const paused = await run(agent, 'go');
      await service.approve((await service.findApproval('plan', 'call-1'))?.id as string, { by: 'ann' });
      await applyLeashDecisions(paused.state, { guard });

      await run(agent, paused.state);

      expect(ran).toEqual(['a']);
    });
  });
});
