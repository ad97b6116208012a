// An AI SDK agent under leash: a budget, a step limit and a person's approval before it writes a file,
// every check in a tamper-evident log. Offline it runs a scripted mock model; with OPENAI_API_KEY set
// and @ai-sdk/openai installed it runs gpt-4o-mini.
import { generateText, stepCountIs, tool, type ModelMessage } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import {
  approvalResponses,
  guardModel,
  guardStop,
  guardTools,
  type GuardedLanguageModel,
} from 'leash/ai-sdk';
import { RunGuard, type ModelPrice } from 'leash';
import { GPT_4O_MINI, notesPlan } from './notes.js';

const { service, planId, files, approveForThePerson, report } = await notesPlan('ai-sdk');
const tools = {
  read_file: tool({
    description: 'read a file',
    inputSchema: z.object({ path: z.string() }),
    execute: async ({ path }) => files.get(path) ?? `no file ${path}`,
  }),
  write_file: tool({
    description: 'write a file',
    inputSchema: z.object({ path: z.string(), content: z.string() }),
    execute: async ({ path, content }) => (files.set(path, content), `wrote ${content.length} bytes`),
  }),
};

const { model, modelId, prices } = await pickModel();
const messages: ModelMessage[] = [{ role: 'user', content: 'Summarise notes.txt into summary.txt.' }];
for (let run = 1; ; run++) {
  // One guard per run of the loop: per-run tool-call limits count from zero again.
  const guard = new RunGuard({
    service,
    planId,
    models: prices,
    tools: { read_file: { costPerCall: 0.001 } },
  });
  const result = await generateText({
    model: guardModel(model, { guard, modelId }),
    tools: guardTools(tools, { guard }),
    stopWhen: [stepCountIs(10), guardStop({ guard })],
    messages,
  });
  messages.push(...result.response.messages);
  console.log(`run ${run}: ${result.steps.length} step(s), text: ${JSON.stringify(result.text)}`);
  const asked = result.content.filter((part) => part.type === 'tool-approval-request');
  if (asked.length === 0) break;
  for (const { toolCall } of asked) {
    const approval = await service.findApproval(planId, toolCall.toolCallId);
    await approveForThePerson(approval!.id, toolCall.toolName);
  }
  messages.push({ role: 'tool', content: await approvalResponses(messages, { guard }) });
}

await report();

/** gpt-4o-mini when a key and the provider package are there; a scripted mock model otherwise. */
async function pickModel(): Promise<{
  model: GuardedLanguageModel;
  modelId: string;
  prices: Record<string, ModelPrice>;
}> {
  const provider = '@ai-sdk/openai';
  if (process.env['OPENAI_API_KEY']) {
    const openai = await import(provider).catch(() => null);
    if (openai) {
      return { model: openai.openai('gpt-4o-mini'), modelId: 'gpt-4o-mini', prices: GPT_4O_MINI };
    }
  }
  const usage = {
    inputTokens: { total: 400, noCache: 400, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 40, text: 40, reasoning: 0 },
  };
  const say = (text: string) => ({ type: 'text' as const, text });
  const call = (id: string, name: string, input: object) => ({
    type: 'tool-call' as const,
    toolCallId: id,
    toolName: name,
    input: JSON.stringify(input),
  });
  const script = [
    [say('Reading the notes first.'), call('call-1', 'read_file', { path: 'notes.txt' })],
    [call('call-2', 'write_file', { path: 'summary.txt', content: 'leash: budgets, limits, approvals.' })],
    [say('Done: summary.txt holds the summary.')],
  ];
  let n = 0;
  const mock = new MockLanguageModelV3({
    modelId: 'scripted',
    doGenerate: async () => {
      const content = script[Math.min(n++, script.length - 1)]!;
      const calls = content.some((c) => c.type === 'tool-call');
      return {
        content,
        usage,
        warnings: [],
        finishReason: { unified: calls ? 'tool-calls' : 'stop', raw: undefined },
      };
    },
  });
  return { model: mock, modelId: 'scripted', prices: { scripted: { input: 2.5, output: 10 } } };
}
