import { generateText, streamText } from 'ai';
import { MockLanguageModelV3, convertArrayToReadableStream } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { guardModel, promptTokens } from '../../../src/adapters/ai-sdk/index.js';
import { usageOf } from '../../../src/adapters/ai-sdk/model.js';
import { GuardrailValidationError, GuardrailViolationError, type RunGuard } from '../../../src/index.js';
import { eventTypes, guarded, LOCAL_STORES, settledUntil } from '../../agent/support.js';
import { trailOf } from '../../support/service.js';
import { response, scripted, streamParts, text, usage } from './support.js';

/** $1 per million input tokens, $2 per million output, $0.5 per million read from the cache. */
const PRICED = { models: { 'mock-model': { input: 1, output: 2, cached_input: 0.5 } } };

function streaming(parts: ReturnType<typeof streamParts>, modelId = 'mock-model') {
  return new MockLanguageModelV3({
    modelId,
    doStream: async () => ({ stream: convertArrayToReadableStream(parts) }),
  });
}

/**
 * A stream of a guarded model (1,000 tokens in, 1,000 out at most) whose provider never finishes,
 * opened and ready to read; `onSignal` gets the abort signal the provider was given.
 */
async function openEndless(guard: RunGuard, onSignal: (signal?: AbortSignal) => void = () => undefined) {
  const endless = new MockLanguageModelV3({
    modelId: 'mock-model',
    doStream: async ({ abortSignal }) => {
      onSignal(abortSignal);
      return {
        stream: new ReadableStream({
          pull: (c) => c.enqueue({ type: 'text-delta', id: 't', delta: 'more ' }),
        }),
      };
    },
  });
  const model = guardModel(endless, { guard, maxOutputTokens: 1000, estimateInputTokens: () => 1000 });
  const { stream } = await model.doStream({
    prompt: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
  });
  return stream.getReader();
}

