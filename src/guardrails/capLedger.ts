import { invalid } from '../errors.js';
import { isPlainObject } from '../json.js';
import { MAX_AMOUNT, MICROS_PER_UNIT } from '../money.js';
import { MAX_RUNTIME_ENTRIES } from './runtime.js';

// What one window of one spend cap holds, and the few ways it changes: spending, holding for a call in
// flight, settling a hold, and letting lapsed holds go. Pure: every store keeps these states as they
// are, and every decision about them is made here and in the service, once.

/** Which window of which cap: the cap's id, the scope (the labels it matched, as JSON) and the window's key. */
export interface CapRef {
  readonly cap: string;
  readonly scope: string;
  readonly window: string;
}

/** Budget a cap's window holds for one reservation of one plan, and when the hold lapses (epoch ms). */
export interface CapHold {
  readonly micros: number;
  readonly expiresAt: number;
}

/**
 * One window of one cap for one scope: what was spent in it and what is held for calls in flight, in
 * micro-units. A new window is a new state (a new row), never a reset of an old one.
 */
export interface CapWindowState {
  /** When the window starts and ends (epoch ms); a lifetime window has no end. */
  readonly startMs: number;
  readonly endMs: number | null;
  readonly spentMicros: number;
  /** The sum of `holds`. */
  readonly reservedMicros: number;
  /** By {@link holdKey}: the plan and the reservation that holds the amount. */
  readonly holds: ReadonlyMap<string, CapHold>;
  /** The highest `alert_at` fraction already recorded for this window, in millionths; 0 when none. */
  readonly alertedPpm: number;
}

const MAX_MICROS = MAX_AMOUNT * MICROS_PER_UNIT;

/** The key of a ref, for maps: its three parts joined by newlines, which none of them holds. */
export function refKey(ref: CapRef): string {
  return `${ref.cap}\n${ref.scope}\n${ref.window}`;
}

/** The key a window holds a plan's reservation under: plan ids and reservation ids hold no newline. */
export function holdKey(planId: string, reservationId: string): string {
  return `${planId}\n${reservationId}`;
}

/** A window nothing was spent in yet. */
export function emptyWindow(startMs: number, endMs: number | null): CapWindowState {
  return { startMs, endMs, spentMicros: 0, reservedMicros: 0, holds: new Map(), alertedPpm: 0 };
}

/** The window without the holds lapsed at `nowMs` (expiry <= now): the same object when none did. */
export function sweepWindow(w: CapWindowState, nowMs: number): CapWindowState {
  let holds: Map<string, CapHold> | undefined;
  let reserved = w.reservedMicros;
  for (const [key, hold] of w.holds) {
    if (hold.expiresAt > nowMs) continue;
    holds ??= new Map(w.holds);
    holds.delete(key);
    reserved -= hold.micros;
  }
  return holds === undefined ? w : { ...w, holds, reservedMicros: reserved };
}

/** Whether the window can take `micros` more within `limitMicros`: spent + held + micros <= limit. */
export function windowCovers(w: CapWindowState, limitMicros: number, micros: number): boolean {
  return w.spentMicros + w.reservedMicros + micros <= limitMicros;
}

/** Whether the window can hold one more reservation: a window keeps at most 10,000 holds. */
export function windowHasRoom(w: CapWindowState): boolean {
  return w.holds.size < MAX_RUNTIME_ENTRIES;
}

/** The window with `micros` more spent. */
export function spendIn(w: CapWindowState, micros: number): CapWindowState {
  if (w.spentMicros + micros > MAX_MICROS) invalid('cap spent', `at most ${MAX_AMOUNT}`, micros);
  return micros === 0 ? w : { ...w, spentMicros: w.spentMicros + micros };
}

/** The window holding `micros` for `key` until `expiresAt`; a key already held is refused. */
export function holdIn(w: CapWindowState, key: string, micros: number, expiresAt: number): CapWindowState {
  if (w.holds.has(key)) invalid('cap hold', 'not already held', key);
  if (w.reservedMicros + micros > MAX_MICROS) invalid('cap reserved', `at most ${MAX_AMOUNT}`, micros);
  const holds = new Map(w.holds).set(key, { micros, expiresAt });
  return { ...w, holds, reservedMicros: w.reservedMicros + micros };
}

