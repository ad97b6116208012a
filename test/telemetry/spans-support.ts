// The OpenTelemetry SDK as an application sets it up, for the span tests: a tracer whose spans end up in
// an in-memory exporter, and an AsyncLocalStorage context manager registered for the test and taken down
// after it (leash registers nothing itself).
import { context, trace, type Context, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, beforeEach } from 'vitest';
import type { OtelTracer } from '../../src/index.js';

export type { ReadableSpan };

export interface Tracing {
  readonly tracer: OtelTracer & ReturnType<BasicTracerProvider['getTracer']>;
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
