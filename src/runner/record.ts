import { parseIsoMs } from '../iso.js';
import type { AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';
import type { Approval } from '../store/GuardrailStore.js';
import { errorTail, GuardrailError, isGuardrailError } from '../errors.js';
import { type ExecutionResult } from '../executor/PlanExecutor.js';
import { stateFromMetadata } from '../executor/state.js';
import type { JsonObject } from '../json.js';
import { validatePolicy } from '../policy/policy.js';
import type { Policy } from '../policy/schema.js';
import type { PlanDocument } from '../store/GuardrailStore.js';
import { validatePlanFile, type PlanFile } from './planFile.js';

// The run record: what the runner keeps of a plan in its document, and how a run ended, in words.

/** What the runner keeps of a plan in the store's plan document, besides its phase. */
export interface RunRecord {
  /** Where the plan file was read from. */
  readonly source: string;
  /** The folder shell commands run in, unless a decision says otherwise: the plan file's. */
  readonly baseDir: string;
  readonly file: PlanFile;
  /** The policy the run was started with, or null when the plan file's own guardrails apply. */
  readonly policy: Policy | null;
  /** The executor's plan metadata: its progress and a snapshot of the guardrails. */
  readonly metadata: Record<string, unknown>;
  /** How the last run ended, or null while it runs. */
  readonly outcome: RunOutcome | null;
  readonly startedAt: string;
}

/** How a run ended, in words a person and a script can both read. */
export interface RunOutcome {
  readonly status: 'completed' | 'failed' | 'awaiting_confirmation';
  /** The guard that ended the run. */
  readonly guard?: string;
  /** Why it ended, when it did not complete. */
  readonly reason?: string;
  /** The code of the leash error that ended it, such as `STORE_UNAVAILABLE` for a store it lost. */
  readonly code?: string;
  /** The confirmation to give, when it waits for one. */
  readonly approvalId?: string;
  /** The decision whose tool failed last, when the run ended after a tool failed. */
  readonly decisionId?: string;
  /** Its tries, the failed ones included. */
  readonly attempts?: number;
  /** The tool's last error: its last 20 lines, at most 4 KiB (an exit code, stderr, an HTTP status). */
  readonly error?: string;
  readonly completed: number;
  readonly decisions: number;
}

export const RECORD_FORMAT = 'leash.run';
export const RECORD_VERSION = 1;

/** A failed outcome for `reason`, counting the work the executor's progress in `record` says was done. */
export function failedOutcome(record: RunRecord, reason: string): RunOutcome {
  return { status: 'failed', reason, completed: doneSoFar(record), decisions: record.file.decisions.length };
}

/** Decisions done according to the executor's progress in the record's metadata; 0 when unreadable. */
export function doneSoFar(record: RunRecord): number {
  try {
    return stateFromMetadata(record.metadata, record.file.decisions.length).next;
  } catch {
    return 0;
  }
}

export function outcomeOf(result: ExecutionResult, decisions: number): RunOutcome {
  const base = { status: result.status, completed: result.completed.length, decisions };
  if (result.status === 'awaiting_confirmation') {
    return { ...base, ...(result.approval ? { approvalId: result.approval.id } : {}) };
  }
  const f = result.failure;
  const failure = f === undefined ? {} : { decisionId: f.decisionId, attempts: f.attempts, error: f.error };
  if (result.violation) {
    const { guardName, reason } = result.violation.check;
    return { ...base, guard: guardName, reason, ...failure };
  }
  if (result.status !== 'failed') return base;
  // A tool that failed for good (leash's own errors are the store's, an interruption's): the reason
  // names the decision, the error says what went wrong.
  if (f !== undefined && !isGuardrailError(result.error)) {
    const tries = f.attempts === 1 ? '' : ` after ${f.attempts} tries`;
    return { ...base, reason: `decision "${f.decisionId}" failed${tries}`, ...failure };
  }
  const code = isGuardrailError(result.error) ? { code: result.error.code } : {};
  return { ...base, reason: errorTail(result.error), ...code, ...failure };
}

export function recordToJson(r: RunRecord): JsonObject {
  return JSON.parse(
    JSON.stringify({
      format: RECORD_FORMAT,
      version: RECORD_VERSION,
      source: r.source,
      base_dir: r.baseDir,
      file: r.file,
      policy: r.policy,
      metadata: r.metadata,
      outcome: r.outcome,
      started_at: r.startedAt,
    }),
  ) as JsonObject;
}

/** The run record of a document, or null for a document some other program saved (not a run record). */
export function runRecordOf(doc: PlanDocument): RunRecord | null {
  try {
    return readRecord(doc);
  } catch (error) {
    if (isGuardrailError(error) && error.code === 'PLAN_NOT_RUNNABLE') return null;
    throw error;
  }
}

/** Whether a runner saved the document, of this version of leash or another. */
export function startedByRunner(doc: PlanDocument): boolean {
  return doc.body['format'] === RECORD_FORMAT;
}

/** A run record read back from the store: checked like any input, since another writer may have saved it. */
export function readRecord(doc: PlanDocument): RunRecord {
  const b = doc.body;
  if (!startedByRunner(doc) || b['version'] !== RECORD_VERSION) {
    throw new GuardrailError(
      'PLAN_NOT_RUNNABLE',
      `plan "${doc.planId}" was not started by the leash runner (its document is not a ${RECORD_FORMAT} v${RECORD_VERSION} record)`,
    );
  }
  const source = String(b['source']);
  const file = validatePlanFile(b['file'], { source });
  const policy = b['policy'] === null ? null : validatePolicy(b['policy'], { source: `${source} policy` });
  const metadata = b['metadata'];
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
    throw new GuardrailError('STORE_CORRUPT', `plan "${doc.planId}" has no metadata object in its document`);
  }
  return {
    source,
    baseDir: String(b['base_dir']),
    file,
    policy,
    metadata: metadata as Record<string, unknown>,
    outcome: (b['outcome'] ?? null) as RunOutcome | null,
    startedAt: String(b['started_at']),
  };
}

/** One row of {@link PlanRunner.list}: a plan's status, or why it cannot be read. */
export type PlanListRow =
  { readonly status: PlanStatus } | { readonly planId: string; readonly error: string };

/** What `status` shows of one plan. */
export interface PlanStatus {
  readonly planId: string;
  readonly phase: string | null;
  readonly updatedAt: string | null;
  readonly guardrails: AutonomyGuardrails | null;
  readonly record: RunRecord | null;
  readonly pending: readonly Approval[];
}

/** The time a plan's wall clock stands at: `now` while it runs or waits, its last save once it ended. */
export function clockOf(s: Pick<PlanStatus, 'phase' | 'updatedAt'>, now: number): number {
  if (s.phase === 'completed' || s.phase === 'failed' || s.phase === 'cancelled') {
    const saved = s.updatedAt === null ? NaN : parseIsoMs(s.updatedAt);
    if (!Number.isNaN(saved)) return Math.min(saved, now);
  }
  return now;
}
