// What the commands of `leash` print: tables, JSON shapes and descriptions of runs and plans, and the
// files they read.
import { readFileSync } from 'node:fs';
import { basename, extname } from 'node:path';
import type { ChainedEntry } from '../audit/chain.js';
import type { VerifyReport } from '../audit/verify.js';
import { GuardrailError } from '../errors.js';
import { labelsText } from '../guardrails/labels.js';
import type { Approval, GuardrailStore } from '../store/GuardrailStore.js';
import {
  auditDetails,
  auditResult,
  budgetText,
  gauges,
  outputBlock,
  outputLines,
  safe,
  stepsText,
  table,
  wallOf,
} from './format.js';
import { completedDecisions, type CompletedDecision } from '../executor/state.js';
import {
  clockOf,
  type PlanListRow,
  type PlanStatus,
  type RunOutcome,
  type RunReport,
} from '../runner/runner.js';
import { decideCommand, leashCommand, type CommandStyle } from '../runner/commandLine.js';
import type { SessionRecord } from '../mcp/record.js';
import { EXIT } from './io.js';

/**
 * The configured plans, or the one named (PLAN_NOT_FOUND when it is not one of them); read from the
 * listing, so a plan whose state is damaged is found.
 */
export async function plansOf(store: GuardrailStore, planId: string | undefined): Promise<string[]> {
  const configured = (await store.listPlans()).filter((l) => l.configured).map((l) => l.planId);
  if (planId === undefined) return configured;
  if (!configured.includes(planId))
    throw new GuardrailError('PLAN_NOT_FOUND', `no plan "${planId}" in this store`);
  return [planId];
}

export function exitOf(run: RunReport): number {
  switch (run.outcome.status) {
    case 'completed':
      return EXIT.OK;
    case 'awaiting_confirmation':
      return EXIT.AWAITING;
    default:
      return run.outcome.guard === undefined ? EXIT.FAILED : EXIT.STOPPED;
  }
}

/** The decisions done, as `--json` prints them: each with its whole output. */
export function completedJson(completed: readonly CompletedDecision[]): Record<string, unknown>[] {
  return completed.map((c) => ({
    decision_id: c.decisionId,
    output: c.output,
    cost: c.cost,
    attempts: c.attempts,
  }));
}

/** The decisions done of a plan's saved progress; none when it cannot be read. */
export function completedOf(s: PlanStatus): readonly CompletedDecision[] {
  return s.record === null
    ? []
    : (completedDecisions(s.record.metadata, s.record.file.decisions.length) ?? []);
}

export function runJson(run: RunReport): Record<string, unknown> {
  return {
    status: run.outcome.status,
    outcome: run.outcome,
    completed: completedJson(run.completed),
    ...(run.result.approval ? { approval: run.result.approval } : {}),
  };
}

/** What a run ended with, for a person; `style` starts the commands it suggests and names their store. */
export function describeRun(run: RunReport, style: CommandStyle): string {
  const o = run.outcome;
  const lines = [
    `plan ${safe(run.planId)}: ${o.status.replace('_', ' ')} (${o.completed}/${o.decisions} decisions done)`,
  ];
  if (o.status === 'awaiting_confirmation' && run.result.approval) {
    const a = run.result.approval;
    // Under a rule, only a person proved by a token decides: a typed name would be refused.
    const as = a.rule === undefined ? 'name' : 'token';
    lines.push(
      `  decision "${safe(a.decisionId)}" needs a person's confirmation (${safe(a.operation)}); approval ${safe(a.id)}`,
      `  approve:  ${safe(decideCommand(style, 'approve', a.id, 'looks right', as))}`,
      `  deny:     ${safe(decideCommand(style, 'deny', a.id, 'not now', as))}`,
      `  or open the dashboard: ${safe(leashCommand(style, 'serve'))}`,
    );
  } else if (o.status === 'failed') {
    lines.push(...endLines({ ...o, reason: o.reason ?? '' }));
    if (o.completed > 0)
      lines.push(
        `  the work done before the stop is kept: ${safe(leashCommand(style, 'status', [run.planId]))}`,
      );
  }
  return lines.join('\n');
}

/**
 * Why a run ended, and under it the last error of the tool that failed (its exit code, stderr, HTTP
 * status …): what `run` and `status` print of a failed run.
 */
