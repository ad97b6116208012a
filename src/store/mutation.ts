import { AuditEntry, isSerializableTimestamp } from '../audit/AuditEntry.js';
import { chainEntry, type ChainedEntry } from '../audit/chain.js';
import { invalid } from '../errors.js';
import type { AutonomyGuardrails, Reservation, Runtime } from '../guardrails/AutonomyGuardrails.js';
import {
  MAX_RUNTIME_ENTRIES,
  reservationExpired,
  validRuntimeKey,
} from '../guardrails/AutonomyGuardrails.js';
import { canonicalIso, parseIsoMs } from '../iso.js';
import { MAX_AMOUNT, MICROS_PER_UNIT } from '../money.js';
import type { PlanChange, PlanMutation } from './GuardrailStore.js';
import type { ChainHead } from './planCache.js';

const MAX_MICROS = MAX_AMOUNT * MICROS_PER_UNIT;

/**
 * Applies a mutation to guardrails all or nothing: every part is checked before anything changes, so a
 * store never keeps spending without the step, or the step without its audit entry. Returns the
 * guardrails to keep: the same instance, changed in place, or a copy when the start time was set.
 */
export function applyMutation(g: AutonomyGuardrails, m: PlanMutation): AutonomyGuardrails {
  const steps = m.steps ?? 0;
  const spend = m.spendMicros ?? 0;
  if (!Number.isSafeInteger(steps) || steps < 0) invalid('mutation.steps', 'an integer >= 0', steps);
  if (!Number.isSafeInteger(spend) || spend < 0) invalid('mutation.spendMicros', 'an integer >= 0', spend);
  if (!Number.isSafeInteger(g.stepCount + steps)) invalid('step_count', 'below 2^53', g.stepCount + steps);
  if (g.budgetSpentMicros + spend > MAX_MICROS) {
    invalid('budget_spent', `at most ${MAX_AMOUNT}`, (g.budgetSpentMicros + spend) / MICROS_PER_UNIT);
  }
  const runtime = hasRuntimeChange(m) ? nextRuntime(g, m) : undefined;
  const next = m.startTime !== undefined ? g.withStartTime(m.startTime) : g; // validates before changing
  if (runtime !== undefined) next.replaceRuntime(runtime);
  if (spend > 0) next.recordCostMicros(spend);
  for (let i = 0; i < steps; i++) next.incrementStep();
  return next;
}

function hasRuntimeChange(m: PlanMutation): boolean {
  return (
    m.expireBefore !== undefined ||
    m.reserve !== undefined ||
    m.release !== undefined ||
    m.settleLapsed !== undefined ||
    m.pause !== undefined ||
    m.unpause !== undefined ||
    m.toolCall !== undefined
  );
}

