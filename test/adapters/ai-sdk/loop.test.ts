import { generateText, stepCountIs, tool } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { guardModel, guardStop, guardTools, isLeashDenial } from '../../../src/adapters/ai-sdk/index.js';
import { spendCap } from '../../../src/guardrails/caps.js';
import { eventTypes, guarded, LOCAL_STORES } from '../../agent/support.js';
import { call, countedTool, FREE_MODEL, response, scripted, text, toolOutputs } from './support.js';

describe.each(LOCAL_STORES)('AI SDK loop on %s', (_name, makeStore) => {
  it('ends a loop whose budget ran out after the refused call, with the text of every step kept', async () => {
    const { service, guard } = await guarded(
      makeStore,
      { toolBudget: 0.25 },
      { tools: { search: { costPerCall: 0.1 } }, models: FREE_MODEL },
    );
    const search = countedTool('found');
    const steps = [1, 2, 3, 4, 5].map((i) =>
      response([text(`step ${i}`), call(`c${i}`, 'search', { path: `${i}` })]),
    );
    const { model, calls } = scripted(steps);

    const result = await generateText({
      model: guardModel(model, { guard }),
      tools: guardTools({ search: search.tool }, { guard }),
      stopWhen: [stepCountIs(10), guardStop({ guard })],
      prompt: 'look around',
    });

    expect(search.runs).toHaveLength(2);
    expect(calls()).toBe(3);
    expect(result.steps.map((s) => s.text)).toEqual(['step 1', 'step 2', 'step 3']);
    const refused = result.steps[2]?.toolResults[0]?.output;
    expect(isLeashDenial(refused) && refused.check).toBe('budget_blocked');
    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(0.2);
    expect(await eventTypes(service)).toContain('budget_blocked');
  });

  it('says which limit ended a loop guardStop stopped, as a check and a line to show', async () => {
    const { guard } = await guarded(
      makeStore,
      { toolBudget: 0.15 },
      { tools: { search: { costPerCall: 0.1 } }, models: FREE_MODEL },
    );
    const search = countedTool('found');
    const steps = [1, 2, 3].map((i) => response([call(`c${i}`, 'search', { path: `${i}` })]));

    await generateText({
      model: guardModel(scripted(steps).model, { guard }),
      tools: guardTools({ search: search.tool }, { guard }),
      stopWhen: [stepCountIs(10), guardStop({ guard })],
      prompt: 'look around',
    });

    expect(guard.lastLimit?.eventType).toBe('budget_blocked');
    expect(guard.lastLimitText).toMatch(/^leash ended the run \(budget_blocked\): cost 0\.1 would bring/);
  });

  it('ends a loop a spend cap across plans refused a call in, as a used-up budget of its own does', async () => {
    const capped = async () => {
      const store = await makeStore();
      await store.putCaps([spendCap({ id: 'all-daily', match: {}, limit: 0.15, window: 'day' })]);
      return store;
    };
    const { guard } = await guarded(
      capped,
      {},
      { tools: { search: { costPerCall: 0.1 } }, models: FREE_MODEL },
    );
    const search = countedTool('found');
    const steps = [1, 2, 3].map((i) => response([call(`c${i}`, 'search', { path: `${i}` })]));

    const result = await generateText({
      model: guardModel(scripted(steps).model, { guard }),
      tools: guardTools({ search: search.tool }, { guard }),
      stopWhen: [stepCountIs(10), guardStop({ guard })],
      prompt: 'look around',
    });

    expect([search.runs.length, result.steps.length, guard.lastLimit?.eventType]).toEqual([
      1,
      2,
      'budget_cap_blocked',
    ]);
  });

  it('ends a loop whose model calls use up the budget before a call it cannot cover, steps kept', async () => {
    // A cent per thousand prompt tokens: each step's longer prompt costs more.
    const models = { 'mock-model': { input: 10, output: 0 } };
    const { service, guard } = await guarded(makeStore, { toolBudget: 0.05 }, { models });
    const search = countedTool('x'.repeat(600));
    const steps = Array.from({ length: 20 }, (_, i) => response([call(`c${i}`, 'search', { path: `${i}` })]));
    const { model } = scripted(steps);

    const result = await generateText({
      model: guardModel(model, { guard }),
      tools: guardTools({ search: search.tool }, { guard }),
      stopWhen: [stepCountIs(20), guardStop({ guard })],
      maxOutputTokens: 10,
      prompt: 'look around',
    });

    expect(result.steps.length).toBeGreaterThan(1);
    expect(result.steps.length).toBeLessThan(20);
    expect(await eventTypes(service)).not.toContain('budget_blocked');
  });

  it('stops the loop once every step is taken, before the model asks for another call', async () => {
    const { guard } = await guarded(makeStore, { maxSteps: 2 }, { models: FREE_MODEL });
    const search = countedTool();
    const { model, calls } = scripted(
      [1, 2, 3].map((i) => response([call(`c${i}`, 'search', { path: 'x' })])),
    );

    const result = await generateText({
      model: guardModel(model, { guard }),
      tools: guardTools({ search: search.tool }, { guard }),
      stopWhen: [stepCountIs(10), guardStop({ guard })],
      prompt: 'go',
    });

    expect(search.runs).toHaveLength(2);
    expect(calls()).toBe(2);
    expect(result.steps).toHaveLength(2);
  });

  it('lets three of ten parallel tool calls run against a budget for three', async () => {
    const { service, guard } = await guarded(
      makeStore,
      { toolBudget: 0.3 },
      { tools: { fetch: { costPerCall: 0.1 } }, models: FREE_MODEL },
    );
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let running = 0;
    let ran = 0;
    const fetchTool = tool({
      inputSchema: z.object({ n: z.number() }),
      execute: async () => {
        running++;
        if (running === 3) release();
        await gate;
        ran++;
        return 'ok';
      },
    });
    const ten = Array.from({ length: 10 }, (_, i) => call(`p${i}`, 'fetch', { n: i }));
    const { model } = scripted([response(ten), response([text('done')])]);

    const result = await generateText({
      model: guardModel(model, { guard }),
      tools: guardTools({ fetch: fetchTool }, { guard }),
      stopWhen: [stepCountIs(3), guardStop({ guard })],
      prompt: 'fetch everything',
    });

    expect(ran).toBe(3);
    const outputs = Object.values(toolOutputs(result.response.messages));
    expect(outputs.filter((o) => (o as { type: string }).type === 'execution-denied')).toHaveLength(7);
    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(0.3);
  });

  it('tells the model why a call was refused, as an execution-denied result', async () => {
    const { guard } = await guarded(
      makeStore,
      { toolBudget: 0.05 },
      { tools: { search: { costPerCall: 0.1 } }, models: FREE_MODEL },
    );
    const { model } = scripted([response([call('c1', 'search', { path: 'x' })]), response([text('ok')])]);

    const result = await generateText({
      model: guardModel(model, { guard }),
      tools: guardTools({ search: countedTool().tool }, { guard }),
      stopWhen: stepCountIs(1),
      prompt: 'go',
    });

    const output = toolOutputs(result.response.messages)['c1'] as { type: string; reason: string };
    expect(output.type).toBe('execution-denied');
    expect(output.reason).toMatch(/tool_budget/);
  });
});
