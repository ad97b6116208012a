// The plan an AI SDK agent's guarded tools run under keeps the labels it was configured with.
import { generateText, stepCountIs } from 'ai';
import { describe, expect, it } from 'vitest';
import { guardTools } from '../../../src/adapters/ai-sdk/index.js';
import { guarded, LOCAL_STORES, PLAN } from '../../agent/support.js';
import { call, countedTool, response, scripted, text } from './support.js';

const LABELS = { team: 'ml', user: 'ann' };

describe.each(LOCAL_STORES)('guardTools on %s', (_name, makeStore) => {
  it('runs its calls under the labelled plan, which keeps its labels as it spends', async () => {
    const { service, guard } = await guarded(
      makeStore,
      { toolBudget: 1, labels: LABELS },
      { tools: { read: { costPerCall: 0.25 } } },
    );
    const read = countedTool();
    const { model } = scripted([response([call('c1', 'read', { path: 'a' })]), response([text('ok')])]);

    await generateText({
      model,
      tools: guardTools({ read: read.tool }, { guard }),
      stopWhen: stepCountIs(3),
      prompt: 'go',
    });

    const g = await service.getGuardrails(PLAN);
    expect([read.runs.length, g?.budgetSpent, g?.labels]).toEqual([1, 0.25, LABELS]);
  });
});
