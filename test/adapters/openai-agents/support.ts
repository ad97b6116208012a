// A scripted Agents SDK Model and the agents the tests run on it: no network.
import {
  Agent,
  setTracingDisabled,
  Usage,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type StreamEvent,
} from '@openai/agents';
import { z } from 'zod';
import { guardedTool } from '../../../src/adapters/openai-agents/index.js';
import type { GuardrailsInit } from '../../../src/index.js';
import { guarded, type GuardOptions } from '../../agent/support.js';

setTracingDisabled(true);

/** One tool call a model asks for; `args` as JSON, or `raw` arguments text as the model wrote it. */
export interface Call {
  readonly id: string;
  readonly name: string;
  readonly args?: object;
  readonly raw?: string;
}

/** One answer of a scripted model: tool calls (in parallel), else text; its usage, or none reported. */
export interface Turn {
  readonly calls?: readonly Call[];
  readonly text?: string;
  readonly usage?: Usage | null;
}

type Done = Extract<StreamEvent, { type: 'response_done' }>;

export const usage = (input: number, output: number, cached = 0) =>
  new Usage({
    inputTokens: input,
    outputTokens: output,
    totalTokens: input + output,
    requests: 1,
    inputTokensDetails: cached > 0 ? { cached_tokens: cached } : {},
  });

function outputOf(turn: Turn | undefined): ModelResponse['output'] {
  if (turn?.calls !== undefined) {
    return turn.calls.map((c) => ({
      type: 'function_call' as const,
      callId: c.id,
      name: c.name,
      arguments: c.raw ?? JSON.stringify(c.args ?? {}),
      status: 'completed' as const,
    }));
  }
  return [
    {
      type: 'message' as const,
      role: 'assistant' as const,
      status: 'completed' as const,
      content: [{ type: 'output_text' as const, text: turn?.text ?? 'done' }],
    },
  ];
}

/**
 * A model answering with each turn in turn (then with `done`), each with 10 tokens in and 5 out unless
 * the turn says otherwise; `requests` holds what it was asked. Streamed, a turn is its text's delta and
 * its `response_done`.
 */
export function scripted(turns: readonly Turn[]): Model & { requests: ModelRequest[] } {
  let i = 0;
  const requests: ModelRequest[] = [];
  const next = (request: ModelRequest): ModelResponse => {
    requests.push(request);
    const turn = turns[i++];
    const used = turn?.usage === undefined ? usage(10, 5) : (turn.usage ?? new Usage());
    return { usage: used, output: outputOf(turn), responseId: `r${i}` };
  };
  return {
    requests,
    async getResponse(request) {
      return next(request);
    },
    async *getStreamedResponse(request): AsyncIterable<StreamEvent> {
      const response = next(request);
      yield { type: 'response_started' };
      yield { type: 'output_text_delta', delta: 'answer' };
      yield {
        type: 'response_done',
        response: {
          id: response.responseId ?? 'r',
          usage: {
            requests: 1,
            inputTokens: response.usage.inputTokens,
            outputTokens: response.usage.outputTokens,
            totalTokens: response.usage.totalTokens,
            inputTokensDetails: response.usage.inputTokensDetails,
          },
          output: response.output as Done['response']['output'],
        },
      };
    },
  };
}

/** A guarded `write` tool that records the paths it wrote in `ran`; with `own`, it asks when `force`. */
export function writeTool(guard: Parameters<typeof guardedTool>[1]['guard'], ran: unknown[], own = false) {
  const execute = async ({ path }: { path: string }) => {
    ran.push(path);
    return `wrote ${path}`;
  };
  // `force` defaults to true: with `own`, the tool asks for a person when it is true, as its schema reads it.
  return own
    ? guardedTool(
        {
          name: 'write',
          description: 'write a file',
          parameters: z.object({ path: z.string(), force: z.boolean().default(true) }),
          needsApproval: async (_ctx, args) => args.force === true,
          execute,
        },
        { guard },
      )
    : guardedTool(
        { name: 'write', description: 'write a file', parameters: z.object({ path: z.string() }), execute },
        { guard },
      );
}

/** A guarded plan configured by `init`, and an agent on `model` with the guarded `write` tool. */
export async function setUp(
  makeStore: Parameters<typeof guarded>[0],
  init: GuardrailsInit,
  model: Model,
  options: GuardOptions = {},
  own = false,
) {
  const g = await guarded(makeStore, init, options);
  const ran: unknown[] = [];
  const agent = new Agent({ name: 'writer', model, tools: [writeTool(g.guard, ran, own)] });
  return { ...g, agent, ran };
}

/** One model turn calling `write` for each path, in parallel. */
export const writes = (...paths: string[]): Turn => ({
  calls: paths.map((path, i) => ({ id: `call-${path}-${i}`, name: 'write', args: { path } })),
});