/**
 * The window with `key`'s hold given back and `actualMicros` spent (null: nothing spent). A hold the
 * window no longer has (it lapsed, and was let go) gives back nothing; what was spent is spent all the
 * same, since the work was done.
 */
export function settleIn(w: CapWindowState, key: string, actualMicros: number | null): CapWindowState {
  const hold = w.holds.get(key);
  let next = w;
  if (hold !== undefined) {
    const holds = new Map(w.holds);
    holds.delete(key);
    next = { ...w, holds, reservedMicros: w.reservedMicros - hold.micros };
  }
  return actualMicros === null ? next : spendIn(next, actualMicros);
}

/**
 * The highest of the cap's alert fractions (millionths, ascending) that the window's spending reached
 * in `after` and that was not recorded yet, or null: compared exactly, spent * 10^6 >= ppm * limit.
 */
export function alertCrossed(
  alertPpm: readonly number[],
  limitMicros: number,
  after: CapWindowState,
): number | null {
  let crossed: number | null = null;
  const spent = BigInt(after.spentMicros) * 1_000_000n;
  for (const ppm of alertPpm) {
    if (ppm <= after.alertedPpm) continue;
    if (spent >= BigInt(ppm) * BigInt(limitMicros)) crossed = ppm;
  }
  return crossed;
}

/** Wire form of a window's state, as stores keep it. */
export interface CapWindowJson {
  start_ms: number;
  end_ms: number | null;
  spent_micros: number;
  holds?: [key: string, micros: number, expiresAt: number][];
  alerted_ppm?: number;
}

export function capWindowToJson(w: CapWindowState): CapWindowJson {
  const out: CapWindowJson = { start_ms: w.startMs, end_ms: w.endMs, spent_micros: w.spentMicros };
  if (w.holds.size > 0) out.holds = [...w.holds].map(([key, h]) => [key, h.micros, h.expiresAt]);
  if (w.alertedPpm > 0) out.alerted_ppm = w.alertedPpm;
  return out;
}

const micros = (v: unknown, field: string): number => {
  if (!Number.isSafeInteger(v) || (v as number) < 0 || (v as number) > MAX_MICROS) {
    invalid(field, `an integer from 0 to ${MAX_MICROS}`, v);
  }
  return v as number;
};
const epoch = (v: unknown, field: string): number => {
  if (!Number.isSafeInteger(v)) invalid(field, 'epoch milliseconds', v);
  return v as number;
};

/** A window's state read back from a store; throws GuardrailValidationError naming `field` when malformed. */
export function capWindowFromJson(json: unknown, field: string): CapWindowState {
  if (!isPlainObject(json)) invalid(field, 'a cap window object', json);
  const o = json as Record<string, unknown>;
  const startMs = epoch(o['start_ms'], `${field}.start_ms`);
  const endMs = o['end_ms'] === null ? null : epoch(o['end_ms'], `${field}.end_ms`);
  const spentMicros = micros(o['spent_micros'], `${field}.spent_micros`);
  const holds = new Map<string, CapHold>();
  let reservedMicros = 0;
  const raw = o['holds'] ?? [];
  if (!Array.isArray(raw)) invalid(`${field}.holds`, 'an array', raw);
  for (let i = 0; i < raw.length; i++) {
    const h: unknown = raw[i];
    const at = `${field}.holds[${i}]`;
    if (!Array.isArray(h) || h.length !== 3 || typeof h[0] !== 'string')
      invalid(at, '[key, micros, expiresAt]', h);
    const amount = micros(h[1], `${at}[1]`);
    holds.set(h[0] as string, { micros: amount, expiresAt: epoch(h[2], `${at}[2]`) });
    reservedMicros += amount;
  }
  const alertedPpm = o['alerted_ppm'] === undefined ? 0 : micros(o['alerted_ppm'], `${field}.alerted_ppm`);
  return { startMs, endMs, spentMicros, reservedMicros, holds, alertedPpm };
}
