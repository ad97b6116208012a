// What the `leash` command prints for people: plain tables and short numbers. Scripts use --json.
import type { AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';
import { duration, money, usedOf } from '../runner/format.js';

// Shared with the dashboard, which shows the same lines.
export { auditDetails, auditResult, duration, money, outputLines } from '../runner/format.js';

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
