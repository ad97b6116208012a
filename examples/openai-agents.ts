// An OpenAI Agents SDK agent under leash: a budget for its model and tool calls, a step limit and a
// person's approval before it writes a file; the paused run kept in the leash store and resumed from it.
// Offline it runs a scripted model; with OPENAI_API_KEY set it runs gpt-4o-mini.
import {
  Agent,
  OpenAIProvider,
  Runner,
  setTracingDisabled,
  Usage,
  type Model,
  type ModelProvider,
  type ModelResponse,
} from '@openai/agents';
import { z } from 'zod';
import { guardedTool, guardModelProvider, resumeRunState, saveRunState } from 'leash/openai-agents';
import { RunGuard } from 'leash';
import { GPT_4O_MINI, notesPlan } from './notes.js';

setTracingDisabled(true);
const { service, planId, files, approveForThePerson, report } = await notesPlan('agents');
const provider = pickProvider();

/** The agent as one process builds it: tools and model on a guard of its own (one per run). */
function agentOn(guard: RunGuard) {
  const readFile = guardedTool(
    {
      name: 'read_file',
      description: 'read a file',
      parameters: z.object({ path: z.string() }),
      execute: async ({ path }) => files.get(path) ?? `no file ${path}`,
    },
    { guard },
  );
  const writeFile = guardedTool(
    {
      name: 'write_file',
      description: 'write a file',
      parameters: z.object({ path: z.string(), content: z.string() }),
      execute: async ({ path, content }) => (files.set(path, content), `wrote ${content.length} bytes`),
    },
    { guard },
  );
  const agent = new Agent({ name: 'notes', instructions: 'Keep notes tidy.', tools: [readFile, writeFile] });
  const runner = new Runner({
    modelProvider: guardModelProvider(provider, { guard, modelId: 'gpt-4o-mini' }),
  });
  return { agent, runner };
}

const guardOf = () =>
  new RunGuard({ service, planId, models: GPT_4O_MINI, tools: { read_file: { costPerCall: 0.001 } } });
const first = guardOf();
const { agent, runner } = agentOn(first);
const paused = await runner.run(agent, 'Summarise notes.txt into summary.txt.');
for (const item of paused.interruptions) {
  const approval = await service.findApproval(planId, (item.rawItem as { callId: string }).callId);
  await approveForThePerson(approval!.id, item.name ?? 'a tool');
}
await saveRunState(paused.state, { guard: first });

// Any process can go on from the store: here, a new guard and agent, as after a restart.
const second = guardOf();
const again = agentOn(second);
const state = await resumeRunState(again.agent, { guard: second });
const result = state === null ? paused : await again.runner.run(again.agent, state);
console.log(`final output: ${JSON.stringify(result.finalOutput)}`);

await report();

/** OpenAI's provider when a key is there; a provider of a scripted model otherwise. */
function pickProvider(): ModelProvider {
  if (process.env['OPENAI_API_KEY']) return new OpenAIProvider();
  const call = (callId: string, name: string, args: object) => ({
    type: 'function_call' as const,
    callId,
    name,
    arguments: JSON.stringify(args),
    status: 'completed' as const,
  });
  const say = (text: string) => ({
    type: 'message' as const,
    role: 'assistant' as const,
    status: 'completed' as const,
    content: [{ type: 'output_text' as const, text }],
  });
  const script: ModelResponse['output'][] = [
    [call('call-1', 'read_file', { path: 'notes.txt' })],
    [call('call-2', 'write_file', { path: 'summary.txt', content: 'leash: budgets, limits, approvals.' })],
    [say('Done: summary.txt holds the summary.')],
  ];
  let n = 0;
  const model: Model = {
    async getResponse() {
      const output = script[Math.min(n++, script.length - 1)]!;
      return {
        output,
        usage: new Usage({ inputTokens: 400, outputTokens: 40, totalTokens: 440, requests: 1 }),
      };
    },
    // eslint-disable-next-line require-yield
    async *getStreamedResponse() {
      throw new Error('the scripted model does not stream');
    },
  };
  return { getModel: () => model };
}
