import { AuditEntry } from '../audit/AuditEntry.js';
import type { ChainedEntry } from '../audit/chain.js';
import { isGuardrailEventType, type GuardrailEventType } from '../events.js';
import type { GuardCheck } from '../GuardCheck.js';
import type { AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';
import { parseIsoMs } from '../iso.js';
import type { JsonObject } from '../json.js';
import { fromMicros, toMicros } from '../money.js';
import { merged } from '../objects.js';
import type {
  Approval,
  GuardrailStore,
  PlanChange,
  PlanChangeFn,
  UpdateOptions,
} from '../store/GuardrailStore.js';
import { labelAttribute, type LeashMetrics } from './metrics.js';
import type { OtelAttributes, OtelSpan } from './otel.js';
import type { Telemetry } from './Telemetry.js';

// Each decision a service's update records, told to OpenTelemetry once the update has committed: an
// event on the span active when it was asked for, with its audit entry's seq and hash; the span's trace
// and span ids in the entry's details; leash's metrics. Nothing of it may fail or delay a check.

/** The name of the span event of each decision. */
export const DECISION_EVENT = 'leash.decision';
/** The GenAI semantic conventions' names leash writes (`@opentelemetry/semantic-conventions/incubating`). */
export const GEN_AI_TOOL_NAME = 'gen_ai.tool.name';
export const GEN_AI_REQUEST_MODEL = 'gen_ai.request.model';

/** The details that hold the amount a budget decision is about, by event type, first found first. */
const COST_KEYS: Partial<Record<GuardrailEventType, readonly string[]>> = {
  budget_allowed: ['cost'],
  budget_blocked: ['cost', 'amount'],
  budget_reserved: ['amount'],
  budget_committed: ['actual'],
  budget_overrun: ['actual'],
  budget_cap_blocked: ['amount'],
};

/**
 * The detail that holds what a decision spent, by event type: a check's cost and a settlement's actual
 * cost (an overrun is spent all the same). A reservation spends nothing: its commit does.
 */
const SPEND_KEY: Partial<Record<GuardrailEventType, string>> = {
  budget_allowed: 'cost',
  budget_committed: 'actual',
  budget_overrun: 'actual',
};

/** Events whose `reserved` detail is what the plan holds in all (a settlement's is its own hold). */
const HOLDS_ALL = new Set<GuardrailEventType>(['budget_reserved', 'budget_blocked']);

const ignore = (): void => undefined;

/**
 * @internal `store.update` of a service with telemetry: each decision the change records is reported on
 * the span active when it was asked for, and counted. With no recording span the change is only watched,
 * never altered; with one, each entry it records carries the span's `trace_id` and `span_id` in its
 * details (unless they would take the details past `maxDetailsBytes`).
 */
export function tracedUpdate<T>(
  telemetry: Telemetry,
  store: GuardrailStore,
  planId: string,
  change: PlanChangeFn<T>,
  options: UpdateOptions | undefined,
  maxDetailsBytes: number,
): Promise<T> {
  let span: OtelSpan | undefined;
  try {
    span = telemetry.activeSpan();
  } catch {
    span = undefined;
  }
  const metrics = telemetry.metrics;
  if (span === undefined && metrics === null) return store.update(planId, change, options);
  const run = new Run();
  const pending =
    span === undefined
      ? store.update(planId, run.watching(change), options)
      : store.update(planId, run.tracing(change, spanIds(span), maxDetailsBytes), run.reporting(options));
  // Reported before the caller's continuation runs, on the promise the caller gets: no tick added.
  pending.then(() => report(metrics, span, planId, run), ignore);
  return pending;
}

/** What the last run of the change saw and decided: a store may run it again, and commits the last. */
class Run {
  guardrails: AutonomyGuardrails | null = null;
  before: Approval | null = null;
  out: PlanChange<unknown> | undefined;
  chained: readonly ChainedEntry[] | undefined;

  watching<T>(change: PlanChangeFn<T>): PlanChangeFn<T> {
    return (g, approval, caps) => {
      const out = change(g, approval, caps);
      this.guardrails = g;
      this.before = approval;
      this.out = out;
      return out;
    };
  }

  tracing<T>(change: PlanChangeFn<T>, ids: SpanIds | null, maxBytes: number): PlanChangeFn<T> {
    const watched = this.watching(change);
    if (ids === null) return watched;
    return (g, approval, caps) => {
      const out = watched(g, approval, caps);
      if (out.audit === undefined && out.entries === undefined) return out;
      try {
        return withIds(out, ids, maxBytes);
      } catch {
        return out;
      }
    };
  }

  /** `options` with an `onCommit` that keeps the chained entries, and calls the caller's own. */
  reporting(options: UpdateOptions | undefined): UpdateOptions {
    const own = options?.onCommit;
    const onCommit = (chained: readonly ChainedEntry[]): void => {
      this.chained = chained;
      if (own !== undefined) own(chained);
    };
    return options === undefined ? { onCommit } : merged(options, { onCommit });
  }
}

interface SpanIds {
  readonly trace_id: string;
  readonly span_id: string;
}

function spanIds(span: OtelSpan): SpanIds | null {
  try {
    const { traceId, spanId } = span.spanContext();
    return { trace_id: traceId.toLowerCase(), span_id: spanId.toLowerCase() };
  } catch {
    return null;
  }
}

/** `out` whose entries carry the span's ids; nothing else of it changed. */
function withIds<T>(out: PlanChange<T>, ids: SpanIds, maxBytes: number): PlanChange<T> {
  const copy: { -readonly [K in keyof PlanChange<T>]: PlanChange<T>[K] } = { ...out };
  if (out.audit !== undefined) copy.audit = tagged(out.audit, ids, maxBytes);
  if (out.entries !== undefined) copy.entries = out.entries.map((e) => tagged(e, ids, maxBytes));
  return copy;
}

function tagged(entry: AuditEntry, ids: SpanIds, maxBytes: number): AuditEntry {
  const details = entry.details;
  if (Object.hasOwn(details, 'trace_id') || Object.hasOwn(details, 'span_id')) return entry;
  // The ids' keys and hex digits are ASCII: `,"trace_id":"…","span_id":"…"` after the details' own.
  const bytes = Buffer.byteLength(JSON.stringify(details), 'utf8') + JSON.stringify(ids).length - 1;
  if (bytes > maxBytes) return entry;
  return AuditEntry.trusted(entry.eventType, entry.timestamp, Object.freeze(merged(details, ids)));
}

/** Tells the span and the metrics of what the committed run decided; what they throw is dropped. */
function report(metrics: LeashMetrics | null, span: OtelSpan | undefined, planId: string, run: Run): void {
  const out = run.out;
  if (out === undefined) return;
  try {
    const recorded = recordedOf(out);
    if (recorded.length === 0) {
      const check = checkOf(out.result);
      if (check === null) return;
      metrics?.decision(check.eventType);
      span?.addEvent(DECISION_EVENT, checkAttributes(check, planId, out.result));
      return;
    }
    const chained = run.chained?.length === recorded.length ? run.chained : undefined;
    const tool = metrics === null ? null : toolOfChange(recorded);
    for (let i = 0; i < recorded.length; i++) {
      const entry = recorded[i] as AuditEntry;
      if (metrics !== null) {
        metrics.decision(entry.eventType);
        countSpend(metrics, planId, entry, tool, run.guardrails);
      }
      if (span !== undefined) {
        const link = chained?.[i];
        const proof = link?.entry.event_type === entry.eventType ? link : undefined;
        span.addEvent(DECISION_EVENT, entryAttributes(entry, planId, proof));
      }
    }
    if (metrics !== null) approvalWait(metrics, run.before, out.approval, recorded);
  } catch {
    // telemetry never fails a check
  }
}

function recordedOf(out: PlanChange<unknown>): readonly AuditEntry[] {
  const entries = out.entries ?? [];
  return out.audit === undefined ? entries : [out.audit, ...entries];
}

function isCheck(value: unknown): value is GuardCheck {
  const c = value as GuardCheck | null;
  return (
    typeof c === 'object' && c !== null && typeof c.allowed === 'boolean' && isGuardrailEventType(c.eventType)
  );
}

/** The check a change that recorded nothing answered: its result, or its result's `check`. */
function checkOf(result: unknown): GuardCheck | null {
  if (isCheck(result)) return result;
  const inner = (result as { check?: unknown } | null)?.check;
  return typeof result === 'object' && isCheck(inner) ? inner : null;
}

function checkAttributes(check: GuardCheck, planId: string, result: unknown): OtelAttributes {
  const attributes: OtelAttributes = {
    'leash.event_type': check.eventType,
    'leash.result': check.result,
    'leash.plan.id': planId,
  };
  const approval = (result as { approval?: { id?: unknown } } | null)?.approval;
  if (typeof approval?.id === 'string') attributes['leash.approval.id'] = approval.id;
  return attributes;
}

/** A decision's span event attributes, from its audit entry and, when the store told, its place in the log. */
function entryAttributes(entry: AuditEntry, planId: string, proof: ChainedEntry | undefined): OtelAttributes {
  const d = entry.details;
  const attributes: OtelAttributes = {
    'leash.event_type': entry.eventType,
    'leash.result': entry.result,
    'leash.plan.id': planId,
  };
  const cost = costOf(entry.eventType, d);
  if (cost !== undefined) attributes['leash.cost'] = cost;
  const remaining = remainingOf(entry.eventType, d);
  if (remaining !== undefined) attributes['leash.budget.remaining'] = remaining;
  if (typeof d['approval_id'] === 'string') attributes['leash.approval.id'] = d['approval_id'];
  if (typeof d['tool'] === 'string') attributes[GEN_AI_TOOL_NAME] = d['tool'];
  if (typeof d['model'] === 'string') attributes[GEN_AI_REQUEST_MODEL] = d['model'];
  if (proof !== undefined) {
    attributes['leash.audit.seq'] = proof.seq;
    attributes['leash.audit.hash'] = proof.hash;
  }
  return attributes;
}

function costOf(type: GuardrailEventType, d: JsonObject): number | undefined {
  for (const key of COST_KEYS[type] ?? []) {
    const value = d[key];
    if (typeof value === 'number') return value;
  }
  return undefined;
}

/** The plan budget's limit less what is spent (and, for a reservation's check, held in all). */
function remainingOf(type: GuardrailEventType, d: JsonObject): number | undefined {
  const { limit, spent, reserved } = d;
  if (COST_KEYS[type] === undefined || d['cap'] !== undefined) return undefined;
  if (typeof limit !== 'number' || typeof spent !== 'number') return undefined;
  const held = HOLDS_ALL.has(type) && typeof reserved === 'number' ? reserved : 0;
  return fromMicros(toMicros(limit, 'limit') - toMicros(spent, 'spent') - toMicros(held, 'reserved'));
}

/** The tool (or model) the change's entries name, if any: a reservation of a tool call names none. */
function toolOfChange(recorded: readonly AuditEntry[]): OtelAttributes | null {
  for (const entry of recorded) {
    const names = namesOf(entry.details);
    if (names !== null) return names;
  }
  return null;
}

function namesOf(d: JsonObject): OtelAttributes | null {
  if (typeof d['tool'] === 'string') return { [GEN_AI_TOOL_NAME]: d['tool'] };
  if (typeof d['model'] === 'string') return { [GEN_AI_REQUEST_MODEL]: d['model'] };
  return null;
}

/**
 * Counts what `entry` spent under the plan's labels and the tool or model it was for: named by the
 * entry, by its change, or, for a settlement, by the change that reserved it (remembered until then).
 */
function countSpend(
  metrics: LeashMetrics,
  planId: string,
  entry: AuditEntry,
  inChange: OtelAttributes | null,
  guardrails: AutonomyGuardrails | null,
): void {
  const d = entry.details;
  const type = entry.eventType;
  const reservation = typeof d['reservation_id'] === 'string' ? `${planId}\n${d['reservation_id']}` : null;
  if (reservation !== null && type === 'budget_reserved') {
    // A model call's reservation names its model; a tool call's is made with the check naming the tool.
    const names = namesOf(d) ?? inChange;
    if (names !== null) metrics.remember(reservation, names);
    return;
  }
  let names = namesOf(d) ?? inChange;
  if (
    reservation !== null &&
    (type === 'budget_committed' || type === 'budget_overrun' || type === 'budget_released')
  ) {
    const held = metrics.take(reservation);
    if (names === null && held !== undefined) names = held;
  }
  const key = SPEND_KEY[type];
  const amount = key === undefined ? undefined : d[key];
  if (typeof amount !== 'number' || amount <= 0) return;
  const attributes: OtelAttributes = { ...names };
  const labels = guardrails?.labels ?? {};
  for (const name of Object.keys(labels)) attributes[labelAttribute(name)] = labels[name];
  metrics.spend(amount, attributes);
}

/** Records how long an approval the change settled (pending before, decided now) waited. */
function approvalWait(
  metrics: LeashMetrics,
  before: Approval | null,
  after: Approval | undefined,
  recorded: readonly AuditEntry[],
): void {
  if (before?.status !== 'pending' || after === undefined || after.decidedAt === undefined) return;
  if (after.status !== 'approved' && after.status !== 'denied') return;
  const seconds = (parseIsoMs(after.decidedAt) - parseIsoMs(before.requestedAt)) / 1000;
  if (!Number.isFinite(seconds)) return;
  const expired = recorded.some((e) => e.eventType === 'confirmation_expired');
  metrics.approvalWait(Math.max(0, seconds), expired ? 'expired' : after.status);
}