export function endLines(o: RunOutcome): string[] {
  if (o.reason === undefined) return [];
  const failed = o.code === undefined ? 'failed' : `failed (${safe(o.code)})`;
  const lines = [`  ${o.guard === undefined ? failed : `stopped by ${o.guard}`}: ${safe(o.reason)}`];
  if (o.error === undefined) return lines;
  // A tool's failure names its decision in the reason; a guard's stop does not.
  const which =
    o.guard === undefined || o.decisionId === undefined
      ? ''
      : `last error of decision "${o.decisionId}"${(o.attempts ?? 1) > 1 ? ` (try ${o.attempts})` : ''}: `;
  return [...lines, ...indent(safe(which + o.error), '    ')];
}

/** The lines of `text`, each after `prefix`. */
export function indent(text: string, prefix: string): string[] {
  return text.split(/\r?\n/).map((line) => `${prefix}${line}`.trimEnd());
}

/**
 * A plan's status as `--json` prints it. The decisions done, each with its whole output (an HTTP answer
 * can be a mebibyte), only with `completed`: for `status <plan>`, not for every row of the list.
 */
export function statusJson(
  s: PlanStatus,
  nowMs: number,
  options: { completed?: boolean } = {},
): Record<string, unknown> {
  return {
    plan_id: s.planId,
    phase: s.phase,
    updated_at: s.updatedAt,
    guardrails: s.guardrails?.toJSON() ?? null,
    // As the table shows it: stopped where the plan ended, less the time it waited for a person.
    elapsed_seconds: s.guardrails?.elapsedSeconds(clockOf(s, nowMs)) ?? null,
    outcome: s.record?.outcome ?? null,
    ...(options.completed === true ? { completed: completedJson(completedOf(s)) } : {}),
    source: s.record?.source ?? null,
    pending_approvals: s.pending,
  };
}

export function statusTable(rows: readonly PlanListRow[], nowMs: number): string {
  return table(
    ['PLAN', 'PHASE', 'STEPS', 'BUDGET', 'ELAPSED', 'UPDATED'],
    rows.map((r) => {
      if (!('status' in r)) return [safe(r.planId), `unreadable: ${safe(r.error)}`, '', '', '', ''];
      const s = r.status;
      const g = s.guardrails;
      return [
        safe(s.planId),
        safe(s.phase ?? '—'),
        g === null ? '—' : stepsText(g),
        g === null ? '—' : budgetText(g),
        g === null ? '—' : wallOf(g, clockOf(s, nowMs)),
        s.updatedAt ?? '—',
      ];
    }),
  );
}

/** A plan as `leash status <plan>` shows it; `session` is what an MCP session recorded of itself. */
export function describeStatus(s: PlanStatus, nowMs: number, session: SessionRecord | null = null): string {
  const lines = [`plan ${safe(s.planId)}: ${s.phase ?? 'configured (no run recorded)'}`];
  if (s.record) lines.push(`  from ${safe(s.record.source)}, started ${s.record.startedAt}`);
  if (session) lines.push(`  ${sessionLine(session)}`);
  if (s.guardrails) lines.push(`  ${gauges(s.guardrails, clockOf(s, nowMs))}`);
  const labels = s.guardrails === null ? '' : labelsText(s.guardrails.labels);
  if (labels !== '') lines.push(`  labels ${safe(labels)}`);
  const o = s.record?.outcome;
  if (o) lines.push(`  ${o.completed}/${o.decisions} decisions done`);
  for (const c of completedOf(s)) {
    lines.push(`  ✓ ${safe(c.decisionId)}${c.attempts > 1 ? ` (${c.attempts} tries)` : ''}`);
    lines.push(...outputBlock(outputLines(c.output)));
  }
  if (o) lines.push(...endLines(o));
  for (const a of s.pending) {
    lines.push(
      `  waiting for a person: approval ${safe(a.id)} for decision "${safe(a.decisionId)}" (${safe(a.operation)})`,
    );
  }
  return lines.join('\n');
}

/** When an MCP session started and, once it ended, when and after how many steps. */
function sessionLine(r: SessionRecord): string {
  const started = `MCP session, started ${safe(r.startedAt)}`;
  if (r.endedAt === null) return started;
  const steps = r.steps === null ? '' : ` after ${r.steps} step${r.steps === 1 ? '' : 's'}`;
  return `${started}, ended ${safe(r.endedAt)}${steps}`;
}

