import { createHash } from 'node:crypto';
import { invalid } from '../errors.js';
import { canonicalIso, formatIso, parseIsoMs } from '../iso.js';
import { fromMicros, toMicros } from '../money.js';
import { isPlainText } from '../unicode.js';
import type { CapRef } from './capLedger.js';
import { intField, objectWithKeys } from './validate.js';

// What a plan holds while it runs, besides its counters: reservations open and lapsed, waits for a
// person, tool calls counted; its wire form, and the keys it is indexed by.

/**
 * What a running plan holds besides its counters: budget reserved for calls in flight, time spent
 * waiting for a person (which the wall clock does not count), and calls per tool. Optional on the wire,
 * and written only when not empty, so state without it reads as DESIGN.md §3 shows.
 */
export interface Runtime {
  readonly reservations: ReadonlyMap<string, Reservation>;
  readonly reservedMicros: number;
  /**
   * Ids of reservations that lapsed and were given back, oldest first, until a commit or release settles
   * them: only these may still be settled once they are not open. A commit of any other id that is not
   * open was settled already (by another handle of the same id), so it spends nothing twice.
   */
  readonly lapsed: ReadonlySet<string>;
  readonly pausedMs: number;
  readonly pausedSince: string | null;
  readonly toolCalls: ReadonlyMap<string, number>;
}

/**
 * Budget held for one call in flight, and when the hold lapses (epoch ms). A null expiry is one never
 * recorded (state written before reservations expired): such a hold counts as lapsed at the first expiry
 * check, because a hold that never lapses would keep budget from the plan forever.
 */
export interface Reservation {
  readonly micros: number;
  readonly expiresAt: number | null;
  /** The windows of the spend caps that hold the amount too: settled there as in the plan. */
  readonly caps?: readonly CapRef[];
}

/** True when the reservation has lapsed at `nowMs`. */
export function reservationExpired(r: Reservation, nowMs: number): boolean {
  return r.expiresAt === null || r.expiresAt <= nowMs;
}

export const EMPTY_RUNTIME: Runtime = Object.freeze({
  reservations: new Map<string, Reservation>(),
  reservedMicros: 0,
  lapsed: new Set<string>(),
  pausedMs: 0,
  pausedSince: null,
  toolCalls: new Map<string, number>(),
});

/** Longest reservation id or tool name kept in state. */
const MAX_KEY_LENGTH = 256;
/** Most reservations open at once, and most tools counted, per plan. */
export const MAX_RUNTIME_ENTRIES = 10_000;

/** Wire form of the runtime state; every key optional. */
export interface RuntimeJson {
  /** `expires_at` (ISO-8601) is absent in state written before reservations expired. */
  reservations?: { id: string; amount: number; expires_at?: string; caps?: [string, string, string][] }[];
  lapsed?: string[];
  paused_ms?: number;
  paused_since?: string | null;
  tool_calls?: Record<string, number>;
}

export const RUNTIME_KEYS = ['reservations', 'lapsed', 'paused_ms', 'paused_since', 'tool_calls'] as const;

export function parseRuntime(o: Record<string, unknown>, prefix: string): Runtime {
  const reservations = new Map<string, Reservation>();
  let reservedMicros = 0;
  const rawReservations = o['reservations'];
  if (rawReservations !== undefined) {
    const field = `${prefix}reservations`;
    if (!Array.isArray(rawReservations) || rawReservations.length > MAX_RUNTIME_ENTRIES) {
      invalid(field, `an array of at most ${MAX_RUNTIME_ENTRIES} reservations`, rawReservations);
    }
    for (let i = 0; i < rawReservations.length; i++) {
      const at = `${field}[${i}]`;
      const r = objectWithKeys(rawReservations[i] ?? null, at, ['id', 'amount', 'expires_at', 'caps']);
      const id = validRuntimeKey(r['id'], `${at}.id`);
      if (reservations.has(id)) invalid(`${at}.id`, 'unique', id);
      const micros = toMicros(r['amount'], `${at}.amount`, 'nearest');
      // Absent in state written before reservations expired: see Reservation.
      const rawExpiry = r['expires_at'];
      const expiresAt =
        rawExpiry === undefined ? null : parseIsoMs(canonicalIso(rawExpiry, `${at}.expires_at`));
      const caps = r['caps'] === undefined ? undefined : capRefsOf(r['caps'], `${at}.caps`);
      reservations.set(id, caps === undefined ? { micros, expiresAt } : { micros, expiresAt, caps });
      reservedMicros += micros;
    }
  }
  const lapsed = new Set<string>();
  const rawLapsed = o['lapsed'];
  if (rawLapsed !== undefined) {
    const field = `${prefix}lapsed`;
    if (!Array.isArray(rawLapsed) || rawLapsed.length > MAX_RUNTIME_ENTRIES) {
      invalid(field, `an array of at most ${MAX_RUNTIME_ENTRIES} reservation ids`, rawLapsed);
    }
    for (let i = 0; i < rawLapsed.length; i++) {
      const id = validRuntimeKey(rawLapsed[i], `${field}[${i}]`);
      if (lapsed.has(id) || reservations.has(id)) invalid(`${field}[${i}]`, 'unique and not open', id);
      lapsed.add(id);
    }
  }
  const toolCalls = new Map<string, number>();
  const rawCalls = o['tool_calls'];
  if (rawCalls !== undefined) {
    const field = `${prefix}tool_calls`;
    const calls = objectWithKeys(rawCalls, field, Object.keys(rawCalls ?? {}));
    const names = Object.keys(calls);
    if (names.length > MAX_RUNTIME_ENTRIES) invalid(field, `at most ${MAX_RUNTIME_ENTRIES} tools`, rawCalls);
    for (const name of names) {
      toolCalls.set(
        validRuntimeKey(name, `${field}.${name}`),
        intField(calls[name], `${field}.${name}`, 0, false) as number,
      );
    }
  }
  const pausedMs =
    o['paused_ms'] === undefined ? 0 : (intField(o['paused_ms'], `${prefix}paused_ms`, 0, false) as number);
  const rawSince = o['paused_since'];
  const pausedSince =
    rawSince === undefined || rawSince === null ? null : canonicalIso(rawSince, `${prefix}paused_since`);
  return { reservations, reservedMicros, lapsed, pausedMs, pausedSince, toolCalls };
}