/** The runtime state after the mutation, computed without touching `g`. */
function nextRuntime(g: AutonomyGuardrails, m: PlanMutation): Runtime {
  // Maps are copied only when they change: most mutations touch one of them or none.
  let reservations = g.runtime.reservations;
  let reservedMicros = g.runtime.reservedMicros;
  let lapsed = g.runtime.lapsed;
  if (
    m.expireBefore !== undefined ||
    m.release !== undefined ||
    m.reserve !== undefined ||
    m.settleLapsed !== undefined
  ) {
    const copy = new Map(reservations);
    // Copied only when it can change: most budget mutations neither lapse nor settle a lapsed id, and
    // then an empty set is left as it is (a reserve's delete of its id finds nothing to delete).
    const gone: Set<string> =
      m.expireBefore !== undefined || m.settleLapsed !== undefined || lapsed.size > 0
        ? new Set(lapsed)
        : (lapsed as Set<string>);
    if (m.expireBefore !== undefined) {
      const now = m.expireBefore;
      if (!Number.isFinite(now)) invalid('mutation.expireBefore', 'epoch milliseconds', now);
      for (const [id, r] of copy) {
        if (!reservationExpired(r, now)) continue;
        copy.delete(id);
        reservedMicros -= r.micros;
        // Beyond the bound the oldest lapse is forgotten: its late commit then spends nothing, which
        // only a plan with 10,000 lapsed, unsettled calls can meet.
        if (gone.size >= MAX_RUNTIME_ENTRIES) gone.delete(gone.values().next().value as string);
        gone.add(id);
      }
    }
    if (m.settleLapsed !== undefined) {
      if (!gone.delete(m.settleLapsed))
        invalid('mutation.settleLapsed', 'a lapsed reservation', m.settleLapsed);
    }
    if (m.release !== undefined) {
      const held = copy.get(m.release);
      if (held === undefined) invalid('mutation.release', 'an open reservation', m.release);
      copy.delete(m.release);
      reservedMicros -= held.micros;
    }
    if (m.reserve !== undefined) {
      const id = validRuntimeKey(m.reserve.id, 'mutation.reserve.id');
      const micros = m.reserve.micros;
      if (!Number.isSafeInteger(micros) || micros < 0)
        invalid('mutation.reserve.micros', 'an integer >= 0', micros);
      const expiresAt = m.reserve.expiresAt ?? null;
      if (expiresAt !== null && !isSerializableTimestamp(expiresAt)) {
        invalid('mutation.reserve.expiresAt', 'epoch milliseconds within the years 0000-9999', expiresAt);
      }
      if (copy.has(id)) invalid('mutation.reserve.id', 'not already open', id);
      // Reserved again, the id is open once more: one settle of it, by any handle, settles it.
      gone.delete(id);
      if (copy.size >= MAX_RUNTIME_ENTRIES) invalid('reservations', `at most ${MAX_RUNTIME_ENTRIES}`, id);
      if (reservedMicros + micros > MAX_MICROS) invalid('reserved', `at most ${MAX_AMOUNT} in all`, id);
      const held: Reservation = { micros, expiresAt };
      copy.set(id, held);
      reservedMicros += micros;
    }
    reservations = copy;
    lapsed = gone;
  }
  let { pausedMs, pausedSince } = g.runtime;
  if (m.unpause !== undefined && pausedSince !== null) {
    if (!Number.isFinite(m.unpause)) invalid('mutation.unpause', 'epoch milliseconds', m.unpause);
    pausedMs += Math.max(0, Math.round(m.unpause - parseIsoMs(pausedSince)));
    pausedSince = null;
  }
  if (m.pause !== undefined && pausedSince === null) pausedSince = canonicalIso(m.pause, 'mutation.pause');
  let toolCalls = g.runtime.toolCalls;
  if (m.toolCall !== undefined) {
    const tool = validRuntimeKey(m.toolCall, 'mutation.toolCall');
    if (!toolCalls.has(tool) && toolCalls.size >= MAX_RUNTIME_ENTRIES) {
      invalid('tool_calls', `at most ${MAX_RUNTIME_ENTRIES} tools`, tool);
    }
    toolCalls = new Map(toolCalls).set(tool, (toolCalls.get(tool) ?? 0) + 1);
  }
  return { reservations, reservedMicros, lapsed, pausedMs, pausedSince, toolCalls };
}

/** True when a change writes anything: a store may answer one that does not without a write. */
export function writesState(out: PlanChange<unknown>): boolean {
  return (
    out.mutation !== undefined ||
    out.audit !== undefined ||
    // Anything but an empty array counts, so that entries of the wrong shape are refused, not ignored.
    (out.entries !== undefined && !(Array.isArray(out.entries) && out.entries.length === 0)) ||
    out.replace !== undefined ||
    out.approval !== undefined ||
    out.newApproval !== undefined
  );
}

const NO_ENTRIES: readonly AuditEntry[] = Object.freeze([]);

/**
 * The audit entries a change records, in order: its `audit`, then its `entries`. Throws, naming the
 * field, when `entries` is not an array of audit entries; a store calls it before it changes anything.
 */
export function entriesOf(out: PlanChange<unknown>): readonly AuditEntry[] {
  const { audit, entries } = out;
  if (entries === undefined) return audit === undefined ? NO_ENTRIES : [audit];
  if (!Array.isArray(entries)) invalid('entries', 'an array of audit entries', entries);
  entries.forEach((e, i) => {
    if (!(e instanceof AuditEntry)) invalid(`entries[${i}]`, 'an audit entry', e);
  });
  return audit === undefined ? entries.slice() : [audit, ...entries];
}

/** The entries of a change chained one after the other from `head` (the plan's last entry, or null). */
export function chainedEntriesOf(
  planId: string,
  head: ChainHead | null,
  out: PlanChange<unknown>,
): { readonly audit: AuditEntry; readonly chained: ChainedEntry }[] {
  let previous = head;
  return entriesOf(out).map((audit) => {
    const chained = chainEntry(planId, previous, audit);
    previous = chained;
    return { audit, chained };
  });
}
