import { html } from 'hono/html';
import { canonicalJson } from '../../json.js';
import { fromMicros } from '../../money.js';
import { duration, money } from '../../runner/format.js';
import { capScope, scopeText, type SpendCap } from '../../guardrails/caps.js';
import type { CapWindowSpan } from '../../guardrails/windows.js';
import { capGauge } from '../charts.js';
import { gauge, time, type Html } from '../views.js';
import { pageLayout, type PageContext } from './context.js';
import { emptyUse, type CapStanding, type CapUse } from '../../service/capStandings.js';

export { capStandings, readCapStandings, type CapStanding, type CapUse } from '../../service/capStandings.js';

// Spend caps across plans: the Budgets page, with a gauge per cap and scope for the current window, and
// the section of a plan's page that lists the caps its labels put it under.

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
  return pageLayout(ctx, { title: 'Budgets', body });
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