/** Most cap windows one reservation is held in. */
export const MAX_CAPS_PER_RESERVATION = 64;

/** The cap windows of a reservation as written: `[cap, scope, window]` triples. */
function capRefsOf(value: unknown, field: string): CapRef[] {
  if (!Array.isArray(value) || value.length > MAX_CAPS_PER_RESERVATION) {
    invalid(field, `an array of at most ${MAX_CAPS_PER_RESERVATION} [cap, scope, window] triples`, value);
  }
  return value.map((v: unknown, i) => {
    const t = v as unknown[];
    if (
      !Array.isArray(v) ||
      v.length !== 3 ||
      !t.every((x) => typeof x === 'string' && isPlainText(x) && x.length <= 1024)
    ) {
      invalid(`${field}[${i}]`, 'a [cap, scope, window] triple of strings', v);
    }
    return { cap: t[0] as string, scope: t[1] as string, window: t[2] as string };
  });
}

/** Validates a key used in runtime state (a reservation id or a tool name). */
export function validRuntimeKey(value: unknown, field: string): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > MAX_KEY_LENGTH ||
    !isPlainText(value)
  ) {
    invalid(
      field,
      `a non-empty string of at most ${MAX_KEY_LENGTH} characters without control characters or lone surrogates`,
      value,
    );
  }
  return value;
}

export function runtimeJson(r: Runtime): RuntimeJson {
  const out: RuntimeJson = {};
  if (r.reservations.size > 0) {
    out.reservations = [...r.reservations].map(([id, { micros, expiresAt, caps }]) => {
      const json: NonNullable<RuntimeJson['reservations']>[number] = { id, amount: fromMicros(micros) };
      if (expiresAt !== null) json.expires_at = formatIso(expiresAt);
      if (caps !== undefined && caps.length > 0) json.caps = caps.map((c) => [c.cap, c.scope, c.window]);
      return json;
    });
  }
  if (r.lapsed.size > 0) out.lapsed = [...r.lapsed];
  if (r.pausedMs > 0) out.paused_ms = r.pausedMs;
  if (r.pausedSince !== null) out.paused_since = r.pausedSince;
  if (r.toolCalls.size > 0) out.tool_calls = Object.fromEntries(r.toolCalls);
  return out;
}

/**
 * A runtime key made of `base` (a decision or tool call id, itself a valid key) and `suffix` (a try, a
 * nested call): `base + suffix`, or, when that would pass the length limit, the start of `base`, `~`, a
 * hash of the whole base, and `suffix`, so that long ids still get distinct keys within the limit.
 */
export function runtimeKeyOf(base: string, suffix: string): string {
  const key = base + suffix;
  if (key.length <= MAX_KEY_LENGTH) return key;
  const digest = createHash('sha256').update(base).digest('hex').slice(0, 16);
  let end = MAX_KEY_LENGTH - suffix.length - digest.length - 1;
  // Never half of a surrogate pair: the key would hold a lone surrogate, which no key may.
  const last = base.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${base.slice(0, end)}~${digest}${suffix}`;
}
