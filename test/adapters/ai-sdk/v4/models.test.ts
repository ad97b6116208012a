// ai 7's providers make LanguageModelV4 models. Run by the vitest project 'ai 7' only, where `ai` is ai 7
// (installed in test/ai7); this repository's types come from ai 6, which has no V4 mock: the few members
// of ai 7's `ai/test` used here are typed below, and the mocks are handed to guardModel through a cast.
// The consumer test in test/package compiles against ai 7's own types.
import { generateText, streamText } from 'ai';
import * as aiTest from 'ai/test';
import { describe, expect, it } from 'vitest';
import { guardModel, type GuardedLanguageModel } from '../../../../src/adapters/ai-sdk/index.js';
import { eventTypes, guarded, LOCAL_STORES } from '../../../agent/support.js';
import { response, streamParts, text, usage } from '../support.js';

/** $1 per million input tokens, $2 per million output. */
const PRICED = { models: { 'mock-model': { input: 1, output: 2 } } };

interface MockLanguageModelV4 {
  readonly specificationVersion: 'v4';
}
interface Ai7Test {
  MockLanguageModelV4: new (settings: {
    modelId: string;
    doGenerate?: () => Promise<unknown>;
    doStream?: () => Promise<unknown>;
  }) => MockLanguageModelV4;
  convertArrayToReadableStream: typeof aiTest.convertArrayToReadableStream;
}
const { MockLanguageModelV4, convertArrayToReadableStream } = aiTest as unknown as Ai7Test;

const asGuarded = (model: MockLanguageModelV4): GuardedLanguageModel =>
  model as unknown as GuardedLanguageModel;

describe.each(LOCAL_STORES)('guardModel on a LanguageModelV4, on %s', (_name, makeStore) => {
  it('wraps it as a LanguageModelV4', async () => {
    const { guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const model = new MockLanguageModelV4({ modelId: 'mock-model' });

    expect(guardModel(asGuarded(model), { guard }).specificationVersion).toBe('v4');
  });

  it('charges a generated call what its usage cost', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const model = new MockLanguageModelV4({
      modelId: 'mock-model',
      doGenerate: async () => response([text('hi')], usage(1000, 100)) as never,
    });

    await generateText({ model: guardModel(asGuarded(model), { guard }), prompt: 'hello' });

    // 1000 × 1 + 100 × 2 = 1200 micro-units
    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(0.0012);
  });

  it('charges a streamed call from its finish part', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const parts = streamParts('streamed', usage(2000, 500));
    const model = new MockLanguageModelV4({
      modelId: 'mock-model',
      doStream: async () => ({ stream: convertArrayToReadableStream(parts) }) as never,
    });

    const result = streamText({ model: guardModel(asGuarded(model), { guard }), prompt: 'hello' });

    expect(await result.text).toBe('streamed');
    // 2000 × 1 + 500 × 2 = 3000 micro-units
    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(0.003);
    expect(await eventTypes(service)).toContain('budget_committed');
  });
});