export function entryJson(e: ChainedEntry): Record<string, unknown> {
  return { seq: e.seq, prev: e.prev, hash: e.hash, ...e.entry };
}

export function auditTable(log: readonly ChainedEntry[], header: boolean): string {
  // Every cell comes from the database, which may have been written by anyone: none reaches the
  // terminal unescaped.
  const rows = log.map((e) =>
    [
      String(e.seq),
      String(e.entry.timestamp),
      String(e.entry.event_type),
      String(e.entry.guard_name),
      auditResult(e.entry),
      auditDetails(e.entry.event_type, e.entry.details),
    ].map(safe),
  );
  const text = table(['SEQ', 'TIME', 'EVENT', 'GUARD', 'RESULT', 'DETAILS'], rows);
  return header ? text : text.split('\n').slice(1).join('\n');
}

/** What `leash verify` says of one plan: its report, or why it could not be verified. */
export type PlanVerification =
  | VerifyReport
  | { readonly planId: string; readonly ok: false; readonly error: { code: string; message: string } };

export function verifyTable(reports: readonly PlanVerification[]): string {
  const rows = reports.map((r) =>
    'error' in r
      ? [safe(r.planId), '-', '-', 'not verified']
      : [
          safe(r.planId),
          String(r.size),
          r.head.slice(0, 16),
          (r.ok
            ? 'ok'
            : `${r.findings.length + r.omittedFindings} problem(s): ${r.findings.map((f) => f.code).join(', ')}`) +
            (r.prunedThrough > 0 ? ` (pruned through seq ${r.prunedThrough})` : ''),
        ],
  );
  const findings = reports.flatMap((r) =>
    'error' in r
      ? [`  ${safe(r.planId)}: ${r.error.code} ${safe(r.error.message)}`]
      : r.findings.map(
          (f) =>
            `  ${safe(r.planId)}${f.seq === undefined ? '' : ` #${f.seq}`}: ${f.code} ${safe(f.message)}`,
        ),
  );
  return [table(['PLAN', 'ENTRIES', 'HEAD', 'CHAIN'], rows), ...findings].join('\n');
}

/** The requests as a table, each followed by the tool it is for and a preview of its input, when known. */
export function approvalsTable(list: readonly Approval[]): string {
  const [header = '', ...rows] = table(
    ['ID', 'PLAN', 'DECISION', 'OPERATION', 'STATUS', 'REQUESTED', 'BY', 'REASON'],
    list.map((a) => [
      safe(a.id),
      safe(a.planId),
      safe(a.decisionId),
      safe(a.operation),
      a.status,
      a.requestedAt,
      safe(a.decidedBy ?? ''),
      safe((a.reason ?? '').replace(/\s+/g, ' ')),
    ]),
  ).split('\n');
  return [header, ...rows.flatMap((row, i) => [row, ...askedFor(list[i] as Approval)])].join('\n');
}

/** The line under a request that names its tool and previews its input; none when it has neither. */
export function askedFor(a: Approval): string[] {
  const parts = [
    ...(a.toolName === undefined ? [] : [`tool ${safe(a.toolName)}`]),
    ...(a.inputPreview === undefined ? [] : [`input ${safe(a.inputPreview)}`]),
  ];
  return parts.length === 0 ? [] : [`  ${parts.join(' · ')}`];
}

export function readFileText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const why =
      (error as { code?: string }).code === 'ENOENT' ? 'no such file' : String((error as Error).message);
    throw new GuardrailError('USAGE', `cannot read the ${what} ${path}: ${why}`, { cause: error });
  }
}

export function formatOf(path: string): 'json' | 'yaml' {
  return extname(path).toLowerCase() === '.json' ? 'json' : 'yaml';
}

/** The plan's default id: the file name without its plan and format extensions. */
export function planName(path: string): string {
  return basename(path).replace(/(\.plan)?\.(ya?ml|json)$/i, '') || 'plan';
}

/** Waits `ms`, or less when `signal` aborts; leaves no listener behind either way. */
export function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((done) => {
    const end = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', end);
      done();
    };
    const timer = setTimeout(end, ms);
    signal?.addEventListener('abort', end, { once: true });
  });
}

export { packageVersion } from '../version.js';
