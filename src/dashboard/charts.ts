import { html } from 'hono/html';
import { money } from '../runner/format.js';
import { COLOR, time, type Html } from './views.js';

// Drawn on the server, the budget as inline SVG and the decisions as a list: numbers go into attributes
// as numbers and text goes through `html`, so a chart needs no script and nothing from another origin.

/** One change of the money spent, from the audit log. */
export interface SpendPoint {
  /** Epoch milliseconds. */
  readonly at: number;
  /** Total spent after this entry. */
  readonly spent: number;
  /** The audit event that recorded it. */
  readonly event: string;
}

export interface BurnDownInput {
  /** The plan's tool budget; null draws the money spent instead of the money left. */
  readonly budget: number | null;
  readonly start: number;
  readonly end: number;
  readonly points: readonly SpendPoint[];
}

/** Units across of the drawn line, stretched to the chart's width. */
const SPAN = 1000;

/**
 * Budget left over time, as a step line (money is spent at instants), with the zero line marked. The chart
 * takes the page's width at a fixed height: its line is drawn in a box stretched sideways, while its
 * words and points keep their size in pixels, so they stay legible on a narrow screen.
 */
export function burnDownChart(input: BurnDownInput): Html {
  const { budget, points } = input;
  const height = 210;
  const m = { top: 26, bottom: 28 };
  const plotH = height - m.top - m.bottom;
  const start = Math.min(input.start, ...points.map((p) => p.at));
  const end = Math.max(input.end, start + 1000, ...points.map((p) => p.at));
  const valueOf = (spent: number) => (budget === null ? spent : budget - spent);
  const values = [valueOf(0), ...points.map((p) => valueOf(p.spent))];
  let yMax = Math.max(...values, budget ?? 0);
  const yMin = Math.min(0, ...values);
  if (yMax === yMin) yMax = yMin + 1;
  /** Where `t` falls across the chart, from 0 to 1. */
  const across = (t: number) => (t - start) / (end - start);
  const x = (t: number) => round(across(t) * SPAN);
  const pct = (t: number) => `${round(across(t) * 100)}%`;
  const y = (v: number) => round(m.top + ((yMax - v) / (yMax - yMin)) * plotH);

  let line = `M${x(start)} ${y(values[0] ?? 0)}`;
  points.forEach((p, i) => {
    line += ` H${x(p.at)} V${y(values[i + 1] ?? 0)}`;
  });
  line += ` H${x(end)}`;
  const area = `${line} V${y(Math.max(0, yMin))} H${x(start)} Z`;
  const ticks = [...new Set([yMax, yMax > 0 && yMin === 0 ? yMax / 2 : null, 0, yMin].filter(isNumber))];
  const caption = budget === null ? 'money spent (no budget limit)' : `budget left of ${money(budget)}`;

  return html`<svg class="chart" height="${height}" role="img" aria-label="${caption}">
    <title>${caption}</title>
    ${ticks.map(
      (v) =>
        html`<line
          x1="0"
          x2="100%"
          y1="${y(v)}"
          y2="${y(v)}"
          stroke="${v === 0 ? COLOR.axis : COLOR.grid}"
          stroke-width="1"
        />`,
    )}
    <svg width="100%" height="${height}" viewBox="0 0 ${SPAN} ${height}" preserveAspectRatio="none">
      <path d="${area}" fill="${COLOR.area}" fill-opacity="0.6" />
      <path
        d="${line}"
        fill="none"
        stroke="${COLOR.line}"
        stroke-width="2"
        vector-effect="non-scaling-stroke"
      />
    </svg>
    ${ticks.map((v) => html`<text x="4" y="${y(v) - 4}">${money(v)}</text>`)}
    <line x1="0" x2="0" y1="${m.top}" y2="${height - m.bottom}" stroke="${COLOR.axis}" />
    ${points.map((p, i) => {
      const v = values[i + 1] ?? 0;
      return html`<circle cx="${pct(p.at)}" cy="${y(v)}" r="3.5" fill="${v < 0 ? COLOR.over : COLOR.line}"
        ><title>
          ${time(p.at)} ${p.event}: spent ${money(p.spent)}${budget === null ? '' : `, left ${money(v)}`}
        </title></circle
      >`;
    })}
    <text class="label" x="100%" y="12" text-anchor="end">${caption}</text>
    <text x="0" y="${height - 8}">${time(start)}</text>
    <text x="100%" y="${height - 8}" text-anchor="end">${time(end)}</text>
  </svg>`;
}

/**
 * Where a decision of the plan file stands; `unknown progress` when the executor's saved progress cannot
 * be read, so no decision can be said to be done or not.
 */
export type DecisionState =
  'done' | 'waiting for confirmation' | 'failed' | 'running' | 'not reached' | 'unknown progress';

export interface TimelineItem {
  readonly id: string;
  readonly tool: string;
  readonly state: DecisionState;
  /** When it ran (epoch ms), or for a decision waiting for a person when it paused; null if neither. */
  readonly at: number | null;
  /**
   * The last lines it printed, or of its tool's last error when it failed: as many as `leash status`
   * shows, each bounded; not escaped.
   */
  readonly detail?: readonly string[];
}

/** The class of a state's marker and words: a fixed list, never the text of an item. */
const STATE_CLASS: Readonly<Record<DecisionState, string>> = {
  done: 't-done',
  'waiting for confirmation': 't-waiting',
  failed: 't-failed',
  running: 't-running',
  'not reached': 't-idle',
  'unknown progress': 't-idle',
};

/**
 * The plan's decisions top to bottom, each with a marker for where it stands: a list rather than a
 * drawing, so that its words keep their size and wrap on a narrow screen.
 */
export function timelineChart(items: readonly TimelineItem[]): Html {
  if (items.length === 0) return html`<p class="muted">The plan file has no decisions.</p>`;
  return html`<ol class="timeline" aria-label="decision timeline">
    ${items.map(
      (it) =>
        html`<li
          class="${STATE_CLASS[it.state]}"
          title="${it.id} (${it.tool}): ${it.state}${it.at === null ? '' : ` · ${time(it.at)}`}"
        >
          <span class="dot" aria-hidden="true"></span>
          <span class="id">${it.id}</span>
          <span class="facts"
            ><span class="tool">${it.tool}</span> <span class="state">${it.state}</span>
            <span class="at">${it.at === null ? '' : time(it.at)}</span></span
          >
          ${it.detail === undefined ? '' : html`<span class="detail">${it.detail.join('\n')}</span>`}
        </li>`,
    )}
  </ol>`;
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}

function isNumber(v: number | null): v is number {
  return v !== null && Number.isFinite(v);
}
