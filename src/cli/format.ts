// What the `leash` command prints for people: plain tables and short numbers. Scripts use --json.
import type { AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';

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

/** `used/limit`, or `used` alone when there is no limit. */
export function usedOf(used: string, limit: string | null): string {
  return limit === null ? `${used} (no limit)` : `${used}/${limit}`;
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

/**
 * An audit entry's details for the `leash audit` table. A step check records `step`, the steps taken
 * before it (0 for the first), which is what max_steps is checked against; the table numbers the step
 * from 1, as a run's progress does (`step 3/10`). Other details, and every JSON format, stay as recorded.
 */
export function auditDetails(eventType: string, details: Readonly<Record<string, unknown>>): string {
  const { step, limit, ...rest } = details;
  const isStep = eventType === 'step_allowed' || eventType === 'step_blocked';
  if (!isStep || !Number.isSafeInteger(step) || (limit !== null && !Number.isSafeInteger(limit))) {
    return JSON.stringify(details);
  }
  const text = `step ${usedOf(String((step as number) + 1), limit === null ? null : String(limit))}`;
  return Object.keys(rest).length === 0 ? text : `${text} ${JSON.stringify(rest)}`;
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

/** Lines of a step's output shown under it unless asked for all of it. */
export const OUTPUT_TAIL_LINES = 3;
/** Characters of one line shown unless asked for all of it. */
export const OUTPUT_LINE_CHARS = 200;

/**
 * What a step produced, as lines for a person (not yet made {@link safe}): the last lines a command
 * printed, stdout then stderr; an HTTP answer's status and size; anything else as JSON on one line. Cut
 * to the last {@link OUTPUT_TAIL_LINES} lines of at most {@link OUTPUT_LINE_CHARS} characters, or whole
 * with `verbose` (an HTTP answer with its body).
 */
export function outputLines(output: unknown, verbose = false): string[] {
  let lines: string[];
  if (isShellOutput(output)) {
    lines = [...linesOf(output.stdout), ...linesOf(output.stderr)];
  } else if (isHttpOutput(output)) {
    const size = Buffer.byteLength(output.body, 'utf8');
    const cut = output.body_truncated === true ? ', the rest not read' : '';
    const head = `HTTP ${output.status}, ${size} byte${size === 1 ? '' : 's'}${cut}`;
    lines = verbose ? [head, ...linesOf(output.body)] : [head];
  } else if (output === undefined || output === null) {
    lines = [];
  } else {
    lines = linesOf(JSON.stringify(output, null, verbose ? 2 : undefined) ?? String(output));
  }
  if (verbose) return lines;
  return lines
    .slice(-OUTPUT_TAIL_LINES)
    .map((l) => (l.length > OUTPUT_LINE_CHARS ? `${l.slice(0, OUTPUT_LINE_CHARS - 1)}…` : l));
}

/** Lines of output as shown under a decision's line: indented, marked, made {@link safe}. */
export function outputBlock(lines: readonly string[]): string[] {
  return lines.map((line) => `    │ ${safe(line)}`);
}

function linesOf(text: string): string[] {
  const trimmed = text.trimEnd();
  return trimmed === '' ? [] : trimmed.split(/\r?\n/);
}

function isShellOutput(o: unknown): o is { exit_code: number; stdout: string; stderr: string } {
  const r = o as Record<string, unknown> | null;
  return (
    typeof o === 'object' &&
    r !== null &&
    typeof r['exit_code'] === 'number' &&
    typeof r['stdout'] === 'string' &&
    typeof r['stderr'] === 'string'
  );
}

function isHttpOutput(o: unknown): o is { status: number; body: string; body_truncated?: boolean } {
  const r = o as Record<string, unknown> | null;
  return (
    typeof o === 'object' &&
    r !== null &&
    typeof r['status'] === 'number' &&
    typeof r['body'] === 'string' &&
    typeof r['headers'] === 'object'
  );
}
