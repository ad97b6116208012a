import type { CaseResult } from './harness.js';

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

function fixed(value: number, digits: number): string {
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function nsPerOp(ns: number): string {
  return ns >= 1e6 ? `${fixed(ns / 1e6, 2)} ms` : ns >= 1e4 ? integer.format(ns) : fixed(ns, 1);
}

const HEADER = ['Task', 'ops/s', 'mean ns/op', '± %', 'samples'] as const;

function rows(results: readonly CaseResult[]): string[][] {
  return results.map((r) => [
    r.name,
    integer.format(r.opsPerSec),
    nsPerOp(r.meanNs),
    `±${fixed(r.rmePercent, 2)}%`,
    integer.format(r.samples),
  ]);
}

function aligned(header: readonly string[], body: readonly string[][], leftColumns: number): string {
  const all = [header, ...body];
  const widths = header.map((_, c) => Math.max(...all.map((row) => (row[c] ?? '').length)));
  const line = (row: readonly string[]): string =>
    row
      .map((cell, c) => (c < leftColumns ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0)))
      .join('  ');
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(header), rule, ...body.map(line)].join('\n');
}

function markdown(header: readonly string[], body: readonly string[][], leftColumns: number): string {
  const line = (row: readonly string[]): string =>
    `| ${row.map((cell) => cell.replaceAll('|', '\\|')).join(' | ')} |`;
  const rule = `|${header.map((_, c) => (c < leftColumns ? ' --- ' : ' ---: ')).join('|')}|`;
  return [line(header), rule, ...body.map(line)].join('\n');
}

export function resultTable(results: readonly CaseResult[]): string {
  return aligned(HEADER, rows(results), 1);
}

export function resultMarkdown(results: readonly CaseResult[]): string {
  return markdown(HEADER, rows(results), 1);
}

/** A ratio the project aims for, and whether this run met it. */
export interface Target {
  readonly label: string;
  readonly value: number;
  /** Relative uncertainty of `value` in percent (the two margins combined). */
  readonly rmePercent: number;
  readonly goal: string;
  /** Undefined for a ratio printed for information only. */
  readonly pass: boolean | undefined;
  /** How `value` is printed: a ratio (the default) or nanoseconds. */
  readonly unit?: 'x' | 'ns';
}

/** `a / b` of ops/s, with its margins combined in quadrature. */
export function throughputTarget(label: string, a: CaseResult, b: CaseResult, atLeast: number): Target {
  const value = a.opsPerSec / b.opsPerSec;
  return {
    label,
    value,
    rmePercent: Math.hypot(a.rmePercent, b.rmePercent),
    goal: `≥ ${fixed(atLeast, 1)}`,
    pass: value >= atLeast,
  };
}

/** `a / b` of ns/op, with its margins combined in quadrature; no `atMost` means information only. */
export function latencyTarget(label: string, a: CaseResult, b: CaseResult, atMost?: number): Target {
  const value = a.meanNs / b.meanNs;
  return {
    label,
    value,
    rmePercent: Math.hypot(a.rmePercent, b.rmePercent),
    goal: atMost === undefined ? 'none' : `≤ ${fixed(atMost, Number.isInteger(atMost * 10) ? 1 : 2)}`,
    pass: atMost === undefined ? undefined : value <= atMost,
  };
}

/**
 * A difference measured round by round (see runGroup): `diffNs` per item in ns, its margin relative to
 * it. No `atMostNs` means information only.
 */
export function differenceTarget(
  label: string,
  diff: { readonly diffNs: number; readonly marginNs: number },
  atMostNs?: number,
): Target {
  return {
    label,
    value: diff.diffNs,
    rmePercent: diff.diffNs === 0 ? 0 : (100 * diff.marginNs) / Math.abs(diff.diffNs),
    goal: atMostNs === undefined ? 'none' : `≤ ${atMostNs.toLocaleString('en-US')} ns`,
    pass: atMostNs === undefined ? undefined : diff.diffNs <= atMostNs,
    unit: 'ns',
  };
}

/**
 * A difference read at its median (see runGroup), for {@link differenceTarget}: on a shared machine the mean
 * of a few hundred rounds of a step is swayed by a handful of pauses. The margin is still the mean's.
 */
export function medianOf(diff: { readonly medianNs: number; readonly marginNs: number }): {
  readonly diffNs: number;
  readonly marginNs: number;
} {
  return { diffNs: diff.medianNs, marginNs: diff.marginNs };
}

/** (base + diff) / base, the difference measured round by round (see runGroup), its margin relative. */
export function differenceRatioTarget(
  label: string,
  base: CaseResult,
  diff: { readonly diffNs: number; readonly marginNs: number },
  atMost: number,
): Target {
  const value = (base.meanNs + diff.diffNs) / base.meanNs;
  return {
    label,
    value,
    rmePercent: (100 * diff.marginNs) / (base.meanNs + diff.diffNs),
    goal: `≤ ${fixed(atMost, Number.isInteger(atMost * 10) ? 1 : 2)}`,
    pass: value <= atMost,
  };
}

const TARGET_HEADER = ['Ratio', 'value', 'target', 'result'] as const;

function targetRows(targets: readonly Target[]): string[][] {
  return targets.map((t) => [
    t.label,
    t.unit === 'ns'
      ? `${Math.round(t.value).toLocaleString('en-US')} ns ±${fixed(t.rmePercent, 1)}%`
      : `${fixed(t.value, 2)}x ±${fixed(t.rmePercent, 1)}%`,
    t.goal,
    t.pass === undefined ? 'info' : t.pass ? 'PASS' : 'FAIL',
  ]);
}

export function targetTable(targets: readonly Target[]): string {
  return aligned(TARGET_HEADER, targetRows(targets), 1);
}

export function targetMarkdown(targets: readonly Target[]): string {
  return markdown(TARGET_HEADER, targetRows(targets), 1);
}
