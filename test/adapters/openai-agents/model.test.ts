// leash/openai-agents' metered models on the Agents SDK's own run loop, with a scripted Model.
import {
  Agent,
  ModelBehaviorError,
  run,
  Runner,
  type Model,
  type ModelProvider,
  type ModelRequest,
  type StreamEvent,
} from '@openai/agents';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { guardModel, guardModelProvider, leashEnded } from '../../../src/adapters/openai-agents/index.js';
import { requestTokens, usageOf } from '../../../src/adapters/openai-agents/model.js';
import { GuardrailValidationError, type RunGuard } from '../../../src/index.js';
import { eventTypes, guarded, LOCAL_STORES, settledUntil } from '../../agent/support.js';
import { trailOf } from '../../support/service.js';
import { scripted, setUp, usage, writes } from './support.js';

/** $1 per million input tokens, $2 per million output, $0.5 per million read from the cache. */
const PRICED = { models: { 'mock-model': { input: 1, output: 2, cached_input: 0.5 } } };
const metered = (model: Model, guard: RunGuard) => guardModel(model, { guard, modelId: 'mock-model' });
const spent = async (service: { getGuardrails(id: string): Promise<{ budgetSpent: number } | null> }) =>
  (await service.getGuardrails('plan'))?.budgetSpent;

/** Reads a streamed run to its end; resolves with its result once completed. */
async function streamed(agent: Agent, input: string) {
  const result = await run(agent, input, { stream: true });
  for await (const _event of result.toStream()) void _event;
  await result.completed;
  return result;
}

