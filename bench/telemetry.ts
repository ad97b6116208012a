// What tracing adds to a guarded tool call: RunGuard.toolCall on MemoryStore with telemetry off, with
// @opentelemetry/api and no SDK (the API's no-op tracer: the default when the API is installed), and
// with the SDK's tracer writing to an in-memory exporter under its AsyncLocalStorage context manager.
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { AutonomyGuardrailService, ManualClock, MemoryStore, type TelemetryOptions } from '../src/index.js';
import { guardedToolCall } from './ai-sdk.js';
import { fail, PLAN_ID, ROOMY_LIMITS, START_MS } from './fixtures.js';
import type { BenchCase, GroupResult } from './harness.js';
import { differenceTarget, medianOf, type Target } from './report.js';

export const TELEMETRY_NAMES = {
  off: 'traced RunGuard.toolCall: telemetry false (MemoryStore)',
  noop: 'traced RunGuard.toolCall: API, no SDK (no-op tracer, MemoryStore)',
  offSdk: 'traced RunGuard.toolCall: telemetry false, SDK context manager on (MemoryStore)',
  exporter: 'traced RunGuard.toolCall: SDK tracer, in-memory exporter (MemoryStore)',
} as const;

/** Spans the exporter keeps before it is emptied, so its memory stays flat over the run. */
const KEPT_SPANS = 10_000;

/** A new RunGuard's tool call per op (as guardedCallCases times it), on a service with `telemetry`. */
function toolCallCase(name: string, telemetry: TelemetryOptions | false | undefined, after?: () => void) {
  return async () => {
    const service = new AutonomyGuardrailService({
      clock: new ManualClock(START_MS),
      store: new MemoryStore({ keepLog: false }),
      ...(telemetry === undefined ? {} : { telemetry }),
    });
    if ((service.telemetry === null) !== (telemetry === false)) fail(`${name}: telemetry not as asked`);
    await service.configureGuardrails(PLAN_ID, ROOMY_LIMITS);
    const call = guardedToolCall(service, name);
    const op = async () => {
      const out = await call();
      after?.();
      return out;
    };
    await op();
    return { op };
  };
}

/**
 * Two groups, each timed round by round (runGroup) against telemetry off: the API with no SDK, with no
 * context manager registered; then the SDK's tracer to an in-memory exporter, with the SDK's
 * AsyncLocalStorage context manager registered for the group (its first case's prepare and release).
 */
export function telemetryGroups(): BenchCase[][] {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer('bench');
  const manager = new AsyncLocalStorageContextManager();
  const emptied = () => {
    if (exporter.getFinishedSpans().length >= KEPT_SPANS) exporter.reset();
  };
  const withManager = toolCallCase(TELEMETRY_NAMES.offSdk, false);
  return [
    [
      { name: TELEMETRY_NAMES.off, async: true, prepare: toolCallCase(TELEMETRY_NAMES.off, false) },
      { name: TELEMETRY_NAMES.noop, async: true, prepare: toolCallCase(TELEMETRY_NAMES.noop, undefined) },
    ],
    [
      {
        name: TELEMETRY_NAMES.offSdk,
        async: true,
        prepare: async () => {
          context.setGlobalContextManager(manager.enable());
          const prepared = await withManager();
          return {
            ...prepared,
            release: () => {
              context.disable();
              manager.disable();
            },
          };
        },
      },
      {
        name: TELEMETRY_NAMES.exporter,
        async: true,
        prepare: toolCallCase(TELEMETRY_NAMES.exporter, { tracer }, emptied),
      },
    ],
  ];
}

export function telemetryTargets(groups: readonly GroupResult[]): Target[] {
  const over = (name: string) =>
    groups.flatMap((g) => g.over).find((o) => o.name === name) ?? fail(`no difference for ${name}`);
  return [
    differenceTarget(
      'time tracing adds per guarded tool call: API, no SDK (no-op tracer)',
      over(TELEMETRY_NAMES.noop),
      5_000,
    ),
    differenceTarget('median of it', medianOf(over(TELEMETRY_NAMES.noop))),
    differenceTarget(
      'time tracing adds per guarded tool call: SDK tracer, in-memory exporter',
      over(TELEMETRY_NAMES.exporter),
    ),
    differenceTarget('median of it', medianOf(over(TELEMETRY_NAMES.exporter))),
  ];
}
