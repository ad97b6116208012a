import { html } from 'hono/html';
import { errorText, isGuardrailError } from '../../errors.js';
import { canonicalJson } from '../../json.js';
import { fromMicros } from '../../money.js';
import { duration, money } from '../../runner/format.js';
import { capScope, scopeText, type SpendCap } from '../../guardrails/caps.js';
import { sweepWindow } from '../../guardrails/capLedger.js';
import { capWindowAt, type CapWindowSpan } from '../../guardrails/windows.js';
import type { CapWindowRecord, GuardrailStore } from '../../store/GuardrailStore.js';
import { capGauge } from '../charts.js';
import { gauge, layout, time, type Html } from '../views.js';
import type { PageContext } from './context.js';

// Spend caps across plans: the Budgets page, with a gauge per cap and scope for the current window, and
// the section of a plan's page that lists the caps its labels put it under.

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

function emptyUse(): CapUse {
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

/**
 * What the window would have spent at its end if it went on spending at its pace so far (spent over the
 * elapsed part of the window, stretched to its whole length); null for a lifetime window, one that has
 * not begun, or nothing spent.
 */
export function projectedAtReset(use: CapUse, window: CapWindowSpan, now: number): number | null {
  if (window.endMs === null || use.spentMicros === 0) return null;
  const elapsed = BigInt(Math.min(now, window.endMs) - window.startMs);
  if (elapsed <= 0n) return null;
  const length = BigInt(window.endMs - window.startMs);
  return Number((BigInt(use.spentMicros) * length) / elapsed);
}

function amount(micros: number): string {
  return money(fromMicros(micros));
}

/** A projection to the cent: it is a guess, and six decimals would dress it up as a count. */
function estimate(micros: number): string {
  return money(Math.round(micros / 10_000) / 100);
}

/** A scope as people read it; a cap with no window this time shows what it matches (`team=*`). */
function labelsOf(cap: SpendCap, use: CapUse): string {
  return scopeText(use.scope ?? canonicalJson(cap.match, 'match'));
}

function percent(n: number): string {
  return `${Math.round(n * 100)}%`;
}

function resetText(window: CapWindowSpan, now: number): string {
  if (window.endMs === null) return 'never (lifetime)';
  return `${time(window.endMs)} (in ${duration((window.endMs - now) / 1000)})`;
}

export function budgetsPage(ctx: PageContext, standings: readonly CapStanding[]): Html {
  const body = html`<h1>Budgets</h1>
    ${
      standings.length === 0
        ? html`<p class="muted">
            No spend caps in this store. A policy's <code>budgets:</code> block defines caps that plans with
            matching labels share.
          </p>`
        : html`<p class="note muted small">
              Spend caps across plans, the closest to its limit first. Each bar shows what was spent, then
              (paler) what is held for calls in flight; ticks mark the alerts, and a dashed mark where the
              spending so far would reach by the reset at the same pace.
            </p>
            ${standings.map((s) => capSection(s, ctx.now))}`
    }`;
  return layout({ title: 'Budgets', body, pending: ctx.pending });
}

function capSection(s: CapStanding, now: number): Html {
  const { cap, window } = s;
  return html`<h2 id="${cap.id}">${cap.id}</h2>
    <div class="card">
      <p class="small muted">
        ${money(cap.limit)}
        ${cap.window === 'lifetime' ? 'in all (lifetime)' : html`per ${cap.window} (${cap.timezone})`} ·
        ${cap.alertAt.length === 0 ? 'no alerts' : `alerts at ${cap.alertAt.map(percent).join(', ')}`}
        ${window === null ? '' : html`· window <code>${window.key}</code> · resets ${resetText(window, now)}`}
      </p>
      ${s.error === null ? '' : html`<p class="bad">${s.error}</p>`}
      <table>
        <thead>
          <tr>
            <th>Labels</th>
            <th>Used</th>
            <th>Spent</th>
            <th>Reserved</th>
            <th>Left</th>
            <th>Projected at reset</th>
          </tr>
        </thead>
        <tbody>
          ${s.uses.map((u) => useRow(cap, window, u, now))}
        </tbody>
      </table>
    </div>`;
}

function useRow(cap: SpendCap, window: CapWindowSpan | null, u: CapUse, now: number): Html {
  const projected = window === null ? null : projectedAtReset(u, window, now);
  const used = u.spentMicros + u.reservedMicros;
  const left = Math.max(0, cap.limitMicros - used);
  return html`<tr>
    <td><code>${labelsOf(cap, u)}</code></td>
    <td data-label="Used" class="nowrap">
      ${capGauge({ ...u, limitMicros: cap.limitMicros, alertAt: cap.alertAt, projectedMicros: projected })}<span
        class="gauge-text"
        >${amount(used)} / ${money(cap.limit)}</span
      >${u.scope === null ? html` <span class="muted small">nothing spent this window</span>` : ''}
    </td>
    <td data-label="Spent" class="num">${amount(u.spentMicros)}</td>
    <td data-label="Reserved" class="num">${amount(u.reservedMicros)}</td>
    <td data-label="Left" class="num${left === 0 ? ' bad' : ''}">${amount(left)}</td>
    <td data-label="Projected at reset" class="num">
      ${
        projected === null
          ? html`<span class="muted">—</span>`
          : html`<span class="${projected > cap.limitMicros ? 'bad' : 'muted'}">${estimate(projected)}</span>`
      }
    </td>
  </tr>`;
}

/** A cap that applies to a plan, with the use of the scope the plan's labels put it under. */
export interface PlanCap {
  readonly cap: SpendCap;
  readonly window: CapWindowSpan | null;
  readonly use: CapUse;
}

/** The caps whose scope takes in a plan with `labels`, each with that scope's use this window. */
export function capsOfPlan(
  standings: readonly CapStanding[],
  labels: Readonly<Record<string, string>>,
): PlanCap[] {
  return standings.flatMap((s) => {
    const scope = capScope(s.cap, labels);
    if (scope === null) return [];
    const use = s.uses.find((u) => u.scope === scope) ?? { ...emptyUse(), scope };
    return [{ cap: s.cap, window: s.window, use }];
  });
}

/** A plan page's section of the caps that apply to it; nothing when none does. */
export function planCapsSection(caps: readonly PlanCap[]): Html | '' {
  if (caps.length === 0) return '';
  return html`<h2>Spend caps</h2>
    <div class="card">
      <dl class="kv">
        ${caps.map(
          ({ cap, window, use }) =>
            html`<dt><a href="/budgets#${cap.id}">${cap.id}</a></dt>
              <dd>
                ${gauge(
                  use.spentMicros + use.reservedMicros,
                  cap.limitMicros,
                  `${amount(use.spentMicros + use.reservedMicros)} / ${money(cap.limit)}`,
                )}
                <span class="muted small"
                  >${labelsOf(cap, use)}${window === null ? '' : html` · <code>${window.key}</code>`}</span
                >
              </dd>`,
        )}
      </dl>
    </div>`;
}
