// The OpenTelemetry SDK as an application sets it up, for the span tests: a tracer whose spans end up in
// an in-memory exporter, and an AsyncLocalStorage context manager registered for the test and taken down
// after it (leash registers nothing itself).
import { context, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { generateText, stepCountIs } from 'ai';
import { afterEach, beforeEach } from 'vitest';
import { guardModel, guardTools } from '../../src/adapters/ai-sdk/index.js';
import { AutonomyGuardrailService, MemoryStore } from '../../src/index.js';
import { call, countedTool, response, scripted, text } from '../adapters/ai-sdk/support.js';
import { guarded } from '../agent/support.js';

export type { ReadableSpan };

export interface Tracing {
  readonly tracer: Tracer;
  /** The spans ended so far, in the order they ended. */
  spans(): ReadableSpan[];
  /** The ended spans called `name`. */
  named(name: string): ReadableSpan[];
  /** The one ended span called `name`; throws unless there is exactly one. */
  one(name: string): ReadableSpan;
  /** Runs `fn` in a `root` span of the test's own, ended when `fn` settles; resolves with it and the span. */
  inRoot<T>(fn: () => Promise<T>): Promise<{ result: T; root: ReadableSpan }>;
}

/** Sets up tracing before each test of the file and takes it down after it. */
export function useTracing(): Tracing {
  let exporter: InMemorySpanExporter;
  let provider: BasicTracerProvider;
  let manager: AsyncLocalStorageContextManager;
  beforeEach(() => {
    exporter = new InMemorySpanExporter();
    provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
  });
  afterEach(async () => {
    context.disable();
    manager.disable();
    await provider.shutdown();
  });
  const tracing: Tracing = {
    get tracer() {
      return provider.getTracer('test');
    },
    spans: () => exporter.getFinishedSpans(),
    named: (name) => exporter.getFinishedSpans().filter((s) => s.name === name),
    one: (name) => {
      const found = tracing.named(name);
      if (found.length !== 1) {
        const names = tracing.spans().map((s) => s.name);
        throw new Error(`expected one span "${name}", found ${found.length} among ${names.join(', ')}`);
      }
      return found[0] as ReadableSpan;
    },
    inRoot: async (fn) => {
      const result = await tracing.tracer.startActiveSpan('root', async (span: Span) => {
        try {
          return await fn();
        } finally {
          span.end();
        }
      });
      return { result, root: tracing.one('root') };
    },
  };
  return tracing;
}

/** The id of the span `span`'s parent, or undefined for a root span. */
export function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

/** Runs `fn` with `span` active. */
export function withActive<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active() as Context, span), fn);
}

/** 100 a million input tokens and 200 a million output: 100 in and 10 out cost 0.012. */
export const PRICED = { 'mock-model': { input: 100, output: 200 } } as const;

/**
 * A real generateText loop of three steps with leash's AI SDK adapter (the AI SDK's telemetry on when
 * `sdkTelemetry`): a search the budget lets through (c1), a second it refuses (c2), then text. Resolves
 * with the service, whose store holds the plan's log.
 */
export async function searchLoop(
  tracing: Tracing,
  sdkTelemetry: boolean,
  recordContent = false,
): Promise<AutonomyGuardrailService> {
  const { guard, service } = await guarded(
    async () => new MemoryStore(),
    { toolBudget: 0.5 },
    { tools: { search: { costPerCall: 0.3 } }, models: PRICED },
    { telemetry: { tracer: tracing.tracer, recordContent } },
  );
  const search = countedTool('found');
  const { model } = scripted([
    response([call('c1', 'search', { path: 'a' })]),
    response([call('c2', 'search', { path: 'b' })]),
    response([text('done')]),
  ]);
  await generateText({
    model: guardModel(model, { guard, maxOutputTokens: 10 }),
    tools: guardTools({ search: search.tool }, { guard }),
    stopWhen: stepCountIs(3),
    prompt: 'look',
    ...(sdkTelemetry ? { experimental_telemetry: { isEnabled: true, tracer: tracing.tracer } } : {}),
  });
  return service;
}
