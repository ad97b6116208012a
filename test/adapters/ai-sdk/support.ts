import { tool, type ModelMessage } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import type { GuardedLanguageModel } from '../../../src/adapters/ai-sdk/index.js';

type GenerateResult = Awaited<ReturnType<GuardedLanguageModel['doGenerate']>>;
type StreamPart =
  Awaited<ReturnType<GuardedLanguageModel['doStream']>>['stream'] extends ReadableStream<infer P> ? P : never;
type Content = GenerateResult['content'][number];

/** Token usage as a provider reports it. */
export function usage(input: number, output: number, cacheRead = 0): GenerateResult['usage'] {
  return {
    inputTokens: { total: input, noCache: input - cacheRead, cacheRead, cacheWrite: 0 },
    outputTokens: { total: output, text: output, reasoning: 0 },
  };
}

export const text = (value: string): Content => ({ type: 'text', text: value });

/** A tool call the model makes, its input as JSON text. */
export const call = (toolCallId: string, toolName: string, input: unknown): Content => ({
  type: 'tool-call',
  toolCallId,
  toolName,
  input: JSON.stringify(input),
});

/** One model response: its content, finishing with tool calls when it holds any. */
export function response(content: Content[], used = usage(100, 10)): GenerateResult {
  const calls = content.some((c) => c.type === 'tool-call');
  return {
    content,
    finishReason: { unified: calls ? 'tool-calls' : 'stop', raw: undefined },
    usage: used,
    warnings: [],
  };
}

/**
 * A mock model that answers its calls with `responses` in turn (the last one again once they run out),
 * for generateText; `calls` counts them.
 */
export function scripted(responses: GenerateResult[], modelId = 'mock-model') {
  let n = 0;
  const model = new MockLanguageModelV3({
    modelId,
    doGenerate: async () => responses[Math.min(n++, responses.length - 1)] as GenerateResult,
  });
  return { model, calls: () => n };
}

/** The parts of a streamed response: its text in one delta, then the finish part with `used`. */
export function streamParts(value: string, used = usage(100, 10)): StreamPart[] {
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 't1' },
    { type: 'text-delta', id: 't1', delta: value },
    { type: 'text-end', id: 't1' },
    { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage: used },
  ];
}

/** A tool `name` whose runs are counted and recorded with their input. */
export function countedTool(output = 'done') {
  const runs: unknown[] = [];
  const t = tool({
    description: 'does a thing',
    inputSchema: z.object({ path: z.string() }),
    execute: async (input) => {
      runs.push(input);
      return output;
    },
  });
  return { tool: t, runs };
}

/** The tool results the model was given in its last call, by tool call id. */
export function fedBack(model: MockLanguageModelV3): Record<string, unknown> {
  const prompt = model.doGenerateCalls.at(-1)?.prompt ?? [];
  const out: Record<string, unknown> = {};
  for (const m of prompt) {
    if (m.role !== 'tool') continue;
    for (const part of m.content) if (part.type === 'tool-result') out[part.toolCallId] = part.output;
  }
  return out;
}

/** The tool results of a run's messages, by tool call id. */
export function toolOutputs(messages: readonly ModelMessage[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const m of messages) {
    if (m.role !== 'tool') continue;
    for (const part of m.content) if (part.type === 'tool-result') out[part.toolCallId] = part.output;
  }
  return out;
}

/** Prices that make the mock model's calls cost (almost) nothing, so tests count tool costs. */
export const FREE_MODEL = { 'mock-model': { input: 0, output: 0 } } as const;
