// What a run's steps and audit entries read as for people, shared by the `leash` command and the
// dashboard so that both show the same lines: plain text, not yet escaped for a terminal or a page.
import { GuardrailEventType } from '../events.js';

/** `used/limit`, or `used` alone when there is no limit. */
export function usedOf(used: string, limit: string | null): string {
  return limit === null ? `${used} (no limit)` : `${used}/${limit}`;
}

/**
 * A step check's step as people count it, with the entry's other details: null for any other entry, or
 * one whose `step` or `limit` is not a count. A step check records `step`, the steps taken before it (0
 * for the first), which is what max_steps is checked against; people number the step from 1, as a run's
 * progress does (`3/10`).
 */
export function stepOfEntry(
  eventType: string,
  details: Readonly<Record<string, unknown>>,
): { readonly step: string; readonly rest: Readonly<Record<string, unknown>> } | null {
  const { step, limit, ...rest } = details;
  const isStep = eventType === 'step_allowed' || eventType === 'step_blocked';
  if (!isStep || !Number.isSafeInteger(step) || (limit !== null && !Number.isSafeInteger(limit))) {
    return null;
  }
  return { step: usedOf(String((step as number) + 1), limit === null ? null : String(limit)), rest };
}

/**
 * An entry's result as people are shown it. A `confirmation_required` check is recorded as denied (the
 * step may not run yet), but it pauses the plan for a person rather than stopping it: it reads as
 * waiting. The `leash audit` table and the dashboard's audit page both show it so; JSON keeps the record.
 */
export function auditResult(entry: { readonly event_type: string; readonly result: string }): string {
  return entry.event_type === GuardrailEventType.CONFIRMATION_REQUIRED ? 'waiting' : entry.result;
}

/**
 * An audit entry's details on one line: a step check's step numbered from 1 (`step 3/10`, see
 * {@link stepOfEntry}); other details, and every JSON format, stay as recorded.
 */
export function auditDetails(eventType: string, details: Readonly<Record<string, unknown>>): string {
  const s = stepOfEntry(eventType, details);
  if (s === null) return JSON.stringify(details);
  const text = `step ${s.step}`;
  return Object.keys(s.rest).length === 0 ? text : `${text} ${JSON.stringify(s.rest)}`;
}

/** Lines of a step's output shown under it unless asked for all of it. */
export const OUTPUT_TAIL_LINES = 3;
/** Characters of one line shown unless asked for all of it. */
export const OUTPUT_LINE_CHARS = 200;

/**
 * What a step produced, as lines for a person: the last lines a command printed, stdout then stderr; an
 * HTTP answer's status and size; anything else as JSON on one line. Cut as {@link tailLines} does, or
 * whole with `verbose` (an HTTP answer with its body).
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
  return verbose ? lines : tailLines(lines);
}

/**
 * The last {@link OUTPUT_TAIL_LINES} lines, each cut to {@link OUTPUT_LINE_CHARS} characters: what is
 * shown of a text unless all of it is asked for.
 */
export function tailLines(lines: readonly string[]): string[] {
  return lines
    .slice(-OUTPUT_TAIL_LINES)
    .map((l) => (l.length > OUTPUT_LINE_CHARS ? `${l.slice(0, OUTPUT_LINE_CHARS - 1)}…` : l));
}

/** A text's lines, without the blank end; none for a blank text. */
export function linesOf(text: string): string[] {
  const trimmed = text.trimEnd();
  return trimmed === '' ? [] : trimmed.split(/\r?\n/);
}

/** True when `o` is an object whose fields have the given `typeof`s. */
function hasFields(o: unknown, types: Readonly<Record<string, string>>): boolean {
  if (typeof o !== 'object' || o === null) return false;
  const r = o as Record<string, unknown>;
  return Object.entries(types).every(([key, type]) => typeof r[key] === type);
}

function isShellOutput(o: unknown): o is { exit_code: number; stdout: string; stderr: string } {
  return hasFields(o, { exit_code: 'number', stdout: 'string', stderr: 'string' });
}

function isHttpOutput(o: unknown): o is { status: number; body: string; body_truncated?: boolean } {
  return hasFields(o, { status: 'number', body: 'string', headers: 'object' });
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
