// The plan a LangChain agent's leash middleware guards keeps the labels it was configured with.
import { AIMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { createAgent, tool } from 'langchain';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { leashMiddleware } from '../../../src/adapters/langchain/index.js';
import { guarded, LOCAL_STORES, PLAN } from '../../agent/support.js';

const LABELS = { team: 'ml', user: 'ann' };

describe.each(LOCAL_STORES)('leashMiddleware on %s', (_name, makeStore) => {
  it('runs its calls under the labelled plan, which keeps its labels as it spends', async () => {
    const { service, guard } = await guarded(
      makeStore,
      { toolBudget: 1, labels: LABELS },
      { tools: { read: { costPerCall: 0.25 } }, unpricedModels: 'allow' },
    );
    const ran: string[] = [];
    const read = tool(async ({ path }: { path: string }) => (ran.push(path), `read ${path}`), {
      name: 'read',
      description: 'read',
      schema: z.object({ path: z.string() }),
    });
    const model = fakeModel()
      .respond(new AIMessage({ content: '', tool_calls: [{ id: 'c1', name: 'read', args: { path: 'a' } }] }))
      .respond(new AIMessage({ content: 'ok' }));
    const agent = createAgent({
      model,
      tools: [read],
      middleware: [leashMiddleware({ guard, modelId: 'fake' })],
    });

    await agent.invoke({ messages: [{ role: 'user', content: 'go' }] });

    const g = await service.getGuardrails(PLAN);
    expect([ran, g?.budgetSpent, g?.labels]).toEqual([['a'], 0.25, LABELS]);
  });
});