describe.each(LOCAL_STORES)('guardModel on %s', (_name, makeStore) => {
  it('charges a generated call what its usage cost, cached input at its own price', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const { model } = scripted([response([text('hi')], usage(1000, 100, 400))]);

    await generateText({ model: guardModel(model, { guard }), prompt: 'hello' });

    // 600 × 1 + 400 × 0.5 + 100 × 2 = 1000 micro-units
    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(0.001);
  });

  it('gives the provider the output cap it set aside for, when the caller gave none', async () => {
    const { guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const { model } = scripted([response([text('hi')])]);

    await generateText({ model: guardModel(model, { guard, maxOutputTokens: 300 }), prompt: 'hello' });

    expect(model.doGenerateCalls[0]?.maxOutputTokens).toBe(300);
  });

  it("gives the provider the caller's own output cap, the one it set aside for", async () => {
    const { guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const { model } = scripted([response([text('hi')])]);

    await generateText({ model: guardModel(model, { guard }), prompt: 'hello', maxOutputTokens: 50 });

    expect(model.doGenerateCalls[0]?.maxOutputTokens).toBe(50);
  });

  it('gives a stream the default output cap it set aside for, when the caller gave none', async () => {
    const { guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const model = streaming(streamParts('streamed'));

    await streamText({ model: guardModel(model, { guard }), prompt: 'hello' }).text;

    expect(model.doStreamCalls[0]?.maxOutputTokens).toBe(4096);
  });

  it('charges a streamed call from its finish part', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const model = streaming(streamParts('streamed', usage(2000, 500)));

    const result = streamText({ model: guardModel(model, { guard }), prompt: 'hello' });

    expect(await result.text).toBe('streamed');
    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(0.003);
    expect(await eventTypes(service)).toContain('budget_committed');
  });

  it('charges the estimate of a stream cancelled before its finish, and says so in the log', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const reader = await openEndless(guard);

    await reader.read();
    await reader.cancel();

    // 1000 × 1 + 1000 × 2 micro-units: the whole estimate
    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(0.003);
    const last = (await trailOf(service, 'plan')).entries.at(-1);
    expect(JSON.stringify(last?.details)).toMatch(/cancelled before its finish/);
  });

  it('charges the estimate of a stream that ends without a finish part', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const parts = streamParts('cut').filter((p) => p.type !== 'finish');
    const model = guardModel(streaming(parts), {
      guard,
      maxOutputTokens: 1000,
      estimateInputTokens: () => 1000,
    });

    await streamText({ model, prompt: 'hi' }).consumeStream();

    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(0.003);
  });

  it('charges the estimate of a stream that errors before its finish part', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const failing = new MockLanguageModelV3({
      modelId: 'mock-model',
      doStream: async () => ({
        stream: new ReadableStream({
          start: (c) => {
            c.enqueue({ type: 'text-delta', id: 't', delta: 'half' });
            c.error(new Error('connection reset'));
          },
        }),
      }),
    });
    const model = guardModel(failing, { guard, maxOutputTokens: 1000, estimateInputTokens: () => 1000 });
    const { stream } = await model.doStream({
      prompt: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    });

    await expect(stream.pipeTo(new WritableStream())).rejects.toThrow('connection reset');
    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(0.003);
  });

  it('charges a stream once, at its first finish part', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const parts = streamParts('twice', usage(2000, 500));
    const model = guardModel(streaming([...parts, parts.at(-1)!]), { guard });

    await streamText({ model, prompt: 'hi' }).consumeStream();

    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(0.003);
  });

  it('ends a stream the wall clock runs out on, aborting the provider and charging the estimate', async () => {
    const { service, guard, clock, timers } = await guarded(
      makeStore,
      { toolBudget: 1, maxWallClockSeconds: 10 },
      PRICED,
    );
    let providerSignal: AbortSignal | undefined;
    const reader = await openEndless(guard, (signal) => (providerSignal = signal));
    await reader.read();

    clock.advance(10_001);
    timers.fire();
    await settledUntil(() => providerSignal?.aborted === true);

    // A part or two read ahead before the clock ran out may still come; then the stream ends.
    const readOn = async () => {
      for (let i = 0; i < 5; i++) await reader.read();
    };
    await expect(readOn()).rejects.toMatchObject({ check: { eventType: 'wall_clock_blocked' } });
    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(0.003);
  });

  it('gives the estimate back when the model call fails', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const failing = new MockLanguageModelV3({
      modelId: 'mock-model',
      doGenerate: async () => {
        throw new Error('provider down');
      },
    });

    await expect(
      generateText({ model: guardModel(failing, { guard }), prompt: 'hi', maxRetries: 0 }),
    ).rejects.toThrow('provider down');
    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(0);
    expect((await service.getGuardrails('plan'))?.budgetReserved).toBe(0);
  });

  it('refuses a model without a price while the plan has a budget, naming the policy key', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const { model, calls } = scripted([response([text('hi')])], 'unknown-model');

    const failed = generateText({ model: guardModel(model, { guard }), prompt: 'hi' });

    await expect(failed).rejects.toBeInstanceOf(GuardrailViolationError);
    await expect(failed).rejects.toThrow(/models\.unknown-model/);
    expect(calls()).toBe(0);
    expect(await eventTypes(service)).toContain('budget_blocked');
  });

  it('does not make a call the budget cannot cover, and charges nothing', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 0.001 }, PRICED);
    const { model, calls } = scripted([response([text('hi')])]);

    const failed = generateText({ model: guardModel(model, { guard }), prompt: 'hi', maxOutputTokens: 1000 });

    await expect(failed).rejects.toMatchObject({ check: { eventType: 'budget_blocked' } });
    expect(calls()).toBe(0);
    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(0);
  });

  it('prices the call under the id it is given when the provider names a dated snapshot', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const { model } = scripted([response([text('hi')], usage(1000, 0))], 'mock-model-2026-01-01');

    await generateText({ model: guardModel(model, { guard, modelId: 'mock-model' }), prompt: 'hi' });

    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(0.001);
  });
});

describe('guardModel options', () => {
  it('refuses options without a RunGuard, naming the field', async () => {
    const { model } = scripted([]);

    expect(() => guardModel(model, { guard: {} as never })).toThrow(GuardrailValidationError);
    expect(() => guardModel(model, { guard: {} as never })).toThrow(/guard/);
  });

  it('refuses something that is not a language model, naming the field', async () => {
    const { guard } = await guarded(LOCAL_STORES[0]![1], {});

    expect(() => guardModel('gpt-4o' as never, { guard })).toThrow(/^model must be a language model/);
  });

  it('refuses a negative output allowance, naming the field and the value', async () => {
    const { guard } = await guarded(LOCAL_STORES[0]![1], {});
    const { model } = scripted([]);

    expect(() => guardModel(model, { guard, maxOutputTokens: -1 })).toThrow(/maxOutputTokens.*-1/);
  });
});

describe('usage and estimates', () => {
  const estimate = { inputTokens: 50, maxOutputTokens: 70 };

  it('takes a count the provider did not report at its estimate', () => {
    const missing = {
      inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: undefined, text: undefined, reasoning: undefined },
    };

    expect(usageOf(missing, estimate)).toEqual({ inputTokens: 50, outputTokens: 70, cachedInputTokens: 0 });
  });

  it('estimates a prompt at a token for every 3 bytes, and a fixed count per message', () => {
    const tokens = promptTokens({ prompt: [{ role: 'system', content: 'x'.repeat(30) }] });

    expect(tokens).toBe(10 + 4);
  });

  it('counts a file part at a fixed number of tokens, whatever its size', () => {
    const file = { type: 'file' as const, mediaType: 'image/png', data: 'A'.repeat(1_000_000) };

    expect(promptTokens({ prompt: [{ role: 'user', content: [file] }] })).toBe(1500 + 4);
  });
});