describe.each(LOCAL_STORES)('guardModel on %s', (_name, makeStore) => {
  it('charges a call what its usage cost, cached input at its own price', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const model = metered(scripted([{ text: 'hi', usage: usage(1000, 100, 400) }]), guard);

    await run(new Agent({ name: 'a', model }), 'hello');

    // 600 × 1 + 400 × 0.5 + 100 × 2 = 1000 micro-units
    expect(await spent(service)).toBe(0.001);
  });

  it('gives the provider the output cap it set aside for, when the agent gave none', async () => {
    const { guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const inner = scripted([{ text: 'hi', usage: usage(10, 1) }]);
    const model = guardModel(inner, { guard, modelId: 'mock-model', maxOutputTokens: 300 });

    await run(new Agent({ name: 'a', model }), 'hello');

    expect(inner.requests[0]?.modelSettings.maxTokens).toBe(300);
  });

  it("gives a stream the agent's own output cap, the one it set aside for", async () => {
    const { guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const inner = scripted([{ text: 'hi', usage: usage(10, 1) }]);

    await streamed(
      new Agent({ name: 'a', model: metered(inner, guard), modelSettings: { maxTokens: 50 } }),
      'hi',
    );

    expect(inner.requests[0]?.modelSettings.maxTokens).toBe(50);
  });

  it('charges a streamed call from its response_done event', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const model = metered(scripted([{ text: 'hi', usage: usage(2000, 500) }]), guard);

    const result = await streamed(new Agent({ name: 'a', model }), 'hello');

    expect(result.finalOutput).toBe('hi');
    expect(await spent(service)).toBe(0.003);
  });

  it('charges the whole estimate of a call whose usage was not reported', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const inner = scripted([{ text: 'hi', usage: null }]);
    const model = guardModel(inner, { guard, modelId: 'mock-model', maxOutputTokens: 1000 });

    await run(new Agent({ name: 'a', model }), 'hello');

    const inputTokens = requestTokens(inner.requests[0]!);
    expect(await spent(service)).toBe((inputTokens * 1 + 1000 * 2) / 1e6);
  });

  it('ends the run when the budget cannot cover the next call, keeping what the tools did', async () => {
    // Each call costs 0.001 (1,000 tokens in) and sets more aside: the budget covers two calls, not three.
    const costly = usage(1000, 0);
    const { service, guard, agent, ran } = await setUp(
      makeStore,
      { toolBudget: 0.0025 },
      scripted([
        { ...writes('a'), usage: costly },
        { ...writes('b'), usage: costly },
        { ...writes('c'), usage: costly },
      ]),
      PRICED,
    );
    agent.model = guardModel(agent.model as Model, { guard, modelId: 'mock-model', maxOutputTokens: 500 });

    const result = await run(agent, 'go');

    expect(ran).toEqual(['a', 'b']);
    expect(String(result.finalOutput)).toMatch(/^leash ended the run \(budget_blocked\)/);
    expect(JSON.stringify(result.newItems.map((i) => i.rawItem))).toContain('wrote b');
    expect(result.state.toString()).toContain('wrote a');
    expect(await spent(service)).toBeLessThanOrEqual(0.0025);
  });

  it('says which limit ended the run, on the guard, as the final output does', async () => {
    const { guard, agent } = await setUp(
      makeStore,
      { maxSteps: 1 },
      scripted([writes('a'), writes('b'), { text: 'never read' }]),
    );
    agent.model = metered(agent.model as Model, guard);

    const result = await run(agent, 'go');

    expect(guard.lastLimit?.eventType).toBe('step_blocked');
    expect(guard.lastLimitText).toBe(String(result.finalOutput));
  });

  it('ends the run at the step limit with the text saying so', async () => {
    const { guard, agent, ran } = await setUp(
      makeStore,
      { maxSteps: 1 },
      scripted([writes('a'), writes('b'), { text: 'never read' }]),
    );
    agent.model = metered(agent.model as Model, guard);

    const result = await run(agent, 'go');

    expect(ran).toEqual(['a']);
    expect(String(result.finalOutput)).toMatch(/^leash ended the run \(step_blocked\)/);
  });

  it('ends a streamed run at the step limit with the text saying so', async () => {
    const { guard, agent, ran } = await setUp(makeStore, { maxSteps: 1 }, scripted([writes('a')]));
    agent.model = metered(agent.model as Model, guard);

    const result = await streamed(agent, 'go');

    expect(ran).toEqual(['a']);
    expect(String(result.finalOutput)).toMatch(/^leash ended the run \(step_blocked\)/);
    // A later call must not be chained on a response no provider gave.
    expect(result.lastResponseId).not.toBe('leash-ended');
    expect(result.state.toString()).not.toContain('leash-ended');
  });

  describe('an agent with a structured outputType', () => {
    const structured = async () => {
      const set = await setUp(makeStore, { maxSteps: 1 }, scripted([writes('a'), writes('b')]));
      const agent = new Agent({
        name: 'summariser',
        model: metered(set.agent.model as Model, set.guard),
        tools: set.agent.tools,
        outputType: z.object({ summary: z.string() }),
      });
      return { ...set, agent };
    };

    it('ends the run with the value an invalidFinalOutput handler gives once leash ended it', async () => {
      const { agent, ran } = await structured();
      const seen: (string | null)[] = [];

      const result = await run(agent, 'go', {
        errorHandlers: {
          invalidFinalOutput: ({ runData }) => {
            seen.push(leashEnded(runData));
            return { finalOutput: { summary: 'stopped early' } };
          },
        },
      });

      expect(ran).toEqual(['a']);
      expect(result.finalOutput).toEqual({ summary: 'stopped early' });
      expect(seen[0]).toMatch(/^leash ended the run \(step_blocked\)/);
    });

    it('throws the SDK’s ModelBehaviorError, with the run’s data, when no handler ends it', async () => {
      const { agent } = await structured();

      await expect(run(agent, 'go')).rejects.toBeInstanceOf(ModelBehaviorError);
    });
  });

  it('ends the run on a model without a price while the plan has a budget, naming the policy key', async () => {
    const { guard } = await guarded(makeStore, { toolBudget: 1 });
    const inner = scripted([{ text: 'never made' }]);

    const result = await run(new Agent({ name: 'a', model: metered(inner, guard) }), 'hello');

    expect(inner.requests).toHaveLength(0);
    expect(String(result.finalOutput)).toContain('models.mock-model');
  });

  it('charges the estimate of a stream its reader stopped reading before its end', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const inner = scripted([{ text: 'hi', usage: usage(10, 5) }]);
    const model = guardModel(inner, { guard, modelId: 'mock-model', maxOutputTokens: 1000 });
    const request = {
      input: 'hello',
      modelSettings: {},
      tools: [],
      handoffs: [],
      outputType: 'text' as const,
    };

    for await (const event of model.getStreamedResponse(request as never)) {
      if (event.type === 'output_text_delta') break;
    }

    expect(await spent(service)).toBe((requestTokens(request as never) + 2000) / 1e6);
    const entries = (await trailOf(service, 'plan')).entries;
    expect(JSON.stringify(entries.at(-1)?.details)).toMatch(/cancelled before its finish/);
  });

  it('gives the estimate back when the stream fails before its first event', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const failing: Model = {
      getResponse: () => Promise.reject(new Error('unused')),
      // eslint-disable-next-line require-yield
      async *getStreamedResponse(): AsyncIterable<StreamEvent> {
        throw new Error('connection refused');
      },
    };

    await expect(streamed(new Agent({ name: 'a', model: metered(failing, guard) }), 'hi')).rejects.toThrow(
      'connection refused',
    );

    expect(await spent(service)).toBe(0);
    expect((await eventTypes(service)).at(-1)).toBe('budget_released');
  });

  /** A model whose calls fail with `error`; streamed, before their first event. */
  function failingWith(error: Error): Model {
    return {
      getResponse: () => Promise.reject(error),
      // eslint-disable-next-line require-yield
      async *getStreamedResponse(): AsyncIterable<StreamEvent> {
        throw error;
      },
    };
  }

  /** An error as the SDK's OpenAI models throw for a response that was incomplete or failed. */
  const startedError = () =>
    Object.assign(new Error('response incomplete: max_output_tokens'), {
      responseStarted: true,
      unsafeToReplay: true,
    });

  it('charges the estimate of a call that failed after the provider started its response', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const model = guardModel(failingWith(startedError()), {
      guard,
      modelId: 'mock-model',
      maxOutputTokens: 1000,
    });

    await expect(run(new Agent({ name: 'a', model }), 'hi')).rejects.toThrow('max_output_tokens');

    expect(await spent(service)).toBeGreaterThanOrEqual(0.002);
  });

  it('charges the estimate of a stream that failed after the provider started its response', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const model = guardModel(failingWith(startedError()), {
      guard,
      modelId: 'mock-model',
      maxOutputTokens: 1000,
    });

    await expect(streamed(new Agent({ name: 'a', model }), 'hi')).rejects.toThrow('max_output_tokens');

    expect(await spent(service)).toBeGreaterThanOrEqual(0.002);
  });

  it('charges the estimate of a call the run aborted while it was under way', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const inner = hanging();
    const controller = new AbortController();
    const agent = new Agent({ name: 'a', model: guardModel(inner, { guard, modelId: 'mock-model' }) });
    const running = run(agent, 'hello', { signal: controller.signal });
    await settledUntil(() => inner.requests.length === 1);

    controller.abort();
    await expect(running).rejects.toThrow();

    const asked = inner.requests[0] as ModelRequest;
    expect(await spent(service)).toBe((requestTokens(asked) + 4096 * 2) / 1e6);
  });

  it('keeps a streamed answer when the wall clock runs out while its response_done is being charged', async () => {
    const init = { toolBudget: 1, maxWallClockSeconds: 10 };
    const { service, guard, clock, timers } = await guarded(makeStore, init, PRICED);
    const signals: AbortSignal[] = [];
    const inner: Model = {
      getResponse: () => Promise.reject(new Error('unused')),
      async *getStreamedResponse(request): AsyncIterable<StreamEvent> {
        signals.push(request.signal as AbortSignal);
        const usage = { requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 };
        yield { type: 'response_done', response: { id: 'real', usage, output: [] } };
      },
    };
    // The clock runs out while the call's usage is being charged.
    const settle = service.settleReservation.bind(service);
    service.settleReservation = async (...args: Parameters<typeof settle>) => {
      clock.advance(10_001);
      timers.fire();
      await settledUntil(() => signals[0]?.aborted === true);
      return settle(...args);
    };
    const request = { input: 'hi', modelSettings: {}, tools: [], handoffs: [], outputType: 'text' as const };

    const events: StreamEvent[] = [];
    for await (const event of metered(inner, guard).getStreamedResponse(request as never)) events.push(event);

    expect(events.map((e) => (e.type === 'response_done' ? e.response.id : e.type))).toEqual(['real']);
  });

  it('gives the estimate back when the call fails', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const failing: Model = {
      getResponse: () => Promise.reject(new Error('rate limited')),
      // eslint-disable-next-line require-yield
      async *getStreamedResponse(): AsyncIterable<StreamEvent> {
        throw new Error('unused');
      },
    };

    await expect(run(new Agent({ name: 'a', model: metered(failing, guard) }), 'hi')).rejects.toThrow(
      'rate limited',
    );

    expect(await spent(service)).toBe(0);
  });

  /** A model whose calls never answer until their signal aborts; `requests` holds what it was asked. */
  function hanging(): Model & { requests: ModelRequest[] } {
    const requests: ModelRequest[] = [];
    const aborted = (signal?: AbortSignal) =>
      new Promise<never>((_resolve, reject) =>
        signal?.addEventListener('abort', () => reject(signal.reason)),
      );
    return {
      requests,
      getResponse(request) {
        requests.push(request);
        return aborted(request.signal);
      },
      async *getStreamedResponse(request): AsyncIterable<StreamEvent> {
        requests.push(request);
        yield { type: 'output_text_delta', delta: 'part' };
        await aborted(request.signal);
      },
    };
  }

  it.each([
    ['a call', (agent: Agent) => run(agent, 'hello')],
    ['a stream', (agent: Agent) => streamed(agent, 'hello')],
  ])(
    'ends the run when the wall clock runs out during %s, aborting it and charging the estimate',
    async (_what, runIt) => {
      const init = { toolBudget: 1, maxWallClockSeconds: 10 };
      const { service, guard, clock, timers } = await guarded(makeStore, init, PRICED);
      const inner = hanging();
      const running = runIt(new Agent({ name: 'a', model: metered(inner, guard) }));
      await settledUntil(() => inner.requests.length === 1);

      clock.advance(10_001);
      timers.fire();
      const result = await running;

      const asked = inner.requests[0] as ModelRequest;
      expect(asked.signal?.aborted).toBe(true);
      expect(String(result.finalOutput)).toMatch(/^leash ended the run \(wall_clock_blocked\)/);
      expect(await spent(service)).toBe((requestTokens(asked) + 4096 * 2) / 1e6);
    },
  );

  it('prices a model instance under its own model name when it has one', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const inner = Object.assign(scripted([{ text: 'hi', usage: usage(1000, 0) }]), { model: 'mock-model' });

    await run(new Agent({ name: 'a', model: guardModel(inner, { guard }) }), 'hello');

    expect(await spent(service)).toBe(0.001);
  });

  it('keeps what the model says of a prompt choosing the model, as the SDK reads it', async () => {
    const { guard } = await guarded(makeStore, {});
    const inner = Object.assign(scripted([]), { supportsPromptModelSelection: true });

    expect(metered(inner, guard).supportsPromptModelSelection).toBe(true);
  });

  it('refuses a model instance with no name and no modelId, naming the field', async () => {
    const { guard } = await guarded(makeStore, {});

    expect(() => guardModel(scripted([]), { guard })).toThrow(GuardrailValidationError);
    expect(() => guardModel(scripted([]), { guard })).toThrow(/modelId/);
  });

  it('refuses an output allowance below 1, naming the field and the value', async () => {
    const { guard } = await guarded(makeStore, {});

    expect(() => guardModel(scripted([]), { guard, modelId: 'm', maxOutputTokens: 0 })).toThrow(
      /maxOutputTokens must be an integer >= 1, got 0/,
    );
  });
});

