// Each decision of a service with telemetry, on the span active when it was asked for: a `leash.decision`
// event per audit entry, the entry's place in the log, and the span's ids in the entry.
import { context, ROOT_CONTEXT, trace, type Span } from '@opentelemetry/api';
import * as incubating from '@opentelemetry/semantic-conventions/incubating';
import { describe, expect, it } from 'vitest';
import {
  MemoryStore,
  type OtelSpan,
  type PlanChangeFn,
  type ToolCallBegin,
  type UpdateOptions,
} from '../../src/index.js';
import { GEN_AI_REQUEST_MODEL, GEN_AI_TOOL_NAME } from '../../src/telemetry/decisions.js';
import { trailOf } from '../support/service.js';
import { decisions, inSpan, tracedService, useOtel } from './otel-support.js';

const otel = useOtel();

const CALL: ToolCallBegin = {
  confirm: { decisionId: 'c1', operation: 'search', input: { q: 'x' }, ttlMs: 60_000, pauseClock: false },
  tool: { name: 'search', maxCallsPerPlan: 3 },
  estimate: 0.25,
  reservationId: 'tool:c1',
};

/** A memory store that reports what each update appended, as a store with `onCommit` does. */
class ReportingStore extends MemoryStore {
  override async update<T>(planId: string, change: PlanChangeFn<T>, options?: UpdateOptions): Promise<T> {
    const before = (await this.readAuditLog(planId)).length;
    const { onCommit, ...rest } = options ?? {};
    const result = await super.update(planId, change, rest);
    const added = (await this.readAuditLog(planId)).slice(before);
    if (added.length > 0) onCommit?.(added);
    return result;
  }
}

