// A trace and the audit log point at each other under a real AI SDK loop with its telemetry on: the
// SDK's tool span holds a leash.decision event per audit entry of its call, with the entry's seq and
// hash, and each of those entries holds the span's trace and span ids.
import { expect, it } from 'vitest';
import type { ChainedEntry } from '../../src/index.js';
import { PLAN } from '../agent/support.js';
import { searchLoop, useTracing, type ReadableSpan } from './spans-support.js';

const tracing = useTracing();

/** The search loop of the span tests (c1 let through, c2 refused by the budget); resolves with its log. */
async function loop(): Promise<readonly ChainedEntry[]> {
  const service = await searchLoop(tracing, true);
  return service.store.readAuditLog(PLAN);
}

function toolSpan(id: string): ReadableSpan {
  const span = tracing.named('ai.toolCall').find((s) => s.attributes['gen_ai.tool.call.id'] === id);
  if (span === undefined) throw new Error(`no ai.toolCall span of ${id}`);
  return span;
}

/** The entries of the log whose details name `span` as theirs. */
function entriesOf(log: readonly ChainedEntry[], span: ReadableSpan): ChainedEntry[] {
  const { traceId, spanId } = span.spanContext();
  return log.filter((e) => e.entry.details['trace_id'] === traceId && e.entry.details['span_id'] === spanId);
}

it("puts one leash.decision event per audit entry of a tool call on the SDK's span of that call, with the entry's seq and hash", async () => {
  const log = await loop();

  for (const id of ['c1', 'c2']) {
    const span = toolSpan(id);
    const entries = entriesOf(log, span);
    expect(entries.length).toBeGreaterThan(0);
    const events = span.events.filter((e) => e.name === 'leash.decision');
    expect(events.map((e) => e.attributes)).toEqual(
      entries.map((e) =>
        expect.objectContaining({
          'leash.event_type': e.entry.event_type,
          'leash.result': e.entry.result,
          'leash.plan.id': PLAN,
          'leash.audit.seq': e.seq,
          'leash.audit.hash': e.hash,
        }),
      ),
    );
  }
});

it("records the refused call's budget_blocked entry under the span of that call, and its cost", async () => {
  const log = await loop();

  const refused = entriesOf(log, toolSpan('c2')).map((e) => e.entry.event_type);
  expect(refused).toContain('budget_blocked');
  const event = toolSpan('c2').events.find((e) => e.attributes?.['leash.event_type'] === 'budget_blocked');
  expect(event?.attributes).toMatchObject({ 'leash.result': 'denied', 'leash.cost': 0.3 });
});

it("gives every entry of the run the trace's id and the id of the SDK's span of its tool or model call", async () => {
  const log = await loop();

  const traceId = tracing.one('ai.generateText').spanContext().traceId;
  const callSpans = [...tracing.named('ai.toolCall'), ...tracing.named('ai.generateText.doGenerate')];
  const spanIds = new Set(callSpans.map((s) => s.spanContext().spanId));
  expect(log.length).toBeGreaterThan(0);
  for (const e of log) {
    expect(e.entry.details['trace_id']).toBe(traceId);
    expect(spanIds.has(e.entry.details['span_id'] as string)).toBe(true);
  }
});
