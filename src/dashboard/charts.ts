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

export interface CapGaugeInput {
  readonly limitMicros: number;
  readonly spentMicros: number;
  /** Held for calls in flight, lapsed holds left out. */
  readonly reservedMicros: number;
  /** The cap's alert fractions, marked as ticks. */
  readonly alertAt: readonly number[];
  /** What the window would have spent at its end at the pace so far; null: no projection. */
  readonly projectedMicros: number | null;
}

/** Units across of a cap's gauge. */
const CAP_GAUGE_WIDTH = 240;

/**
 * A cap's window as a bar: what was spent, then (paler) what is held for calls in flight, against the
 * limit at the right end; a tick at each alert fraction, and a dashed mark where the spending so far
 * would reach by the reset (at the end, red, when that is past the limit).
 */
export function capGauge(g: CapGaugeInput): Html {
  const w = CAP_GAUGE_WIDTH;
  const bar = { top: 5, height: 10 };
  const height = bar.top * 2 + bar.height;
  const at = (micros: number) =>
    g.limitMicros <= 0 ? (micros > 0 ? w : 0) : round(Math.min(1, Math.max(0, micros / g.limitMicros)) * w);
  const spent = at(g.spentMicros);
  const held = round(at(g.spentMicros + g.reservedMicros) - spent);
  const used = g.spentMicros + g.reservedMicros;
  const full = used >= g.limitMicros && used > 0;
  const color = full ? COLOR.over : used >= 0.8 * g.limitMicros && used > 0 ? COLOR.warn : COLOR.bar;
  const projected = g.projectedMicros;
  const pct = g.limitMicros <= 0 ? (used > 0 ? 100 : 0) : Math.floor((used * 100) / g.limitMicros);
  return html`<svg
    class="gauge"
    width="${w}"
    height="${height}"
    viewBox="0 0 ${w} ${height}"
    role="img"
    aria-label="${pct}% of the limit spent or reserved"
  >
    <rect y="${bar.top}" width="${w}" height="${bar.height}" rx="3" fill="${COLOR.track}" />
    ${spent > 0 ? html`<rect y="${bar.top}" width="${spent}" height="${bar.height}" fill="${color}" />` : ''}
    ${
      held > 0
        ? html`<rect
            x="${spent}"
            y="${bar.top}"
            width="${held}"
            height="${bar.height}"
            fill="${color}"
            fill-opacity="0.4"
          />`
        : ''
    }
    ${g.alertAt.map((f) => {
      const x = Math.min(w - 1, Math.max(1, round(f * w)));
      return html`<line
        x1="${x}"
        x2="${x}"
        y1="1"
        y2="${height - 1}"
        stroke="${COLOR.axis}"
        stroke-width="1.5"
        ><title>alert at ${Math.round(f * 100)}%</title></line
      >`;
    })}
    ${
      projected === null
        ? ''
        : html`<line
            x1="${Math.min(w - 1, Math.max(1, at(projected)))}"
            x2="${Math.min(w - 1, Math.max(1, at(projected)))}"
            y1="0"
            y2="${height}"
            stroke="${projected > g.limitMicros ? COLOR.over : COLOR.line}"
            stroke-width="2"
            stroke-dasharray="3 2"
            ><title>projected at reset: ${money(Math.round(projected / 10_000) / 100)}</title></line
          >`
    }
  </svg>`;
}
