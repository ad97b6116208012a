import { invalid } from '../errors.js';
import { canonicalIso, isSerializableTimestamp, parseIsoMs } from '../iso.js';
import { MAX_AMOUNT, MICROS_PER_UNIT } from '../money.js';
import type { AutonomyGuardrails } from './AutonomyGuardrails.js';
import type { CapRef } from './capLedger.js';
import type { Reservation, Runtime } from './runtime.js';
import { MAX_RUNTIME_ENTRIES, reservationExpired, validRuntimeKey } from './runtime.js';

// How a plan's guardrails change: counters, reservations and their lapses, waits for a person and tool
// counts. Stores apply a change's mutation with applyMutation, atomically with its audit entries.

/** What a change does to a plan's counters; the store applies it atomically with the audit entry. */
export interface PlanMutation {
  /** Steps to add to `step_count`. */
  readonly steps?: number;
  /** Micro-units to add to `budget_spent`. */
  readonly spendMicros?: number;
  /** Sets `start_time` (ISO-8601 UTC) if it is still unset. */
  readonly startTime?: string;
  /**
   * Drops the reservations that lapsed at this epoch-millisecond time (expiry <= it, or none recorded),
   * takes their amount off `reserved` and remembers their ids as lapsed until settled (the oldest are
   * forgotten beyond 10,000). Applied first, before `release`, `reserve` and `spendMicros`.
   */
  readonly expireBefore?: number;
  /**
   * Opens a budget reservation; its id must not be open already. `expiresAt` (epoch ms) is when it
   * lapses; without it none is recorded, and the next `expireBefore` drops it.
   */
  readonly reserve?: {
    readonly id: string;
    readonly micros: number;
    readonly expiresAt?: number;
    /** The spend caps' windows that hold the amount too (see `Reservation.caps`). */
    readonly caps?: readonly CapRef[];
  };
  /** Closes an open reservation (applied after `expireBefore`, before `reserve` and `spendMicros`). */
  readonly release?: string;
  /** Settles a reservation that lapsed (see `expireBefore`): forgets it, after `expireBefore`. */
  readonly settleLapsed?: string;
  /** Starts a wait for a person at this ISO-8601 time, unless one is going on. */
  readonly pause?: string;
  /** Ends the wait going on at this epoch-millisecond time; the wall clock skips it. */
  readonly unpause?: number;
  /** Counts one call of the named tool. */
  readonly toolCall?: string;
}

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
    const copy = copyMap(reservations);
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
      const caps = m.reserve.caps;
      const held: Reservation =
        caps === undefined || caps.length === 0 ? { micros, expiresAt } : { micros, expiresAt, caps };
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
    toolCalls = copyMap(toolCalls).set(tool, (toolCalls.get(tool) ?? 0) + 1);
  }
  return { reservations, reservedMicros, lapsed, pausedMs, pausedSince, toolCalls };
}

/**
 * A copy of a map, entry by entry: `new Map(map)` goes through the iterator protocol, which costs more
 * than copying the one or two reservations a plan holds (82 against 39 ns for one entry).
 */
function copyMap<K, V>(map: ReadonlyMap<K, V>): Map<K, V> {
  const copy = new Map<K, V>();
  for (const [key, value] of map) copy.set(key, value);
  return copy;
}
