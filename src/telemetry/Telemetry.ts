import { invalid } from '../errors.js';
import { isPlainObject } from '../json.js';
import { packageVersion } from '../version.js';
import { LeashMetrics } from './metrics.js';
import { loadOtelApi, type OtelApi, type OtelMeter, type OtelSpan, type OtelTracer } from './otel.js';

/** How a service reports to OpenTelemetry: see {@link Telemetry}. */
export interface TelemetryOptions {
  /** The tracer to make and find spans with; default: the globally registered provider's `leash` tracer. */
  readonly tracer?: OtelTracer;
  /** The meter of leash's metrics; default: the globally registered provider's `leash` meter. */
  readonly meter?: OtelMeter;
  /**
   * Records tool inputs and outputs on tool spans (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`).
   * Off by default: they may hold what the trace backend must not keep.
   */
  readonly recordContent?: boolean;
}

const OPTION_KEYS = new Set(['tracer', 'meter', 'recordContent']);

/**
 * A service's link to OpenTelemetry, made when `@opentelemetry/api` can be loaded (leash never registers
 * a provider: without an SDK the API is a no-op) and the service's `telemetry` option is not `false`.
 */
export class Telemetry {
  /** @internal the loaded API. */
  readonly api: OtelApi;
  readonly tracer: OtelTracer;
  readonly meter: OtelMeter;
  readonly recordContent: boolean;
  /**
   * @internal leash's instruments on {@link meter}, made once; null for the API's no-op meter (the API
   * has no proxy meter: a meter got before an SDK was registered stays a no-op), so that nothing is
   * counted for nothing.
   */
  readonly metrics: LeashMetrics | null;

  /** @internal use {@link Telemetry.from}. */
  constructor(api: OtelApi, options: TelemetryOptions = {}) {
    this.api = api;
    const version = packageVersion();
    this.tracer = options.tracer ?? api.trace.getTracer('leash', version);
    this.meter = options.meter ?? api.metrics.getMeter('leash', version);
    this.recordContent = options.recordContent === true;
    this.metrics = isNoopMeter(api, this.meter) ? null : new LeashMetrics(this.meter);
  }

  /**
   * The telemetry the option asks for: null for `false`, or when `@opentelemetry/api` is not installed.
   * @throws GuardrailValidationError naming the field of an option that is not one
   */
  static from(option: TelemetryOptions | false | undefined): Telemetry | null {
    if (option === false) return null;
    if (option !== undefined) checkOptions(option);
    const api = loadOtelApi();
    return api === null ? null : new Telemetry(api, option);
  }

  /** The span of the current context that is recording, if any. */
  activeSpan(): OtelSpan | undefined {
    const span = this.api.trace.getActiveSpan();
    return span !== undefined && span.isRecording() ? span : undefined;
  }

  /** Runs `fn` with `span` as the current context's span. */
  withSpan<T>(span: OtelSpan, fn: () => T): T {
    const api = this.api;
    return api.context.with(api.trace.setSpan(api.context.active(), span), fn);
  }
}

/** Whether `meter` is the API's own no-op meter (what `getMeter` gives while no SDK is registered). */
function isNoopMeter(api: OtelApi, meter: OtelMeter): boolean {
  try {
    const noop = (api as { createNoopMeter?: () => object }).createNoopMeter;
    return typeof noop === 'function' && Object.getPrototypeOf(meter) === Object.getPrototypeOf(noop());
  } catch {
    return false;
  }
}

function checkOptions(option: unknown): void {
  if (!isPlainObject(option))
    invalid('telemetry', 'false or an object of tracer, meter, recordContent', option);
  for (const key of Object.keys(option)) {
    if (!OPTION_KEYS.has(key)) invalid(`telemetry.${key}`, 'one of tracer, meter, recordContent', key);
  }
  const { tracer, meter, recordContent } = option as Record<string, unknown>;
  if (tracer !== undefined && typeof (tracer as OtelTracer | null)?.startSpan !== 'function') {
    invalid('telemetry.tracer', 'an OpenTelemetry Tracer', tracer);
  }
  if (meter !== undefined && typeof (meter as OtelMeter | null)?.createCounter !== 'function') {
    invalid('telemetry.meter', 'an OpenTelemetry Meter', meter);
  }
  if (recordContent !== undefined && typeof recordContent !== 'boolean') {
    invalid('telemetry.recordContent', 'a boolean', recordContent);
  }
}
