// The plan an OpenAI Agents SDK agent's guarded tools run under keeps the labels it was configured with.
import { run } from '@openai/agents';
import { describe, expect, it } from 'vitest';
import { LOCAL_STORES, PLAN } from '../../agent/support.js';
import { scripted, setUp } from './support.js';

const LABELS = { team: 'ml', user: 'ann' };

describe.each(LOCAL_STORES)('guardedTool on %s', (_name, makeStore) => {
  it('runs its calls under the labelled plan, which keeps its labels as it spends', async () => {
    const model = scripted([{ calls: [{ id: 'call-1', name: 'write', args: { path: 'a' } }] }]);
    const { agent, service, ran } = await setUp(makeStore, { toolBudget: 1, labels: LABELS }, model, {
      tools: { write: { costPerCall: 0.25 } },
    });

    await run(agent, 'go');

    const g = await service.getGuardrails(PLAN);
    expect([ran, g?.budgetSpent, g?.labels]).toEqual([['a'], 0.25, LABELS]);
  });
});
