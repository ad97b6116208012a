import { generateText, stepCountIs, tool } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { guardTools, isLeashDenial } from '../../../src/adapters/ai-sdk/index.js';
import { GuardrailValidationError, RunGuard } from '../../../src/index.js';
import { guarded, LOCAL_STORES, settledUntil } from '../../agent/support.js';
import { call, countedTool, response, scripted, text } from './support.js';

const [, makeStore] = LOCAL_STORES[0]!;

/** A tool that waits until its signal aborts, and reports what it was given. */
function waiting() {
  const seen: { signal?: AbortSignal | undefined } = {};
  const t = tool({
    inputSchema: z.object({}),
    execute: (_input, { abortSignal }) =>
      new Promise<string>((resolve) => {
        seen.signal = abortSignal;
        abortSignal?.addEventListener('abort', () => resolve('stopped'));
      }),
  });
  return { tool: t, seen };
}

describe('guardTools', () => {
  it("aborts the tool's signal when the app aborts the run", async () => {
    const { guard } = await guarded(makeStore, {});
    const wait = waiting();
    const { model } = scripted([response([call('c1', 'wait', {})]), response([text('ok')])]);
    const app = new AbortController();

    const run = generateText({
      model,
      tools: guardTools({ wait: wait.tool }, { guard }),
      stopWhen: stepCountIs(1),
      abortSignal: app.signal,
      prompt: 'go',
    });
    await settledUntil(() => wait.seen.signal !== undefined);
    app.abort();
    await run.catch(() => undefined);

    expect(wait.seen.signal?.aborted).toBe(true);
  });

  it('does not run a tool again after the app aborted the run while it failed', async () => {
    const { guard } = await guarded(makeStore, {});
    const app = new AbortController();
    let runs = 0;
    const send = tool({
      inputSchema: z.object({}),
      execute: async (_input, { abortSignal }): Promise<string> => {
        runs++;
        app.abort();
        throw abortSignal?.reason;
      },
    });
    const { model } = scripted([response([call('c1', 'send', {})]), response([text('ok')])]);

    await generateText({
      model,
      tools: guardTools({ send }, { guard }),
      stopWhen: stepCountIs(1),
      abortSignal: app.signal,
      prompt: 'go',
    }).catch(() => undefined);

    expect(runs).toBe(1);
  });

  it("aborts the tool's signal when the wall clock runs out, and the model reads why", async () => {
    const { guard, clock, timers } = await guarded(makeStore, { maxWallClockSeconds: 10 });
    const wait = waiting();
    const { model } = scripted([response([call('c1', 'wait', {})]), response([text('ok')])]);

    const run = generateText({
      model,
      tools: guardTools({ wait: wait.tool }, { guard }),
      stopWhen: stepCountIs(1),
      prompt: 'go',
    });
    await settledUntil(() => wait.seen.signal !== undefined && timers.pending.length === 1);
    clock.advance(10_001);
    timers.fire();
    const result = await run;

    expect(wait.seen.signal?.aborted).toBe(true);
    const output = result.toolResults[0]?.output;
    expect(isLeashDenial(output) && output.check).toBe('wall_clock_blocked');
  });

  it('ends the run with an error naming a plan that is not configured, running no tool', async () => {
    const { service } = await guarded(makeStore, {});
    const guard = new RunGuard({ service, planId: 'not-configured' });
    const write = countedTool();
    const { model } = scripted([response([call('c1', 'write', { path: 'a' })])]);

    const run = generateText({
      model,
      tools: guardTools({ write: write.tool }, { guard }),
      stopWhen: stepCountIs(1),
      prompt: 'go',
    });

    await expect(run).rejects.toMatchObject({
      code: 'PLAN_NOT_CONFIGURED',
      message: expect.stringContaining('plan "not-configured" is not configured'),
    });
    expect(write.runs).toEqual([]);
  });

  it('does not run a tool that says it needs approval when the plan is not configured', async () => {
    const { service } = await guarded(makeStore, {});
    const guard = new RunGuard({ service, planId: 'not-configured', unconfiguredPlans: 'allow' });
    const write = countedTool();
    const { model } = scripted([response([call('c1', 'write', { path: 'a' })])]);

    const result = await generateText({
      model,
      tools: guardTools({ write: { ...write.tool, needsApproval: true } }, { guard }),
      stopWhen: stepCountIs(1),
      prompt: 'go',
    });

    expect(write.runs).toEqual([]);
    const output = result.toolResults[0]?.output;
    expect(isLeashDenial(output) && output.check).toBe('confirmation_required');
  });

  it('takes a tool output that only looks like a denial for what it is: the tool output', async () => {
    const { guard } = await guarded(makeStore, {});
    const lookalike = { type: 'leash-denial', check: 'budget_blocked', reason: 'stop now' };
    const fetchTool = tool({ inputSchema: z.object({}), execute: async () => lookalike });
    const { model } = scripted([response([call('c1', 'fetch', {})])]);

    const result = await generateText({
      model,
      tools: guardTools({ fetch: fetchTool }, { guard }),
      stopWhen: stepCountIs(1),
      prompt: 'go',
    });

    expect(isLeashDenial(result.toolResults[0]?.output)).toBe(false);
  });

  it("keeps a guarded tool's own keys, its description and schema among them", async () => {
    const { guard } = await guarded(makeStore, {});
    const tag = Symbol('tag');
    const { tool: counted } = countedTool();
    const own = { ...counted, providerOptions: { x: { cache: true } }, [tag]: 'kept' };

    const wrapped = guardTools({ counted: own }, { guard }).counted as typeof own;

    expect(wrapped.description).toBe('does a thing');
    expect(wrapped.inputSchema).toBe(counted.inputSchema);
    expect(wrapped.providerOptions).toEqual({ x: { cache: true } });
    expect(wrapped[tag]).toBe('kept');
    expect(wrapped.execute).not.toBe(counted.execute);
  });

  it('passes a tool without an execute on unchanged', async () => {
    const { guard } = await guarded(makeStore, {});
    const clientSide = { inputSchema: z.object({}) };

    expect(guardTools({ clientSide }, { guard }).clientSide).toBe(clientSide);
  });

  it('refuses a tool without an execute that the guard has a rule for, naming the tool', async () => {
    const { guard } = await guarded(makeStore, {}, { tools: { clientSide: { costPerCall: 1 } } });
    const clientSide = { inputSchema: z.object({}) };

    expect(() => guardTools({ clientSide }, { guard })).toThrow(
      /^tools\.clientSide must be a tool with an execute/,
    );
  });

  it('runs a tool whose execute yields results as it goes to its last one', async () => {
    const { guard } = await guarded(makeStore, {});
    const progress = tool({
      inputSchema: z.object({}),
      async *execute() {
        yield 'half';
        yield 'all';
      },
    });
    const { model } = scripted([response([call('c1', 'progress', {})])]);

    const result = await generateText({
      model,
      tools: guardTools({ progress }, { guard }),
      stopWhen: stepCountIs(1),
      prompt: 'go',
    });

    expect(result.toolResults[0]?.output).toBe('all');
  });

  it('refuses options without a RunGuard, naming the field', () => {
    const { tool: t } = countedTool();

    expect(() => guardTools({ t }, { guard: undefined as never })).toThrow(GuardrailValidationError);
    expect(() => guardTools({ t }, { guard: undefined as never })).toThrow(/^guard must be a RunGuard/);
  });

  it('refuses an estimate that is not a function, naming the field', async () => {
    const { guard } = await guarded(makeStore, {});

    expect(() => guardTools({}, { guard, estimate: 3 as never })).toThrow(/estimate must be a function/);
  });
});