describe.each(LOCAL_STORES)('guardModelProvider on %s', (_name, makeStore) => {
  /** A provider whose every model is scripted to answer `hi` with 1,000 input tokens; `asked` its names. */
  function provider(): ModelProvider & { asked: (string | undefined)[] } {
    const asked: (string | undefined)[] = [];
    return {
      asked,
      getModel(name?: string) {
        asked.push(name);
        return scripted([{ text: 'hi', usage: usage(1000, 0) }]);
      },
    };
  }

  it('prices each model under the name the agent asked for', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const runner = new Runner({ modelProvider: guardModelProvider(provider(), { guard }) });

    await runner.run(new Agent({ name: 'a', model: 'mock-model' }), 'hello');

    expect(await spent(service)).toBe(0.001);
  });

  it('prices the default model under modelId', async () => {
    const { service, guard } = await guarded(makeStore, { toolBudget: 1 }, PRICED);
    const models = provider();
    const runner = new Runner({
      modelProvider: guardModelProvider(models, { guard, modelId: 'mock-model' }),
    });

    await runner.run(new Agent({ name: 'a' }), 'hello');

    expect(models.asked).toEqual(['']);
    expect(await spent(service)).toBe(0.001);
  });

  it('refuses something that is not a model provider, naming the field', async () => {
    const { guard } = await guarded(makeStore, {});

    expect(() => guardModelProvider({} as ModelProvider, { guard })).toThrow(
      /provider must be a ModelProvider/,
    );
  });
});

