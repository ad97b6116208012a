import { GuardrailError } from '../errors.js';
import type { AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';
import { capScope, spendCap, type SpendCap } from '../guardrails/caps.js';
import {
  emptyWindow,
  refKey,
  sweepWindow,
  type CapRef,
  type CapWindowState,
} from '../guardrails/capLedger.js';
import type { CapWindowSpan } from '../guardrails/windows.js';
import { capWindowIn } from '../guardrails/zoneWindows.js';
import { IANAZone } from 'luxon';
import type { AppliedCap, CapView, CapWrite } from './GuardrailStore.js';

// What every store does with spend caps in an update, written once: which windows an update of a plan
// reads, the view its change gets, and the check of what the change writes. A store itself only reads
// and writes window rows, in the same atomic step as the plan's.

/** A cap that applies to a plan, and the window of it an update at a time falls in. */
export interface CapSlot {
  readonly cap: SpendCap;
  readonly ref: CapRef;
  readonly span: CapWindowSpan;
}

/** The windows an update of a plan reads: those of the caps that apply, and those its reservations hold. */
export interface CapWindows {
  readonly slots: readonly CapSlot[];
  /** Every window to read, the slots' first; no ref twice. */
  readonly refs: readonly CapRef[];
  /** Every stored cap, in id order. */
  readonly caps: readonly SpendCap[];
}

/** The zone of a cap's time zone, checked when the cap was made: asked once per name, not per update. */
const zones = new Map<string, IANAZone>();
function zoneOf(name: string): IANAZone {
  let zone = zones.get(name);
  if (zone === undefined) {
    zone = IANAZone.create(name);
    if (zones.size < 1_000) zones.set(name, zone);
  }
  return zone;
}

const NONE: CapWindows = Object.freeze({ slots: [], refs: [], caps: [] });

/**
 * The windows an update of plan state `g` at `at` reads, given the stored caps (in id order): one per
 * cap whose match the plan's labels meet, and each window an open reservation of the plan holds an
 * amount in. None for a plan that is not configured.
 */
export function capWindowsFor(
  caps: readonly SpendCap[],
  g: AutonomyGuardrails | null,
  at: number,
): CapWindows {
  if (g === null) return NONE;
  const reservations = g.runtime.reservations;
  if (caps.length === 0 && reservations.size === 0) return NONE;
  const slots: CapSlot[] = [];
  const refs: CapRef[] = [];
  const seen = new Set<string>();
  const labels = g.labels;
  for (const cap of caps) {
    const scope = capScope(cap, labels);
    if (scope === null) continue;
    const span = capWindowIn(cap.window, zoneOf(cap.timezone), at);
    const ref: CapRef = { cap: cap.id, scope, window: span.key };
    slots.push({ cap, ref, span });
    refs.push(ref);
    seen.add(refKey(ref));
  }
  for (const r of reservations.values()) {
    for (const ref of r.caps ?? []) {
      const key = refKey(ref);
      if (seen.has(key)) continue;
      seen.add(key);
      refs.push(ref);
    }
  }
  return refs.length === 0 ? NONE : { slots, refs, caps };
}

const noState = (): undefined => undefined;

/**
 * The view of a plan no cap applies to and no reservation holds in: nothing to read, so nothing is
 * allocated but the view (every budget check of an uncapped plan takes this path).
 */
export function emptyCapView(at: number): CapView {
  return { at, applying: [], state: noState, capOf: noState };
}

/**
 * The cap windows one atomic step of a store works with: read once (from `load`, which answers
 * undefined for a window not stored), handed to each change of the step as a view, and changed by what
 * the changes write; `written` is what the step must store at its end.
 */
export class CapSession {
  readonly #load: (ref: CapRef) => CapWindowState | undefined;
  readonly #states = new Map<string, CapWindowState | undefined>();
  readonly #written = new Map<string, CapWrite>();

  constructor(load: (ref: CapRef) => CapWindowState | undefined) {
    this.#load = load;
  }

  #read(ref: CapRef): CapWindowState | undefined {
    const key = refKey(ref);
    if (this.#states.has(key)) return this.#states.get(key);
    const state = this.#load(ref);
    this.#states.set(key, state);
    return state;
  }

  /** The view of `windows` at `at`: a window of a slot not stored yet starts empty. */
  view(windows: CapWindows, at: number): CapView {
    if (windows.refs.length === 0) return emptyCapView(at);
    const known = new Map<string, CapWindowState>();
    const applying: AppliedCap[] = [];
    for (const { cap, ref, span } of windows.slots) {
      const state = sweepWindow(this.#read(ref) ?? emptyWindow(span.startMs, span.endMs), at);
      known.set(refKey(ref), state);
      applying.push({ cap, ref, span, state });
    }
    for (const ref of windows.refs) {
      const key = refKey(ref);
      if (known.has(key)) continue;
      const stored = this.#read(ref);
      if (stored !== undefined) known.set(key, sweepWindow(stored, at));
    }
    const caps = windows.caps;
    return {
      at,
      applying,
      state: (ref) => known.get(refKey(ref)),
      capOf: (id) => caps.find((c) => c.id === id),
    };
  }

  /**
   * Checks what a change writes: each window must be one of its view's (else `STORE_CONTRACT`). Changes
   * nothing: see {@link keep}.
   */
  static check(writes: readonly CapWrite[] | undefined, view: CapView | null): void {
    if (writes === undefined) return;
    if (!Array.isArray(writes))
      throw new GuardrailError('STORE_CONTRACT', 'caps must be an array of cap writes');
    for (const w of writes) {
      if (view === null || view.state(w.ref) === undefined) {
        throw new GuardrailError(
          'STORE_CONTRACT',
          `a change wrote cap window ${JSON.stringify(refKey(w.ref))}, which its view does not hold`,
        );
      }
    }
  }

  /** Keeps what a change wrote (checked by {@link check}): later views of the step see the new states. */
  keep(writes: readonly CapWrite[]): void {
    for (const w of writes) {
      const key = refKey(w.ref);
      this.#states.set(key, w.state);
      this.#written.set(key, w);
    }
  }

  /** The windows written in this step, each with its last state. */
  get written(): readonly CapWrite[] {
    return [...this.#written.values()];
  }
}

/** Cap, then scope, then window, by code unit: the order every store lists windows in. */
export function compareRefs(a: CapRef, b: CapRef): number {
  const x = refKey(a);
  const y = refKey(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** A cap handed to a store, checked as the service checks one (a store is also called directly). */
export function checkedCap(c: SpendCap, field: string): SpendCap {
  const { id, match, limit, window, timezone, alertAt } = c ?? ({} as SpendCap);
  return spendCap({ id, match, limit, window, timezone, alertAt }, field);
}
