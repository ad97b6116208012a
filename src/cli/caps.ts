// Spend caps across plans as `leash` installs and shows them: the caps of a policy's `budgets:` block put
// into the store (by `leash budgets set`, and by `run` and `mcp` before they start), and the current
// window of each cap for each label value seen, nearest its limit first.
import { GuardrailError } from '../errors.js';
import { scopeText, type SpendCap } from '../guardrails/caps.js';
import { canonicalJson } from '../json.js';
import { fromMicros } from '../money.js';
import { formatIso } from '../iso.js';
import { policyBudgets } from '../policy/policy.js';
import type { Policy } from '../policy/schema.js';
import type { GuardrailStore } from '../store/GuardrailStore.js';
import { readCapStandings } from '../service/capStandings.js';
import { money, safe, table } from './format.js';

/**
 * Installs the caps of the policy's `budgets:` block in the store (a cap already there under its id is
 * replaced, what was spent in its windows kept); returns them. Nothing without a policy or a block.
 */
export async function installPolicyCaps(
  store: GuardrailStore,
  policy: Policy | null,
): Promise<readonly SpendCap[]> {
  if (policy === null || policy.budgets === undefined) return [];
  const caps = policyBudgets(policy);
  if (caps.length > 0) await store.putCaps(caps);
  return caps;
}

/** One row of `leash budgets`: a cap's current window for one scope (the labels it matched). */
export interface CapRow {
  readonly cap: SpendCap;
  /** The scope's JSON (`{"team":"ml"}`), or null for a cap nothing was counted under in this window. */
  readonly scope: string | null;
  readonly window: string;
  readonly spentMicros: number;
  /** What holds not lapsed at the time of the listing keep. */
  readonly reservedMicros: number;
  /** When the window ends (epoch ms); null for a lifetime cap. */
  readonly endMs: number | null;
}

/**
 * The current window (at `nowMs`, in each cap's time zone) of every cap for every scope stored, and one
 * empty row for a cap with none; sorted by the share of the limit used, highest first, then by cap id
 * and scope. Older windows are left out: what they hold no longer counts.
 */
export async function capRows(store: GuardrailStore, nowMs: number): Promise<CapRow[]> {
  const rows: CapRow[] = [];
  for (const { cap, window, uses, error } of await readCapStandings(store, nowMs)) {
    // A stored cap's window is always known: its zone was checked when it was read.
    if (window === null)
      throw new GuardrailError('STORE_CORRUPT', `spend cap "${cap.id}": ${error ?? 'no window'}`);
    for (const use of uses) rows.push({ cap, ...use, window: window.key, endMs: window.endMs });
  }
  return rows.sort(
    (a, b) => compareUsed(b, a) || order(a.cap.id, b.cap.id) || order(a.scope ?? '', b.scope ?? ''),
  );
}

/** The share of the limit a row's spend and holds take: 1 for a limit of 0, which admits nothing more. */
export function usedOf(row: CapRow): number {
  const used = row.spentMicros + row.reservedMicros;
  return row.cap.limitMicros === 0 ? 1 : used / row.cap.limitMicros;
}

/** Compares the shares used exactly (integer cross products), so near-equal shares sort by id. */
function compareUsed(a: CapRow, b: CapRow): number {
  if (a.cap.limitMicros === 0 || b.cap.limitMicros === 0) return usedOf(a) - usedOf(b);
  const left = takenOf(a) * BigInt(b.cap.limitMicros);
  const right = takenOf(b) * BigInt(a.cap.limitMicros);
  return left === right ? 0 : left < right ? -1 : 1;
}

/** Spent and held together, as a bigint: the sum of two amounts near the maximum passes 2^53. */
const takenOf = (row: CapRow): bigint => BigInt(row.spentMicros) + BigInt(row.reservedMicros);

// Code-unit order, as the stores list scopes: the same on every machine, whatever its locale.
const order = (a: string, b: string): number => (a === b ? 0 : a < b ? -1 : 1);

/** The share used in tenths of a percent, rounded down so that a cap not quite full never reads 100%. */
function percent(row: CapRow): string {
  if (row.cap.limitMicros === 0) return '100.0%';
  const permille = (takenOf(row) * 1000n) / BigInt(row.cap.limitMicros);
  return `${permille / 10n}.${permille % 10n}%`;
}

/** `leash budgets` as a table. */
export function capsTable(rows: readonly CapRow[]): string {
  return table(
    ['CAP', 'LABELS', 'WINDOW', 'SPENT', 'RESERVED', 'LIMIT', 'USED', 'RESETS'],
    rows.map((r) => [
      r.cap.id,
      r.scope === null ? '-' : safe(scopeText(r.scope)),
      r.window,
      money(fromMicros(r.spentMicros)),
      money(fromMicros(r.reservedMicros)),
      money(r.cap.limit),
      percent(r),
      r.endMs === null ? 'never' : formatIso(r.endMs),
    ]),
  );
}

/** `leash budgets --json`: one object per row; `labels` is null where nothing was counted yet. */
export function capRowJson(row: CapRow): Record<string, unknown> {
  return {
    cap: row.cap.id,
    labels: row.scope === null ? null : (JSON.parse(row.scope) as Record<string, string>),
    window: row.window,
    spent: fromMicros(row.spentMicros),
    reserved: fromMicros(row.reservedMicros),
    limit: row.cap.limit,
    used: usedOf(row),
    resets_at: row.endMs === null ? null : formatIso(row.endMs),
  };
}

/** The labels a cap matches, as people read them: `team=ml, user=*`, or `(all plans)`. */
export function matchText(cap: SpendCap): string {
  return safe(scopeText(canonicalJson(cap.match, 'match')));
}

/** The caps `leash budgets set` installed, one line each. */
export function installedTable(caps: readonly SpendCap[]): string {
  return table(
    ['CAP', 'MATCH', 'LIMIT', 'WINDOW', 'TIMEZONE'],
    caps.map((cap) => [cap.id, matchText(cap), money(cap.limit), cap.window, cap.timezone]),
  );
}
