import { createRequire } from 'node:module';

// The parts of @opentelemetry/api that leash uses, as leash's own structural types: the package is an
// optional peer, so nothing leash publishes may name its types. A Tracer, Span or Meter of the API is
// one of these.

/** An attribute value as OpenTelemetry takes it. */
export type OtelAttributeValue = string | number | boolean | string[] | number[] | boolean[];

/** Attributes of a span, an event or a measurement. */
export type OtelAttributes = Record<string, OtelAttributeValue | undefined>;

export interface OtelSpanContext {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
}

export interface OtelSpan {
  spanContext(): OtelSpanContext;
  setAttribute(key: string, value: OtelAttributeValue): unknown;
  setAttributes(attributes: OtelAttributes): unknown;
  addEvent(name: string, attributes?: OtelAttributes): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  isRecording(): boolean;
  end(): void;
}

export interface OtelTracer {
  startSpan(
    name: string,
    options?: { kind?: number; attributes?: OtelAttributes },
    context?: unknown,
  ): OtelSpan;
}

export interface OtelCounter {
  add(value: number, attributes?: OtelAttributes): void;
}

export interface OtelHistogram {
  record(value: number, attributes?: OtelAttributes): void;
}

export interface OtelObservableResult {
  observe(value: number, attributes?: OtelAttributes): void;
}

export interface OtelObservableGauge {
  addCallback(callback: (result: OtelObservableResult) => void | Promise<void>): void;
}

export interface OtelInstrumentOptions {
  description?: string;
  unit?: string;
  advice?: { explicitBucketBoundaries?: number[] };
}

export interface OtelMeter {
  createCounter(name: string, options?: OtelInstrumentOptions): OtelCounter;
  createHistogram(name: string, options?: OtelInstrumentOptions): OtelHistogram;
  createObservableGauge(name: string, options?: OtelInstrumentOptions): OtelObservableGauge;
}

/** @internal what leash calls of the loaded `@opentelemetry/api` module. */
export interface OtelApi {
  readonly trace: {
    getTracer(name: string, version?: string): OtelTracer;
    getActiveSpan(): OtelSpan | undefined;
    setSpan(context: unknown, span: OtelSpan): unknown;
  };
  readonly context: {
    active(): unknown;
    with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
      context: unknown,
      fn: F,
      thisArg?: unknown,
      ...args: A
    ): ReturnType<F>;
  };
  readonly metrics: { getMeter(name: string, version?: string): OtelMeter };
}

/** `SpanStatusCode.ERROR` of the API. */
export const SPAN_STATUS_ERROR = 2;
/** `SpanKind.INTERNAL` of the API. */
export const SPAN_KIND_INTERNAL = 0;

let loaded: OtelApi | null | undefined;

/**
 * @internal `@opentelemetry/api` when the application can resolve it, else null; tried once a process.
 * Synchronous (the API keeps its registered providers on `globalThis`, so this copy sees the ones the
 * application registered whichever module format it loaded), and it registers nothing.
 */
export function loadOtelApi(): OtelApi | null {
  if (loaded === undefined) {
    try {
      loaded = createRequire(import.meta.url)('@opentelemetry/api') as OtelApi;
    } catch {
      loaded = null;
    }
  }
  return loaded;
}
