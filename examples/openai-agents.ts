// An OpenAI Agents SDK agent under leash: a budget for its model and tool calls, a step limit and a
// person's approval before it writes a file; the paused run kept in the leash store and resumed from it.
// Offline it runs a scripted model; with OPENAI_API_KEY set it runs gpt-4o-mini.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Agent,
  OpenAIProvider,
  Runner,
  setTracingDisabled,
  Usage,
  type Model,
  type ModelResponse,
} from '@openai/agents';
import { z } from 'zod';
import {
  guardedTool,
  guardModelProvider,
  resumeRunState,
  saveRunState,
} from '../src/adapters/openai-agents/index.js';
import { AutonomyGuardrailService, RunGuard, SqliteStore, type ModelPrice } from '../src/index.js';

setTracingDisabled(true);
const db = join(mkdtempSync(join(tmpdir(), 'leash-agents-')), 'leash.db');
const store = new SqliteStore({ path: db });
await store.migrate();
const service = new AutonomyGuardrailService({ store });
const planId = 'notes-agent';
await service.configureGuardrails(planId, {
  maxSteps: 6,
  toolBudget: 0.05, // dollars
  requiredConfirmations: ['write_file'],
});

const files = new Map([['notes.txt', 'leash keeps agents inside budgets, step limits and approvals.']]);
const { provider, prices } = pickProvider();

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
  new RunGuard({ service, planId, models: prices, tools: { read_file: { costPerCall: 0.001 } } });
const first = guardOf();
const { agent, runner } = agentOn(first);
const paused = await runner.run(agent, 'Summarise notes.txt into summary.txt.');
for (const item of paused.interruptions) {
  const approval = await service.findApproval(planId, (item.rawItem as { callId: string }).callId);
  console.log(`${item.name} waits for a person: npx leash approve ${approval?.id} --by you --db ${db}`);
  // A person would decide with the command above or the dashboard; the example approves for them.
  await service.approve(approval!.id, { by: 'example-reviewer', reason: 'summary looks right' });
}
await saveRunState(paused.state, { guard: first });

// Any process can go on from the store: here, a new guard and agent, as after a restart.
const second = guardOf();
const again = agentOn(second);
const state = await resumeRunState(again.agent, { guard: second });
const result = state === null ? paused : await again.runner.run(again.agent, state);
console.log(`final output: ${JSON.stringify(result.finalOutput)}`);

const g = await service.getGuardrails(planId);
const trail = await service.getAuditTrail(planId);
console.log(`summary.txt: ${JSON.stringify(files.get('summary.txt') ?? null)}`);
console.log(`spent ${g?.budgetSpent} of ${g?.toolBudget} dollars in ${g?.stepCount} step(s)`);
console.log(
  `audit log: ${trail?.size} entries, ${trail?.deniedCount} denied; verify: npx leash verify --db ${db}`,
);
store.close();

/** OpenAI's provider when a key is there; a provider of a scripted model otherwise. */
function pickProvider(): {
  provider: { getModel(name?: string): Model | Promise<Model> };
  prices: Record<string, ModelPrice>;
} {
  // Dollars per million tokens; check your provider's current prices.
  const prices = { 'gpt-4o-mini': { input: 0.15, output: 0.6, cached_input: 0.075 } };
  if (process.env['OPENAI_API_KEY']) return { provider: new OpenAIProvider(), prices };
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
  return { provider: { getModel: () => model }, prices };
}
