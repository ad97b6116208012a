import { errorText, isGuardrailError } from '../errors.js';
import type { SpendCap } from '../guardrails/caps.js';
import { sweepWindow } from '../guardrails/capLedger.js';
import { capWindowAt, type CapWindowSpan } from '../guardrails/windows.js';
import type { CapWindowRecord, GuardrailStore } from '../store/GuardrailStore.js';

// Where each spend cap stands now: its current window in its time zone and what every scope (label
// values) spent and holds in it, lapsed holds left out. What `leash budgets` lists and the dashboard's
// Budgets page draws.

/** What one scope of a cap has spent and holds in the current window (lapsed holds left out). */
export interface CapUse {
  /** The scope's labels as JSON (see `capScope`); null for a cap nothing was spent under this window. */
  readonly scope: string | null;
  readonly spentMicros: number;
  readonly reservedMicros: number;
}

/** A cap as of now: its current window and every scope's use of it, the closest to the limit first. */
export interface CapStanding {
  readonly cap: SpendCap;
  /** null when the window cannot be worked out (`error` says why). */
  readonly window: CapWindowSpan | null;
  /** At least one: a cap nothing was spent under yet has one use of its `match`, at zero. */
  readonly uses: readonly CapUse[];
  readonly error: string | null;
}

/**
 * Every stored cap as of `now`, the closest to its limit first. Reads every stored window: the store
 * lists windows by cap, not by time, and the past ones are left out here.
 */
export async function readCapStandings(store: GuardrailStore, now: number): Promise<CapStanding[]> {
  const caps = await store.listCaps();
  if (caps.length === 0) return [];
  return capStandings(caps, await store.listCapWindows(), now);
}

export function capStandings(
  caps: readonly SpendCap[],
  windows: readonly CapWindowRecord[],
  now: number,
): CapStanding[] {
  const standings = caps.map((cap): CapStanding => {
    let window: CapWindowSpan;
    try {
      window = capWindowAt(cap.window, cap.timezone, now);
    } catch (error) {
      if (!isGuardrailError(error)) throw error;
      return { cap, window: null, uses: [emptyUse()], error: errorText(error) };
    }
    const uses = windows
      .filter((w) => w.cap === cap.id && w.window === window.key)
      .map((w): CapUse => {
        const state = sweepWindow(w.state, now);
        return { scope: w.scope, spentMicros: state.spentMicros, reservedMicros: state.reservedMicros };
      })
      .sort((a, b) => usedFraction(cap, b) - usedFraction(cap, a) || compare(a.scope, b.scope));
    return { cap, window, uses: uses.length === 0 ? [emptyUse()] : uses, error: null };
  });
  const closest = (s: CapStanding) => usedFraction(s.cap, s.uses[0] ?? emptyUse());
  return standings.sort((a, b) => closest(b) - closest(a) || compare(a.cap.id, b.cap.id));
}

/** The use of a cap nothing was spent under in its window. */
export function emptyUse(): CapUse {
  return { scope: null, spentMicros: 0, reservedMicros: 0 };
}

/** Spent and held, as a fraction of the limit; a limit of 0 with anything used is past every other. */
function usedFraction(cap: SpendCap, use: CapUse): number {
  const used = use.spentMicros + use.reservedMicros;
  if (cap.limitMicros <= 0) return used > 0 ? Infinity : 0;
  return used / cap.limitMicros;
}

function compare(a: string | null, b: string | null): number {
  return (a ?? '') < (b ?? '') ? -1 : (a ?? '') > (b ?? '') ? 1 : 0;
}
