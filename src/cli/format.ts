// What the `leash` command prints for people: plain tables and short numbers. Scripts use --json.
import type { AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';
import { usedOf } from '../runner/format.js';

// Shared with the dashboard, which shows the same lines.
export { auditDetails, outputLines } from '../runner/format.js';

/** Lays out rows under a header, each column as wide as its widest cell. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** An amount of money as people write it: up to six decimals, at least two. */
export function money(n: number): string {
  const fixed = n.toFixed(6).replace(/0+$/, '');
  const [whole, frac = ''] = fixed.split('.');
  return `${whole}.${frac.padEnd(2, '0')}`;
}

const DAY_SECONDS = 86_400;
/** Past this many days (about 270 years) a duration is shown in seconds, as a power of ten. */
const MAX_DAYS_SHOWN = 99_999;

/**
 * Seconds as people read them: 42s, 3m05s, 1h02m, 35d02h; past 99999 days, 1e300s; `—`, as for no
 * value, for a number that is not finite (Infinity, NaN), which no amount of time is.
 */
export function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '—';
  const s = Math.max(0, Math.floor(seconds));
  const two = (n: number): string => String(n).padStart(2, '0');
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${two(s % 60)}s`;
  if (s < DAY_SECONDS) return `${Math.floor(s / 3600)}h${two(Math.floor((s % 3600) / 60))}m`;
  const days = Math.floor(s / DAY_SECONDS);
  if (days <= MAX_DAYS_SHOWN) return `${days}d${two(Math.floor((s % DAY_SECONDS) / 3600))}h`;
  const [mantissa = '', exponent = ''] = s.toExponential(2).split('e');
  return `${mantissa.replace(/\.?0+$/, '')}e${exponent.replace('+', '')}s`;
}

// Control characters other than line breaks could rewrite a terminal: shown as escapes instead.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f]/g;

/** Text from the store or a tool, made safe to print on a terminal. */
export function safe(text: string): string {
  return text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Steps, budget and wall clock of a plan, used against limit. */
export function gauges(g: AutonomyGuardrails, nowMs: number): string {
  return `steps ${stepsText(g)} · budget ${budgetText(g)} · elapsed ${wallOf(g, nowMs)}`;
}

export function stepsText(g: AutonomyGuardrails): string {
  return usedOf(String(g.stepCount), g.maxSteps === null ? null : String(g.maxSteps));
}

export function budgetText(g: AutonomyGuardrails): string {
  return usedOf(money(g.budgetSpent), g.toolBudget === null ? null : money(g.toolBudget));
}

export function wallOf(g: AutonomyGuardrails, atMs: number): string {
  const limit = g.maxWallClockSeconds === null ? null : duration(g.maxWallClockSeconds);
  const elapsed = g.elapsedSeconds(atMs);
  return usedOf(elapsed === null ? '—' : duration(elapsed), limit);
}

/** Lines of output as shown under a decision's line: indented, marked, made {@link safe}. */
export function outputBlock(lines: readonly string[]): string[] {
  return lines.map((line) => `    │ ${safe(line)}`);
}