describe('leashEnded', () => {
  const message = (text: string) => ({
    type: 'message',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text }],
  });

  it('finds the text leash ended the run with in the run’s last output', () => {
    const text = 'leash ended the run (budget_blocked): no budget left';
    expect(leashEnded({ output: [message('hi'), message(text)] })).toBe(text);
  });

  it('finds nothing when the last output is the model’s own', () => {
    expect(
      leashEnded({ output: [message('leash ended the run (x): y'), message('{"summary":1}')] }),
    ).toBeNull();
  });
});

describe('requestTokens', () => {
  const request = (input: ModelRequest['input']) =>
    ({ input, modelSettings: {}, tools: [], handoffs: [], outputType: 'text' }) as unknown as ModelRequest;

  it('estimates a text input at a token for every 3 bytes', () => {
    expect(requestTokens(request('x'.repeat(600))) - requestTokens(request('x'.repeat(300)))).toBe(100);
  });

  it('counts an image at a fixed number of tokens, whatever its size', () => {
    const image = (bytes: number) =>
      request([
        {
          role: 'user',
          content: [{ type: 'input_image', image: `data:image/png;base64,${'A'.repeat(bytes)}` }],
        },
      ]);

    expect(requestTokens(image(3_000_000))).toBe(requestTokens(image(30)));
    expect(requestTokens(image(30))).toBeGreaterThanOrEqual(1500);
  });
});

describe('usageOf', () => {
  const estimate = { inputTokens: 100, maxOutputTokens: 50 };

  it('adds up the cached tokens of every request the usage holds', () => {
    expect(
      usageOf(
        {
          inputTokens: 1000,
          outputTokens: 10,
          inputTokensDetails: [{ cached_tokens: 200 }, { cached_tokens: 300 }],
        },
        estimate,
      ),
    ).toEqual({ inputTokens: 1000, outputTokens: 10, cachedInputTokens: 500 });
  });

  it('takes a usage with no input tokens at the whole estimate', () => {
    expect(usageOf({ inputTokens: 0, outputTokens: 0 }, estimate)).toEqual({
      inputTokens: 100,
      outputTokens: 50,
    });
  });
});
