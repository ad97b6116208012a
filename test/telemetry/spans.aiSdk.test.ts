// leash's spans under a real AI SDK generateText loop: added to the SDK's own spans when its telemetry
// is on, made by leash (children of the application's span) when it is off.
import { streamText } from 'ai';
import { describe, expect, it } from 'vitest';
import { guardModel } from '../../src/adapters/ai-sdk/index.js';
import { guarded } from '../agent/support.js';
import { MemoryStore } from '../../src/index.js';
import { streamParts, usage } from '../adapters/ai-sdk/support.js';
import { parentOf, PRICED, searchLoop as searchLoopTraced, useTracing } from './spans-support.js';
import { convertArrayToReadableStream, MockLanguageModelV3 } from 'ai/test';

const tracing = useTracing();

const ERROR = 2;

const searchLoop = (sdkTelemetry: boolean) => searchLoopTraced(tracing, sdkTelemetry);

const TOOL_ATTRIBUTES = {
  'gen_ai.operation.name': 'execute_tool',
  'gen_ai.tool.name': 'search',
  'gen_ai.tool.type': 'function',
  'leash.plan.id': 'plan',
};

describe('with the AI SDK telemetry on', () => {
  it("adds to the SDK's tool span rather than making a second one", async () => {
    await searchLoop(true);

    const toolSpans = tracing.named('ai.toolCall');
    expect(toolSpans).toHaveLength(2);
    expect(tracing.spans().filter((s) => s.name.startsWith('execute_tool'))).toEqual([]);
    expect(toolSpans.map((s) => s.attributes)).toEqual([
      expect.objectContaining({ ...TOOL_ATTRIBUTES, 'gen_ai.tool.call.id': 'c1' }),
      expect.objectContaining({ ...TOOL_ATTRIBUTES, 'gen_ai.tool.call.id': 'c2' }),
    ]);
  });

  it("leaves the SDK's tool spans where the SDK put them, under its generateText span", async () => {
    await searchLoop(true);

    const root = tracing.one('ai.generateText');
    for (const span of tracing.named('ai.toolCall')) expect(parentOf(span)).toBe(root.spanContext().spanId);
  });

  it("sets a refused call's span status to ERROR with the refusing check as error.type", async () => {
    await searchLoop(true);

    const [allowed, refused] = tracing.named('ai.toolCall');
    expect(allowed?.status.code).not.toBe(ERROR);
    expect(allowed?.attributes['error.type']).toBeUndefined();
    expect(refused?.status).toMatchObject({ code: ERROR, message: expect.stringMatching(/budget/) });
    expect(refused?.attributes['error.type']).toBe('budget_blocked');
  });

  it("records a call's input and output on the SDK's tool span only when the application opts in", async () => {
    await searchLoopTraced(tracing, true, true);
    await searchLoopTraced(tracing, true, false);

    const [recorded, , unrecorded] = tracing.named('ai.toolCall');
    expect(recorded?.attributes).toMatchObject({
      'gen_ai.tool.call.arguments': '{"path":"a"}',
      'gen_ai.tool.call.result': '"found"',
    });
    expect(
      Object.keys(unrecorded?.attributes ?? {}).filter((k) => k.startsWith('gen_ai.tool.call.')),
    ).toEqual(['gen_ai.tool.call.id']);
  });

  it("records a metered model call's usage and cost on the SDK's model span, making no span of its own", async () => {
    await searchLoop(true);

    const modelSpans = tracing.named('ai.generateText.doGenerate');
    expect(modelSpans).toHaveLength(3);
    expect(tracing.spans().filter((s) => s.name.startsWith('chat'))).toEqual([]);
    expect(modelSpans[0]?.attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 100,
      'gen_ai.usage.output_tokens': 10,
      'gen_ai.request.model': 'mock-model',
      'leash.cost': 0.012,
      'leash.plan.id': 'plan',
    });
  });

  it("records a streamed call's usage on the SDK's doStream span once the stream finished", async () => {
    const { guard } = await guarded(
      async () => new MemoryStore(),
      { toolBudget: 5 },
      { models: PRICED },
      { telemetry: { tracer: tracing.tracer } },
    );
    const model = new MockLanguageModelV3({
      modelId: 'mock-model',
      doStream: async () => ({ stream: convertArrayToReadableStream(streamParts('hi', usage(100, 10))) }),
    });
    const result = streamText({
      model: guardModel(model, { guard, maxOutputTokens: 10 }),
      prompt: 'say hi',
      experimental_telemetry: { isEnabled: true, tracer: tracing.tracer },
    });
    expect(await result.text).toBe('hi');

    expect(tracing.spans().filter((s) => s.name.startsWith('chat'))).toEqual([]);
    expect(tracing.one('ai.streamText.doStream').attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 100,
      'gen_ai.usage.output_tokens': 10,
      'leash.cost': 0.012,
    });
  });
});

describe('with the AI SDK telemetry off', () => {
  it("makes an execute_tool span per call, a child of the application's span, with the call's attributes", async () => {
    const { root } = await tracing.inRoot(() => searchLoop(false));

    const toolSpans = tracing.named('execute_tool search');
    expect(toolSpans).toHaveLength(2);
    for (const span of toolSpans) {
      expect(parentOf(span)).toBe(root.spanContext().spanId);
      expect(span.kind).toBe(0); // INTERNAL
    }
    expect(toolSpans.map((s) => s.attributes)).toEqual([
      expect.objectContaining({ ...TOOL_ATTRIBUTES, 'gen_ai.tool.call.id': 'c1' }),
      expect.objectContaining({ ...TOOL_ATTRIBUTES, 'gen_ai.tool.call.id': 'c2' }),
    ]);
    expect(tracing.spans().filter((s) => s.name.startsWith('ai.'))).toEqual([]);
  });

  it("sets a refused call's own span status to ERROR with the refusing check as error.type", async () => {
    await tracing.inRoot(() => searchLoop(false));

    const refused = tracing.named('execute_tool search')[1];
    expect(refused?.status.code).toBe(ERROR);
    expect(refused?.attributes['error.type']).toBe('budget_blocked');
  });

  it("makes a chat span per metered model call, a child of the application's span, with usage and cost", async () => {
    const { root } = await tracing.inRoot(() => searchLoop(false));

    const chats = tracing.named('chat mock-model');
    expect(chats).toHaveLength(3);
    for (const span of chats) expect(parentOf(span)).toBe(root.spanContext().spanId);
    expect(chats[0]?.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'mock-model',
      'gen_ai.usage.input_tokens': 100,
      'gen_ai.usage.output_tokens': 10,
      'leash.cost': 0.012,
      'leash.plan.id': 'plan',
    });
  });
});
