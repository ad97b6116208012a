// leash/langchain on LangChain's own createAgent loop, with @langchain/core's scripted fake model and
// LangGraph's memory checkpointer: no network.
import { AIMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { Command, interrupt, MemorySaver } from '@langchain/langgraph';
import { createAgent, tool, toolStrategy } from 'langchain';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { leashMiddleware } from '../../../src/adapters/langchain/index.js';
import type { GuardrailsInit, RunGuard } from '../../../src/index.js';
import { eventTypes, guarded, LOCAL_STORES, type GuardOptions } from '../../agent/support.js';
import { quorumGuard } from '../quorum.js';

/** A tool that counts the calls it ran. */
function countedTool(name: string) {
  const ran: unknown[] = [];
  const t = tool(
    async (args: { path: string }) => {
      ran.push(args);
      return `${name} ${args.path}`;
    },
    { name, description: name, schema: z.object({ path: z.string() }) },
  );
  return { tool: t, ran };
}

const usage = { input_tokens: 100, output_tokens: 100, total_tokens: 200 };

/** An answer asking for one call of `name`, with its usage. */
function asks(id: string, name: string, path: string): AIMessage {
  return withUsage(new AIMessage({ content: '', tool_calls: [{ id, name, args: { path } }] }));
}

/** The message, saying it used 100 input and 100 output tokens. */
function withUsage(m: AIMessage): AIMessage {
  Object.assign(m, { usage_metadata: usage });
  return m;
}

const answer = (text: string) => withUsage(new AIMessage({ content: text }));

/** 1 token costs 0.001: a call of 100 + 100 tokens costs 0.2. */
const PRICED: GuardOptions = { models: { fake: { input: 1000, output: 1000 } } };

async function agentOn(
  makeStore: Parameters<typeof guarded>[0],
  init: GuardrailsInit,
  script: AIMessage[],
  tools: ReturnType<typeof countedTool>[],
  options: GuardOptions = PRICED,
) {
  return agentFor(await guarded(makeStore, init, options), script, tools);
}

/** An agent on the scripted model with `tools`, held to `g`'s guard, with a memory checkpointer. */
function agentFor<G extends { guard: RunGuard }>(
  g: G,
  script: AIMessage[],
  tools: ReturnType<typeof countedTool>[],
) {
  let model = fakeModel();
  for (const m of script) model = model.respond(m);
  const agent = createAgent({
    model,
    tools: tools.map((t) => t.tool),
    middleware: [leashMiddleware({ guard: g.guard, modelId: 'fake', maxOutputTokens: 100 })],
    checkpointer: new MemorySaver(),
  });
  return { ...g, agent };
}

const config = { configurable: { thread_id: 'thread' } };
const go = { messages: [{ role: 'user', content: 'go' }] };

/** The approval a paused run asks about. */
const idOf = (r: { __interrupt__?: { value?: unknown }[] }) =>
  (r.__interrupt__?.[0]?.value as { approvalId: string }).approvalId;

/** An agent whose one call, write a, needs a person. */
async function confirmedWrite(makeStore: Parameters<typeof guarded>[0]) {
  const write = countedTool('write');
  const script = [asks('c1', 'write', 'a'), answer('done')];
  return { ...(await agentOn(makeStore, { requiredConfirmations: ['write'] }, script, [write])), write };
}

const contents = (messages: BaseMessage[]) =>
  messages.map((m) => `${m.getType()}:${typeof m.content === 'string' ? m.content : ''}`);

describe.each(LOCAL_STORES)('leashMiddleware on %s', (_name, makeStore) => {
  it('charges each model call what its usage_metadata says at the model’s price', async () => {
    const read = countedTool('read');
    const { agent, service } = await agentOn(
      makeStore,
      { toolBudget: 10 },
      [asks('c1', 'read', 'a'), answer('done')],
      [read],
    );

    await agent.invoke(go, config);

    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(0.4);
  });

  it('ends a run gracefully when the budget cannot cover the next model call, keeping its work', async () => {
    const read = countedTool('read');
    const script = [
      asks('c1', 'read', 'a'),
      asks('c2', 'read', 'b'),
      asks('c3', 'read', 'c'),
      answer('done'),
    ];
    const { agent } = await agentOn(makeStore, { toolBudget: 0.5 }, script, [read]);

    const result = await agent.invoke(go, config);

    expect(read.ran).toEqual([{ path: 'a' }, { path: 'b' }]);
    const last = result.messages.at(-1) as BaseMessage;
    expect(last.content).toMatch(/^leash ended the run \(budget_blocked\)/);
    expect(contents(result.messages)).toContain('tool:read a');
  });

  it('ends the run before the next model call once every step is taken, keeping its work', async () => {
    const read = countedTool('read');
    const script = [asks('c1', 'read', 'a'), asks('c2', 'read', 'b'), answer('done')];
    const { agent } = await agentOn(makeStore, { maxSteps: 1 }, script, [read]);

    const result = await agent.invoke(go, config);

    expect(read.ran).toEqual([{ path: 'a' }]);
    expect(contents(result.messages)).toContain('tool:read a');
    expect(result.messages.at(-1)?.content).toMatch(/^leash ended the run \(step_blocked\)/);
  });

  it('says which limit ended the run, on the guard, as the last message does', async () => {
    const read = countedTool('read');
    const script = [asks('c1', 'read', 'a'), asks('c2', 'read', 'b'), answer('done')];
    const { agent, guard } = await agentOn(makeStore, { maxSteps: 1 }, script, [read]);

    const result = await agent.invoke(go, config);

    expect(guard.lastLimit?.eventType).toBe('step_blocked');
    expect(guard.lastLimitText).toBe(result.messages.at(-1)?.content);
  });

  it('answers a call the plan’s calls of a tool leave no room for with an error the model reads', async () => {
    const read = countedTool('read');
    const script = [asks('c1', 'read', 'a'), asks('c2', 'read', 'b'), answer('done')];
    const { agent } = await agentOn(makeStore, {}, script, [read], {
      ...PRICED,
      tools: { read: { maxCallsPerPlan: 1 } },
    });

    const result = await agent.invoke(go, config);

    expect(read.ran).toEqual([{ path: 'a' }]);
    const denied = result.messages.find(
      (m) => ToolMessage.isInstance(m) && m.status === 'error',
    ) as ToolMessage;
    expect(denied.content).toMatch(/tool_calls_blocked/);
    expect(result.messages.at(-1)?.content).toBe('done');
  });

  it('pauses on a call that needs a person and runs it once after a leash approval and a resume', async () => {
    const { agent, service, write } = await confirmedWrite(makeStore);

    const paused = await agent.invoke(go, config);
    const [asked] = paused.__interrupt__ ?? [];
    expect(asked?.value).toMatchObject({ type: 'leash-approval', toolName: 'write', args: { path: 'a' } });
    expect(write.ran).toEqual([]);

    await service.approve(idOf(paused), { by: 'ann' });
    const resumed = await agent.invoke(new Command({ resume: 'go on' }), config);

    expect(write.ran).toEqual([{ path: 'a' }]);
    expect(contents(resumed.messages)).toContain('tool:write a');
  });

  it('runs a call under a quorum of two once two people other than its requester approved it', async () => {
    const write = countedTool('write');
    const g = await quorumGuard(makeStore, { requiredConfirmations: ['write'] }, PRICED);
    const { agent, vote, refused } = agentFor(g, [asks('c1', 'write', 'a'), answer('done')], [write]);

    const id = idOf(await agent.invoke(go, config));
    expect(await refused(id, 'ann')).toBe('APPROVAL_SELF');
    await vote(id, 'bob');
    const waiting = await agent.invoke(new Command({ resume: 'go on' }), config);
    await vote(id, 'carol');
    await agent.invoke(new Command({ resume: 'go on' }), config);

    expect(waiting.__interrupt__?.length).toBe(1);
    expect(write.ran).toEqual([{ path: 'a' }]);
  });

  it('pauses again when resumed before anybody decided: a resume value is not a grant', async () => {
    const { agent, write } = await confirmedWrite(makeStore);

    await agent.invoke(go, config);
    const again = await agent.invoke(new Command({ resume: { approved: true } }), config);

    expect(again.__interrupt__?.length).toBe(1);
    expect(write.ran).toEqual([]);
  });

  it('answers a call a person denied with an error the model reads, without running it', async () => {
    const { agent, service, write } = await confirmedWrite(makeStore);

    const paused = await agent.invoke(go, config);
    const id = idOf(paused);
    await service.deny(id, { by: 'ann', reason: 'not now' });
    const resumed = await agent.invoke(new Command({ resume: 'go on' }), config);

    expect(write.ran).toEqual([]);
    const denied = resumed.messages.find((m) => ToolMessage.isInstance(m)) as ToolMessage;
    expect(denied.status).toBe('error');
    expect(denied.content).toContain('not now');
  });

  it('asks for an edited call on its own, and runs it with the edited arguments once that is approved', async () => {
    const { agent, service, write } = await confirmedWrite(makeStore);

    const paused = await agent.invoke(go, config);
    await service.approve(idOf(paused), { by: 'ann' }); // approves path a, not the edit
    const edited = await agent.invoke(new Command({ resume: { type: 'edit', args: { path: 'b' } } }), config);

    expect(write.ran).toEqual([]);
    expect(edited.__interrupt__?.[0]?.value).toMatchObject({ args: { path: 'b' } });
    expect(idOf(edited)).not.toBe(idOf(paused));

    await service.approve(idOf(edited), { by: 'ann' });
    await agent.invoke(new Command({ resume: true }), config);

    expect(write.ran).toEqual([{ path: 'b' }]);
  });

  it('runs an edit approved after the outdated call was denied', async () => {
    const { agent, service, write } = await confirmedWrite(makeStore);

    const paused = await agent.invoke(go, config);
    const edited = await agent.invoke(new Command({ resume: { type: 'edit', args: { path: 'b' } } }), config);
    await service.deny(idOf(paused), { by: 'ann', reason: 'outdated' });
    await service.approve(idOf(edited), { by: 'ann' });
    await agent.invoke(new Command({ resume: true }), config);

    expect(write.ran).toEqual([{ path: 'b' }]);
  });

  it('passes a tool’s own interrupt on without retrying it, and runs the tool on when resumed', async () => {
    let runs = 0;
    const ask = tool(
      async () => {
        runs++;
        return `asked: ${String(interrupt('which one?'))}`;
      },
      { name: 'ask', description: 'ask', schema: z.object({}) },
    );
    const g = await guarded(makeStore, {}, PRICED);
    const model = fakeModel()
      .respond(withUsage(new AIMessage({ content: '', tool_calls: [{ id: 'q1', name: 'ask', args: {} }] })))
      .respond(answer('done'));
    const agent = createAgent({
      model,
      tools: [ask],
      middleware: [leashMiddleware({ guard: g.guard, modelId: 'fake', maxOutputTokens: 100 })],
      checkpointer: new MemorySaver(),
    });

    const paused = await agent.invoke(go, config);
    expect(paused.__interrupt__?.[0]?.value).toBe('which one?');
    expect(runs).toBe(1);
    const resumed = await agent.invoke(new Command({ resume: 'the first' }), config);

    expect(contents(resumed.messages)).toContain('tool:asked: the first');
  });

  it('charges a model call whose answer gives no usage its whole estimate', async () => {
    const { agent, service } = await agentOn(makeStore, { toolBudget: 10 }, [new AIMessage('hi')], []);

    await agent.invoke(go, config);

    const spent = (await service.getGuardrails('plan'))?.budgetSpent ?? 0;
    expect(spent).toBeGreaterThanOrEqual(0.1); // at least the 100 output tokens it was allowed
  });

  it('charges a structured answer what its model message used', async () => {
    const g = await guarded(makeStore, { toolBudget: 10 }, PRICED);
    // A titled schema names its tool (an untitled one gets a new name each time).
    const answerSchema = z.object({ answer: z.string() }).meta({ title: 'answer' });
    const extract = withUsage(
      new AIMessage({ content: '', tool_calls: [{ id: 's1', name: 'answer', args: { answer: 'x' } }] }),
    );
    const agent = createAgent({
      model: fakeModel().respond(extract),
      tools: [],
      responseFormat: toolStrategy(answerSchema),
      middleware: [leashMiddleware({ guard: g.guard, modelId: 'fake', maxOutputTokens: 100 })],
    });

    const result = await agent.invoke(go);

    expect(result.structuredResponse).toEqual({ answer: 'x' });
    expect((await g.service.getGuardrails('plan'))?.budgetSpent).toBe(0.2);
  });

  it('charges a structured answer LangChain could not parse its whole estimate', async () => {
    const g = await guarded(makeStore, { toolBudget: 10 }, PRICED);
    const answerSchema = z.object({ answer: z.string() }).meta({ title: 'answer' });
    const extract = withUsage(
      new AIMessage({ content: '', tool_calls: [{ id: 's1', name: 'answer', args: { answer: 42 } }] }),
    );
    const agent = createAgent({
      model: fakeModel().respond(extract),
      tools: [],
      // Not handled: the answer that does not fit the schema fails the run.
      responseFormat: toolStrategy(answerSchema, { handleError: false }),
      middleware: [leashMiddleware({ guard: g.guard, modelId: 'fake', maxOutputTokens: 500 })],
    });

    await expect(agent.invoke(go)).rejects.toThrow(/Failed to parse structured output/);

    // The estimate, not the message's 0.2: at least its 500 output tokens (0.5).
    expect((await g.service.getGuardrails('plan'))?.budgetSpent).toBeGreaterThanOrEqual(0.5);
  });

  it('runs only the calls the budget covers when the model asks for ten at once', async () => {
    const write = countedTool('write');
    const calls = Array.from({ length: 10 }, (_, i) => ({
      id: `c${i}`,
      name: 'write',
      args: { path: `f${i}` },
    }));
    const script = [withUsage(new AIMessage({ content: '', tool_calls: calls })), answer('done')];
    const { agent, service } = await agentOn(makeStore, { toolBudget: 3 }, script, [write], {
      unpricedModels: 'allow',
      tools: { write: { costPerCall: 1 } },
    });

    await agent.invoke(go, config);

    expect(write.ran).toHaveLength(3);
    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(3);
  });

  it('charges cache reads at the cached rate', async () => {
    const cached = new AIMessage({ content: 'hi' });
    Object.assign(cached, {
      usage_metadata: {
        input_tokens: 1000,
        output_tokens: 0,
        total_tokens: 1000,
        input_token_details: { cache_read: 800 },
      },
    });
    const { agent, service } = await agentOn(makeStore, { toolBudget: 10 }, [cached], [], {
      models: { fake: { input: 1000, output: 1000, cached_input: 100 } },
    });

    await agent.invoke(go, config);

    // 200 tokens at 0.001 and 800 at 0.0001
    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(0.28);
  });

  it('takes one step for a call that paused, however often its task runs again', async () => {
    const { agent, service, write } = await confirmedWrite(makeStore);

    const paused = await agent.invoke(go, config);
    await agent.invoke(new Command({ resume: 1 }), config);
    await service.approve(idOf(paused), {
      by: 'ann',
    });
    await agent.invoke(new Command({ resume: 2 }), config);

    expect((await eventTypes(service)).filter((e) => e === 'step_allowed')).toHaveLength(1);
    expect(write.ran).toHaveLength(1);
  });

  it('refuses a model call for a model the price table lacks while the plan has a budget', async () => {
    const { agent } = await agentOn(makeStore, { toolBudget: 1 }, [answer('hi')], [], {});

    const result = await agent.invoke(go, config);

    expect(result.messages.at(-1)?.content).toMatch(/budget_blocked.*models\.fake/);
  });
});
