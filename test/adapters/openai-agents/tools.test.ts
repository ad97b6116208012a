// leash/openai-agents on the OpenAI Agents SDK's own run loop, with a scripted Model: no network.
import {
  Agent,
  run,
  RunState,
  setTracingDisabled,
  Usage,
  type Model,
  type ModelResponse,
} from '@openai/agents';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { applyLeashDecisions, guardedTool } from '../../../src/adapters/openai-agents/index.js';
import type { GuardrailsInit } from '../../../src/index.js';
import { guarded, LOCAL_STORES, type GuardOptions } from '../../agent/support.js';

setTracingDisabled(true);

const usage = () => new Usage({ inputTokens: 10, outputTokens: 5, totalTokens: 15, requests: 1 });

/** A model answering with each call of `calls` in turn (one tool call each), then with text. */
function scripted(calls: readonly { id: string; name: string; args: object }[]): Model {
  let i = 0;
  return {
    async getResponse(): Promise<ModelResponse> {
      const call = calls[i++];
      const output = call
        ? [
            {
              type: 'function_call' as const,
              callId: call.id,
              name: call.name,
              arguments: JSON.stringify(call.args),
              status: 'completed' as const,
            },
          ]
        : [
            {
              type: 'message' as const,
              role: 'assistant' as const,
              status: 'completed' as const,
              content: [{ type: 'output_text' as const, text: 'done' }],
            },
          ];
      return { usage: usage(), output, responseId: `r${i}` };
    },
    // eslint-disable-next-line require-yield
    async *getStreamedResponse() {
      throw new Error('not streamed');
    },
  };
}

async function setUp(
  makeStore: Parameters<typeof guarded>[0],
  init: GuardrailsInit,
  calls: readonly { id: string; name: string; args: object }[],
  options: GuardOptions = {},
  own = false,
) {
  const g = await guarded(makeStore, init, options);
  const ran: unknown[] = [];
  const execute = async ({ path }: { path: string }) => {
    ran.push(path);
    return `wrote ${path}`;
  };
  // `force` defaults to true: with `own`, the tool asks for a person when it is true, as its schema reads it.
  const write = own
    ? guardedTool(
        {
          name: 'write',
          description: 'write a file',
          parameters: z.object({ path: z.string(), force: z.boolean().default(true) }),
          needsApproval: async (_ctx, args) => args.force === true,
          execute,
        },
        { guard: g.guard },
      )
    : guardedTool(
        { name: 'write', description: 'write a file', parameters: z.object({ path: z.string() }), execute },
        { guard: g.guard },
      );
  const agent = new Agent({ name: 'writer', model: scripted(calls), tools: [write] });
  return { ...g, agent, ran };
}

const writeA = { id: 'call-1', name: 'write', args: { path: 'a' } };
const confirmed: GuardrailsInit = { requiredConfirmations: ['write'] };

describe.each(LOCAL_STORES)('guardedTool on %s', (_name, makeStore) => {
  it('stops for a call that needs a person, and runs it once a leash approval is applied', async () => {
    const { agent, service, guard, ran } = await setUp(makeStore, confirmed, [writeA]);

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

  it('runs an approved serialized state once, however often it is run', async () => {
    const { agent, service, guard, ran } = await setUp(makeStore, confirmed, [writeA]);
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

  it('does not run a call approved in the run state alone, without a leash grant', async () => {
    const { agent, ran } = await setUp(makeStore, confirmed, [writeA]);
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
      const { agent, service, guard, ran } = await setUp(makeStore, init, [writeA, writeB], {}, own);
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
    const { agent, service, guard, ran } = await setUp(makeStore, confirmed, [writeA]);
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
    const { agent, ran } = await setUp(makeStore, { toolBudget: 1 }, calls, {
      tools: { write: { costPerCall: 1 } },
    });

    const result = await run(agent, 'go');

    expect(ran).toEqual(['a']);
    expect(JSON.stringify(result.newItems.map((i) => i.rawItem))).toContain('budget_blocked');
    expect(result.finalOutput).toBe('done');
  });

  describe('a tool whose own needsApproval asks for a person', () => {
    const ownApproval = (calls: readonly { id: string; name: string; args: object }[]) =>
      setUp(makeStore, {}, calls, {}, true);

    it('asks it with the arguments as its schema reads them, defaults included', async () => {
      const { agent, ran } = await ownApproval([writeA]);

      const paused = await run(agent, 'go');

      expect(paused.interruptions).toHaveLength(1);
      expect(ran).toEqual([]);
    });

    it('runs the call once a person approved it in leash', async () => {
      const { agent, service, guard, ran } = await ownApproval([writeA]);
      const paused = await run(agent, 'go');
      await service.approve((await service.findApproval('plan', 'call-1'))?.id as string, { by: 'ann' });
      await applyLeashDecisions(paused.state, { guard });

      await run(agent, paused.state);

      expect(ran).toEqual(['a']);
    });
  });
});