describe('leash.decision span events', () => {
  it('adds one event per recorded decision, in order, with its attributes', async () => {
    const { service } = await tracedService(otel, { toolBudget: 1, maxSteps: 5 });
    const { span } = await inSpan(otel, () => service.beginToolCall('plan', CALL));
    const base = { 'leash.result': 'allowed', 'leash.plan.id': 'plan' };
    expect(decisions(span)).toEqual([
      { ...base, 'leash.event_type': 'wall_clock_allowed' },
      { ...base, 'leash.event_type': 'step_allowed' },
      { ...base, 'leash.event_type': 'confirmation_not_required' },
      { ...base, 'leash.event_type': 'tool_calls_allowed', 'gen_ai.tool.name': 'search' },
      {
        ...base,
        'leash.event_type': 'budget_reserved',
        'leash.cost': 0.25,
        'leash.budget.remaining': 0.75,
      },
    ]);
  });

  it('gives a denial its result, and the budget what is left', async () => {
    const { service } = await tracedService(otel, { toolBudget: 1, budgetSpent: 0.5 });
    const { span } = await inSpan(otel, () => service.checkToolBudget('plan', 0.75));
    expect(decisions(span)).toEqual([
      {
        'leash.event_type': 'budget_blocked',
        'leash.result': 'denied',
        'leash.plan.id': 'plan',
        'leash.cost': 0.75,
        'leash.budget.remaining': 0.5,
      },
    ]);
  });

  it("names the model on the events of a model reservation's entries and of its commit", async () => {
    const { service } = await tracedService(otel, { toolBudget: 1 });
    const { span } = await inSpan(otel, async () => {
      const reservation = await service.reserveBudget('plan', 0.5, { reservationId: 'm1', model: 'gpt-x' });
      await reservation.commit(0.25);
    });
    expect(decisions(span).map((e) => [e['leash.event_type'], e[GEN_AI_REQUEST_MODEL]])).toEqual([
      ['budget_reserved', 'gpt-x'],
      ['budget_committed', 'gpt-x'],
    ]);
  });

  it("links each event to its entry's seq and hash when the store reports them", async () => {
    const store = new ReportingStore();
    const { service } = await tracedService(otel, { toolBudget: 1, maxSteps: 5 }, { store });
    const { span } = await inSpan(otel, () => service.beginToolCall('plan', CALL));
    const log = await store.readAuditLog('plan');
    expect(decisions(span).map((e) => [e['leash.audit.seq'], e['leash.audit.hash']])).toEqual(
      log.map((c) => [c.seq, c.hash]),
    );
  });

  it("records the active span's trace and span ids in each entry's details", async () => {
    const { service } = await tracedService(otel, { maxSteps: 5 });
    const { span } = await inSpan(otel, async () => {
      await service.takeStep('plan');
      await service.takeStep('plan');
    });
    const { traceId, spanId } = span.spanContext();
    const ids = (await trailOf(service)).entries.map((e) => [e.details['trace_id'], e.details['span_id']]);
    expect(ids).toEqual([
      [traceId, spanId],
      [traceId, spanId],
    ]);
  });

  it('records ids of the span active when asked, though the store runs the change elsewhere', async () => {
    const store = new MemoryStore();
    const update = store.update.bind(store);
    // Decides later, in the root context, as a store's group commit does.
    store.update = (planId, change, options) =>
      new Promise((resolve, reject) => {
        setImmediate(() =>
          context.with(ROOT_CONTEXT, () => update(planId, change, options).then(resolve, reject)),
        );
      });
    const { service } = await tracedService(otel, { maxSteps: 5 }, { store });
    const { span } = await inSpan(otel, () => service.takeStep('plan'));
    const [entry] = (await trailOf(service)).entries;
    expect(entry?.details['span_id']).toBe(span.spanContext().spanId);
    expect(decisions(span)).toHaveLength(1);
  });

  it('adds no event and no ids without an active span', async () => {
    const { service } = await tracedService(otel, { maxSteps: 5 });
    await service.takeStep('plan');
    const [entry] = (await trailOf(service)).entries;
    expect(entry?.details).toEqual({ step: 0, limit: 5 });
    expect(otel.exporter.getFinishedSpans()).toEqual([]);
  });

  it('leaves the ids out of details they would take past the details limit', async () => {
    const limits = { maxDetailsBytes: 1024 };
    const { service } = await tracedService(otel, { maxSteps: 5 }, { metadataLimits: limits });
    const error = 'x'.repeat(5000);
    const { span } = await inSpan(otel, () => service.checkRetries('plan', 0, { error }));
    const [entry] = (await trailOf(service)).entries;
    expect(entry?.details['trace_id']).toBeUndefined();
    expect(Buffer.byteLength(JSON.stringify(entry?.details))).toBeLessThanOrEqual(1024);
    expect(decisions(span)).toHaveLength(1);
  });

  it('reports the answer of a plan with no guardrails, which records nothing', async () => {
    const { service } = await tracedService(otel, null, { unconfiguredPlans: 'deny' });
    const { span } = await inSpan(otel, () => service.checkStepLimit('plan', 1));
    expect(decisions(span)).toEqual([
      { 'leash.event_type': 'step_blocked', 'leash.result': 'denied', 'leash.plan.id': 'plan' },
    ]);
  });

  it('names the approval a confirmation opened', async () => {
    const { service } = await tracedService(otel, { requiredConfirmations: ['deploy'] });
    const { span, value } = await inSpan(otel, () =>
      service.requestConfirmation('plan', { decisionId: 'd1', operation: 'deploy', ttlMs: 60_000 }),
    );
    expect(decisions(span)).toEqual([
      {
        'leash.event_type': 'confirmation_required',
        'leash.result': 'denied',
        'leash.plan.id': 'plan',
        'leash.approval.id': value.approval?.id,
      },
    ]);
  });

  it('writes only gen_ai attributes the semantic conventions define', () => {
    const defined = new Set<unknown>(Object.values(incubating));
    expect([GEN_AI_TOOL_NAME, GEN_AI_REQUEST_MODEL].filter((name) => !defined.has(name))).toEqual([]);
  });

  it('answers a check when the span, its events and its ids throw', async () => {
    const { service } = await tracedService(otel, { maxSteps: 5 });
    const broken: OtelSpan = {
      spanContext: () => {
        throw new Error('no context');
      },
      setAttribute: () => undefined,
      setAttributes: () => undefined,
      addEvent: () => {
        throw new Error('exporter down');
      },
      setStatus: () => undefined,
      isRecording: () => true,
      end: () => undefined,
    };
    const check = await context.with(trace.setSpan(context.active(), broken as unknown as Span), () =>
      service.takeStep('plan'),
    );
    expect(check.allowed).toBe(true);
    expect((await trailOf(service)).entries.map((e) => e.eventType)).toEqual(['step_allowed']);
  });
});
