// leash's spans of calls guarded through RunGuard itself: one span per call from its first check to its
// outcome, the framework's span of the call adopted, errors and refusals on its status.
import { trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { MemoryStore, type GuardrailsInit, type PlanChangeFn, type UpdateOptions } from '../../src/index.js';
import { MAX_CONTENT_CHARS } from '../../src/telemetry/spans.js';
import { guarded, type GuardOptions, type ServiceOptions } from '../agent/support.js';
import { parentOf, useTracing, withActive } from './spans-support.js';

const tracing = useTracing();
const ERROR = 2;

/** A memory store that notes the name of the span active at each update: where a decision lands. */
class SpanNotingStore extends MemoryStore {
  readonly spansAtUpdate: (string | undefined)[] = [];

  override update<T>(planId: string, change: PlanChangeFn<T>, options?: UpdateOptions): Promise<T> {
    const span = trace.getActiveSpan() as { readonly name?: string } | undefined;
    this.spansAtUpdate.push(span?.name);
    return super.update(planId, change, options);
  }
}

async function traced(
  init: GuardrailsInit = { toolBudget: 10 },
  options: GuardOptions = {},
  service: ServiceOptions = {},
) {
  const store = new SpanNotingStore();
  const made = await guarded(async () => store, init, options, {
    telemetry: { tracer: tracing.tracer },
    ...service,
  });
  store.spansAtUpdate.length = 0;
  return { ...made, store };
}

/** Calls `search` (id c1) in an `execute_tool search` span of call `id` another framework made active. */
async function callInOtherFrameworksSpan(id: string): Promise<void> {
  const { guard } = await traced();
  const outer = tracing.tracer.startSpan('execute_tool search', {
    attributes: { 'gen_ai.tool.call.id': id },
  });
  await withActive(outer, () => guard.toolCall({ toolCallId: 'c1', toolName: 'search', run: () => 'ok' }));
  outer.end();
}

describe('tool call spans', () => {
  it('runs every check of a call with its execute_tool span active, so its decisions land on it', async () => {
    const { guard, store } = await traced();

    await guard.toolCall({ toolCallId: 'c1', toolName: 'search', input: {}, run: () => 'ok' });

    expect(store.spansAtUpdate.length).toBeGreaterThan(0);
    expect(new Set(store.spansAtUpdate)).toEqual(new Set(['execute_tool search']));
  });

  it('keeps one span over all the tries of a call that failed and was retried', async () => {
    const { guard } = await traced({ toolBudget: 10, actorLimits: { maxRetriesPerFailure: 2 } });
    let tries = 0;

    const out = await guard.toolCall({
      toolCallId: 'c1',
      toolName: 'fetch',
      run: () => {
        if (++tries < 3) throw new Error('flaky');
        return 'ok';
      },
    });

    expect(out.allowed).toBe(true);
    expect(tries).toBe(3);
    const span = tracing.one('execute_tool fetch');
    expect(span.status.code).not.toBe(ERROR);
    expect(span.attributes['error.type']).toBeUndefined();
  });

  it("sets ERROR and error.type to the error's class when the tool threw", async () => {
    class QuotaExceeded extends Error {}
    const { guard } = await traced();

    const call = guard.toolCall({
      toolCallId: 'c1',
      toolName: 'fetch',
      run: () => {
        throw Object.assign(new QuotaExceeded('no quota left'), { retryable: false });
      },
    });

    await expect(call).rejects.toThrow('no quota left');
    const span = tracing.one('execute_tool fetch');
    expect(span.status).toEqual({ code: ERROR, message: 'no quota left' });
    expect(span.attributes['error.type']).toBe('QuotaExceeded');
  });

  it("sets error.type to the error's name when it has one of its own", async () => {
    const { guard } = await traced();

    const call = guard.toolCall({
      toolCallId: 'c1',
      toolName: 'fetch',
      run: () => {
        throw Object.assign(new Error('gone'), { name: 'AbortError', retryable: false });
      },
    });

    await expect(call).rejects.toThrow('gone');
    expect(tracing.one('execute_tool fetch').attributes['error.type']).toBe('AbortError');
  });

  it('sets a call a person must confirm to ERROR with error.type confirmation_required', async () => {
    const { guard } = await traced({ toolBudget: 10, requiredConfirmations: ['deploy'] });

    const out = await guard.toolCall({ toolCallId: 'c1', toolName: 'deploy', run: () => 'shipped' });

    expect(out.allowed).toBe(false);
    const span = tracing.one('execute_tool deploy');
    expect(span.status.code).toBe(ERROR);
    expect(span.attributes['error.type']).toBe(out.allowed ? undefined : out.check.eventType);
    expect(span.attributes['error.type']).toMatch(/confirmation/);
  });

  it('traces a call its caller refuses outright as a refused execute_tool span with no call id', async () => {
    const { guard } = await traced();

    await guard.refuse({ toolName: 'rm', input: {} }, 'hidden from the model');

    const span = tracing.one('execute_tool rm');
    expect(span.attributes['error.type']).toBe('tool_calls_blocked');
    expect(span.attributes['gen_ai.tool.call.id']).toBeUndefined();
  });

  it('adds to an execute_tool span of the same call that another framework made active', async () => {
    await callInOtherFrameworksSpan('c1');

    const span = tracing.one('execute_tool search');
    expect(span.attributes).toMatchObject({ 'gen_ai.tool.name': 'search', 'leash.plan.id': 'plan' });
  });

  it('makes its own span, a child, under an execute_tool span of another call', async () => {
    await callInOtherFrameworksSpan('c0');

    const [inner, parent] = tracing.named('execute_tool search');
    expect(inner?.attributes['gen_ai.tool.call.id']).toBe('c1');
    expect(parentOf(inner!)).toBe(parent?.spanContext().spanId);
  });

  it('makes its own span when the active span does not show its name and attributes', async () => {
    const { guard } = await traced();
    const real = tracing.tracer.startSpan('execute_tool search', {
      attributes: { 'gen_ai.tool.call.id': 'c1' },
    });
    // What the API promises of a span, and nothing more.
    const bare = {
      spanContext: () => real.spanContext(),
      setAttribute: () => bare,
      setAttributes: () => bare,
      addEvent: () => bare,
      addLink: () => bare,
      addLinks: () => bare,
      setStatus: () => bare,
      updateName: () => bare,
      end: () => undefined,
      isRecording: () => true,
      recordException: () => undefined,
    };

    await withActive(bare, () => guard.toolCall({ toolCallId: 'c1', toolName: 'search', run: () => 1 }));
    real.end();

    const [own] = tracing.named('execute_tool search');
    expect(parentOf(own!)).toBe(real.spanContext().spanId);
  });

  it('makes no span when the service has telemetry off', async () => {
    const { guard } = await traced(undefined, undefined, { telemetry: false });

    await tracing.inRoot(() => guard.toolCall({ toolCallId: 'c1', toolName: 'search', run: () => 1 }));

    expect(tracing.spans().map((s) => s.name)).toEqual(['root']);
  });
});

describe("a tool call's content", () => {
  const input = { path: 'notes.txt' };

  it('is left out of the span by default', async () => {
    const { guard } = await traced();

    await guard.toolCall({ toolCallId: 'c1', toolName: 'read', input, run: () => ({ text: 'secret' }) });

    const keys = Object.keys(tracing.one('execute_tool read').attributes);
    expect(keys).not.toContain('gen_ai.tool.call.arguments');
    expect(keys).not.toContain('gen_ai.tool.call.result');
  });

  it('is recorded as JSON text when the application opts in with recordContent', async () => {
    const { guard } = await traced(undefined, undefined, {
      telemetry: { tracer: tracing.tracer, recordContent: true },
    });

    await guard.toolCall({ toolCallId: 'c1', toolName: 'read', input, run: () => ({ text: 'secret' }) });

    expect(tracing.one('execute_tool read').attributes).toMatchObject({
      'gen_ai.tool.call.arguments': '{"path":"notes.txt"}',
      'gen_ai.tool.call.result': '{"text":"secret"}',
    });
  });

  it(`is cut to ${MAX_CONTENT_CHARS} characters`, async () => {
    const { guard } = await traced(undefined, undefined, {
      telemetry: { tracer: tracing.tracer, recordContent: true },
    });

    await guard.toolCall({ toolCallId: 'c1', toolName: 'read', input, run: () => 'x'.repeat(100_000) });

    const result = tracing.one('execute_tool read').attributes['gen_ai.tool.call.result'] as string;
    expect(result).toHaveLength(MAX_CONTENT_CHARS);
    expect(result.endsWith('…')).toBe(true);
  });
});

describe('model call spans', () => {
  const MODELS = { 'gpt-x': { input: 1000, output: 2000 } };
  const estimate = { inputTokens: 100, maxOutputTokens: 10 };

  it("runs a model call's checks with its chat span active, and records its usage and cost", async () => {
    const { guard, store } = await traced({ toolBudget: 10 }, { models: MODELS });

    await guard.modelCall({
      modelId: 'gpt-x',
      estimate,
      run: () => ({ output: 'hi', usage: { inputTokens: 100, outputTokens: 10, cachedInputTokens: 40 } }),
    });

    expect(new Set(store.spansAtUpdate)).toEqual(new Set(['chat gpt-x']));
    const span = tracing.one('chat gpt-x');
    expect(span.kind).toBe(2); // CLIENT
    expect(span.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'gpt-x',
      'gen_ai.usage.input_tokens': 100,
      'gen_ai.usage.output_tokens': 10,
      'gen_ai.usage.cache_read.input_tokens': 40,
    });
    expect(span.attributes['leash.cost']).toBeGreaterThan(0);
  });

  it('sets a model call the budget refuses to ERROR with error.type budget_blocked', async () => {
    const { guard } = await traced({ toolBudget: 0.01 }, { models: MODELS });

    const out = await guard.modelCall({
      modelId: 'gpt-x',
      estimate,
      run: () => ({ output: 1, usage: estimate as never }),
    });

    expect(out.allowed).toBe(false);
    const span = tracing.one('chat gpt-x');
    expect(span.status.code).toBe(ERROR);
    expect(span.attributes['error.type']).toBe('budget_blocked');
  });

  it("keeps an opened call's span open until the caller settles it, then records its usage", async () => {
    const { guard } = await traced({ toolBudget: 10 }, { models: MODELS });

    const opened = await guard.openModelCall({ modelId: 'gpt-x', estimate });
    if (!opened.allowed) throw new Error(opened.reason);
    expect(tracing.named('chat gpt-x')).toEqual([]);
    await opened.handle.commit({ inputTokens: 90, outputTokens: 5 });

    expect(tracing.one('chat gpt-x').attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 90,
      'gen_ai.usage.output_tokens': 5,
    });
  });

  it("sets an opened call released for an error to ERROR, the error's class unknown", async () => {
    const { guard } = await traced({ toolBudget: 10 }, { models: MODELS });

    const opened = await guard.openModelCall({ modelId: 'gpt-x', estimate });
    if (!opened.allowed) throw new Error(opened.reason);
    await opened.handle.release({ error: 'connection reset' });

    const span = tracing.one('chat gpt-x');
    expect(span.status).toEqual({ code: ERROR, message: 'connection reset' });
    expect(span.attributes).toMatchObject({ 'error.type': '_OTHER', 'leash.cost': 0 });
  });
});
