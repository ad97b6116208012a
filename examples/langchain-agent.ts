// A LangChain.js agent under leash: a budget for its model and tool calls, a step limit and a person's
// approval before it writes a file, the run paused with LangGraph's interrupt() and resumed once.
// Offline it runs a scripted fake model; with OPENAI_API_KEY set and @langchain/openai installed it runs
// gpt-4o-mini.
import { AIMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { Command, MemorySaver } from '@langchain/langgraph';
import { createAgent, tool } from 'langchain';
import { z } from 'zod';
import { leashMiddleware, type LeashInterrupt } from 'leash/langchain';
import { RunGuard } from 'leash';
import { GPT_4O_MINI, notesPlan } from './notes.js';

const { service, planId, files, approveForThePerson, report } = await notesPlan('langchain');
const readFile = tool(async ({ path }) => files.get(path) ?? `no file ${path}`, {
  name: 'read_file',
  description: 'read a file',
  schema: z.object({ path: z.string() }),
});
const writeFile = tool(
  async ({ path, content }) => (files.set(path, content), `wrote ${content.length} bytes`),
  {
    name: 'write_file',
    description: 'write a file',
    schema: z.object({ path: z.string(), content: z.string() }),
  },
);

const { model, modelId } = await pickModel();
// One guard per invocation of the agent; the plan, its budget and its approvals outlive it.
const guard = new RunGuard({
  service,
  planId,
  models: GPT_4O_MINI,
  tools: { read_file: { costPerCall: 0.001 } },
});
const agent = createAgent({
  model,
  tools: [readFile, writeFile],
  middleware: [leashMiddleware({ guard, modelId })],
  checkpointer: new MemorySaver(),
});
const config = { configurable: { thread_id: planId } };
let result = await agent.invoke(
  { messages: [{ role: 'user', content: 'Summarise notes.txt into summary.txt.' }] },
  config,
);
for (const asked of result.__interrupt__ ?? []) {
  const { approvalId, toolName } = asked.value as LeashInterrupt;
  await approveForThePerson(approvalId, toolName);
}
result = await agent.invoke(new Command({ resume: true }), config);
console.log(`last message: ${JSON.stringify(result.messages.at(-1)?.content)}`);

await report();

/** gpt-4o-mini when a key and the provider package are there; a scripted fake model otherwise. */
async function pickModel() {
  const provider = '@langchain/openai';
  if (process.env['OPENAI_API_KEY'] && (await import(provider).catch(() => null))) {
    return { model: 'openai:gpt-4o-mini', modelId: 'gpt-4o-mini' };
  }
  const usage = { input_tokens: 400, output_tokens: 40, total_tokens: 440 };
  const answer = (
    content: string,
    calls: { id: string; name: string; args: Record<string, string> }[] = [],
  ) => Object.assign(new AIMessage({ content, tool_calls: calls }), { usage_metadata: usage });
  const model = fakeModel()
    .respond(
      answer('Reading the notes first.', [{ id: 'call-1', name: 'read_file', args: { path: 'notes.txt' } }]),
    )
    .respond(
      answer('', [
        {
          id: 'call-2',
          name: 'write_file',
          args: { path: 'summary.txt', content: 'leash: budgets, limits, approvals.' },
        },
      ]),
    )
    .respond(answer('Done: summary.txt holds the summary.'));
  return { model, modelId: 'gpt-4o-mini' };
}
