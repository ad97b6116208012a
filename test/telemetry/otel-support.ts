// The OpenTelemetry SDK in memory, for tests: a tracer whose spans land in an exporter, a context manager
// that carries the active span across awaits, and a meter read on demand. leash registers none of them.
import { context, trace, type Span, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  MeterProvider,
  MetricReader,
  type DataPoint,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, beforeEach } from 'vitest';
import {
  AutonomyGuardrailService,
  ManualClock,
  type AutonomyGuardrailServiceOptions,
  type GuardrailsInit,
  type OtelMeter,
  type OtelTracer,
} from '../../src/index.js';
import { T0 } from '../support/service.js';

/** A reader collected by the test itself. */
class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

export interface Otel {
  readonly exporter: InMemorySpanExporter;
  readonly tracer: OtelTracer;
  /** The same tracer, as the API types it. */
  readonly sdkTracer: Tracer;
  readonly meter: OtelMeter;
  /** Every metric collected now, by name. */
  metrics(): Promise<Map<string, MetricData>>;
}

/** The SDK for each test of the file, with the context manager enabled and disabled around it. */
export function useOtel(): Otel {
  let manager: AsyncLocalStorageContextManager;
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  let reader = new TestReader();
  let meterProvider = new MeterProvider({ readers: [reader] });
  const sdkTracer = tracerProvider.getTracer('test');
  const otel = {
    exporter,
    tracer: sdkTracer,
    sdkTracer,
    meter: meterProvider.getMeter('test') as OtelMeter,
    async metrics() {
      const { resourceMetrics } = await reader.collect();
      const all = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
      return new Map(all.map((m) => [m.descriptor.name, m]));
    },
  };
  beforeEach(() => {
    manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    exporter.reset();
    reader = new TestReader();
    meterProvider = new MeterProvider({ readers: [reader] });
    otel.meter = meterProvider.getMeter('test') as OtelMeter;
  });
  afterEach(async () => {
    context.disable();
    manager.disable();
    await meterProvider.shutdown();
  });
  return otel;
}

/** Runs `fn` in a new active span that it ends; resolves with what `fn` did and the span as exported. */
export async function inSpan<T>(
  otel: Otel,
  fn: (span: Span) => Promise<T>,
): Promise<{ value: T; span: ReadableSpan }> {
  const span = otel.sdkTracer.startSpan('execute_tool search');
  const value = await context.with(trace.setSpan(context.active(), span), () => fn(span));
  span.end();
  const done = otel.exporter
    .getFinishedSpans()
    .find((s) => s.spanContext().spanId === span.spanContext().spanId);
  if (done === undefined) throw new Error('the span was not exported');
  return { value, span: done };
}

/** A service on a ManualClock at T0 reporting to `otel`, with `plan` configured by `init` (unless null). */
export async function tracedService(
  otel: Otel,
  init: GuardrailsInit | null,
  options: AutonomyGuardrailServiceOptions = {},
) {
  const clock = new ManualClock(T0);
  let n = 0;
  const service = new AutonomyGuardrailService({
    clock,
    ids: () => `a${++n}`,
    telemetry: { tracer: otel.tracer, meter: otel.meter },
    ...options,
  });
  if (init !== null) await service.configureGuardrails('plan', init);
  return { clock, service };
}

/** The attributes of each `leash.decision` event of `span`, in order. */
export function decisions(span: ReadableSpan): Record<string, unknown>[] {
  return span.events.filter((e) => e.name === 'leash.decision').map((e) => ({ ...e.attributes }));
}

/** The data points of metric `name`, as attributes and value. */
export function points(metrics: Map<string, MetricData>, name: string): DataPoint<unknown>[] {
  return (metrics.get(name)?.dataPoints ?? []) as DataPoint<unknown>[];
}
