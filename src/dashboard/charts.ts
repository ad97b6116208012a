import { html } from 'hono/html';
import { money } from '../cli/format.js';
import { clip, COLOR, time, type Html } from './views.js';

// Inline SVG, drawn on the server: numbers go into attributes as numbers and text goes through `html`,
// so a chart needs no script and nothing from another origin.

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

const WIDTH = 1100;

/** Budget left over time, as a step line (money is spent at instants), with the zero line marked. */
export function burnDownChart(input: BurnDownInput): Html {
  const { budget, points } = input;
  const height = 210;
  const m = { left: 70, right: 24, top: 16, bottom: 32 };
  const plotW = WIDTH - m.left - m.right;
  const plotH = height - m.top - m.bottom;
  const start = Math.min(input.start, ...points.map((p) => p.at));
  const end = Math.max(input.end, start + 1000, ...points.map((p) => p.at));
  const valueOf = (spent: number) => (budget === null ? spent : budget - spent);
  const values = [valueOf(0), ...points.map((p) => valueOf(p.spent))];
  let yMax = Math.max(...values, budget ?? 0);
  const yMin = Math.min(0, ...values);
  if (yMax === yMin) yMax = yMin + 1;
  const x = (t: number) => round(m.left + ((t - start) / (end - start)) * plotW);
  const y = (v: number) => round(m.top + ((yMax - v) / (yMax - yMin)) * plotH);

  let line = `M${x(start)} ${y(values[0] ?? 0)}`;
  points.forEach((p, i) => {
    line += ` H${x(p.at)} V${y(values[i + 1] ?? 0)}`;
  });
  line += ` H${x(end)}`;
  const area = `${line} V${y(Math.max(0, yMin))} H${x(start)} Z`;
  const ticks = [...new Set([yMax, yMax > 0 && yMin === 0 ? yMax / 2 : null, 0, yMin].filter(isNumber))];
  const caption = budget === null ? 'money spent (no budget limit)' : `budget left of ${money(budget)}`;

  return html`<svg class="chart" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="${caption}">
    <title>${caption}</title>
    ${ticks.map(
      (v) =>
        html`<line
            x1="${m.left}"
            x2="${WIDTH - m.right}"
            y1="${y(v)}"
            y2="${y(v)}"
            stroke="${v === 0 ? COLOR.axis : COLOR.grid}"
            stroke-width="1"
          /><text x="${m.left - 8}" y="${y(v) + 4}" text-anchor="end">${money(v)}</text>`,
    )}
    <line x1="${m.left}" x2="${m.left}" y1="${m.top}" y2="${height - m.bottom}" stroke="${COLOR.axis}" />
    <path d="${area}" fill="${COLOR.area}" fill-opacity="0.6" />
    <path d="${line}" fill="none" stroke="${COLOR.line}" stroke-width="2" />
    ${points.map((p, i) => {
      const v = values[i + 1] ?? 0;
      return html`<circle cx="${x(p.at)}" cy="${y(v)}" r="3.5" fill="${v < 0 ? COLOR.over : COLOR.line}"
        ><title>
          ${time(p.at)} ${p.event}: spent ${money(p.spent)}${budget === null ? '' : `, left ${money(v)}`}
        </title></circle
      >`;
    })}
    <text x="${m.left}" y="${height - 10}">${time(start)}</text>
    <text x="${WIDTH - m.right}" y="${height - 10}" text-anchor="end">${time(end)}</text>
    <text x="${round(m.left + plotW / 2)}" y="${height - 10}" text-anchor="middle">${caption}</text>
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
  /** When its step was taken (epoch ms), if it was. */
  readonly at: number | null;
}

const STATE_COLOR: Readonly<Record<DecisionState, string>> = {
  done: COLOR.done,
  'waiting for confirmation': COLOR.waiting,
  failed: COLOR.failed,
  running: COLOR.running,
  'not reached': '#ffffff',
  'unknown progress': '#ffffff',
};

/** States drawn as an empty marker with grey text: nothing is known to have happened. */
const IDLE: ReadonlySet<DecisionState> = new Set(['not reached', 'unknown progress']);

/** The plan's decisions top to bottom, each with a marker for where it stands. */
export function timelineChart(items: readonly TimelineItem[]): Html {
  if (items.length === 0) return html`<p class="muted">The plan file has no decisions.</p>`;
  const row = 34;
  const top = 20;
  const height = top + row * (items.length - 1) + 20;
  const cx = 22;
  const col = { id: 48, tool: 400, state: 530, at: 760 };
  const last = top + row * (items.length - 1);
  return html`<svg class="chart" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="decision timeline">
    <title>decisions in order</title>
    ${items.length > 1 ? html`<line x1="${cx}" x2="${cx}" y1="${top}" y2="${last}" stroke="${COLOR.idle}" stroke-width="2" />` : ''}
    ${items.map((it, i) => {
      const cy = top + row * i;
      const stroke = IDLE.has(it.state) ? COLOR.idle : STATE_COLOR[it.state];
      return html`<g
        ><title>${it.id} (${it.tool}): ${it.state}${it.at === null ? '' : ` · step at ${time(it.at)}`}</title>
        <circle
          cx="${cx}"
          cy="${cy}"
          r="8"
          fill="${STATE_COLOR[it.state]}"
          stroke="${stroke}"
          stroke-width="2"
        />
        ${it.state === 'done' ? html`<path d="M${cx - 4} ${cy} l3 3 l5 -6" fill="none" stroke="#fff" stroke-width="2" />` : ''}
        ${it.state === 'failed' ? html`<path d="M${cx - 3.5} ${cy - 3.5} l7 7 M${cx + 3.5} ${cy - 3.5} l-7 7" stroke="#fff" stroke-width="2" />` : ''}
        <text class="label" x="${col.id}" y="${cy + 4}">${clip(it.id, 52)}</text>
        <text x="${col.tool}" y="${cy + 4}">${clip(it.tool, 28)}</text>
        <text x="${col.state}" y="${cy + 4}" fill="${IDLE.has(it.state) ? COLOR.axis : STATE_COLOR[it.state]}"
          >${it.state}</text
        >
        <text x="${col.at}" y="${cy + 4}">${it.at === null ? '' : time(it.at)}</text>
      </g>`;
    })}
  </svg>`;
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}

function isNumber(v: number | null): v is number {
  return v !== null && Number.isFinite(v);
}
