import { systemClock, type Clock } from '../clock.js';
import {
  errorTail,
  errorText,
  GuardrailError,
  GuardrailValidationError,
  isGuardrailError,
} from '../errors.js';
import type { Plan } from '../executor/Plan.js';
import { PlanExecutor, type ExecutionResult, type ExecutorEvents } from '../executor/PlanExecutor.js';
import { stateFromMetadata, type CompletedDecision } from '../executor/state.js';
import type { AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';
import { formatIso, parseIsoMs } from '../iso.js';
import type { JsonObject } from '../json.js';
import {
  approvalTtlMs,
  policyToGuardrailsInit,
  strictestGuardrails,
  toolRules,
  validatePolicy,
} from '../policy/policy.js';
import type { Policy } from '../policy/schema.js';
import { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import { validDecision, type Decision as ApprovalDecision } from '../service/approvals.js';
import type { Approval, GuardrailStore, PlanDocument } from '../store/GuardrailStore.js';
import { planFileGuardrails, planFileToPlan, validatePlanFile, type PlanFile } from './planFile.js';
import { builtinTools, type BuiltinToolOptions } from './tools/index.js';

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

/** A run's result: the outcome, the executor's result and the plan as saved. */
export interface RunReport {
  readonly planId: string;
  readonly outcome: RunOutcome;
  readonly result: ExecutionResult;
  readonly completed: readonly CompletedDecision[];
}

/**
 * Who continues a plan once a person decided its confirmation: the runner, for a plan it started, or the
 * application that asked (an agent guarded by a `RunGuard`, or any other user of the service).
 */
export type ResumedBy = 'runner' | 'application';

/** What {@link PlanRunner.approve} and {@link PlanRunner.deny} did. */
export interface DecisionReport {
  readonly approval: Approval;
  /** The run resumed after the decision: only for a plan the runner started, and asked to resume. */
  readonly run: RunReport | null;
  readonly resumedBy: ResumedBy;
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

export interface PlanRunnerOptions {
  readonly store: GuardrailStore;
  readonly clock?: Clock;
  /** Options of the built-in tools (environment, fetch, sleep): injected by tests. */
  readonly tools?: Omit<BuiltinToolOptions, 'baseDir'>;
  /** Interrupts runs when it aborts (Ctrl-C): the run ends as failed, its work kept and saved. */
  readonly signal?: AbortSignal;
  /** Called with every executor event of every run. */
  readonly onEvent?: <K extends keyof ExecutorEvents>(event: K, payload: ExecutorEvents[K]) => void;
}

const RECORD_FORMAT = 'leash.run';
const RECORD_VERSION = 1;
const EVENTS: readonly (keyof ExecutorEvents)[] = [
  'started',
  'decision',
  'violation',
  'awaiting_confirmation',
  'completed',
];

/**
 * Runs plan files against a store and keeps each plan's document there, so that any process sharing the
 * store (the `leash` command, the dashboard, another machine on the same PostgreSQL) can show it, approve
 * its paused step and resume it. A resume claims the plan with a conditional save first: of two processes
 * resuming one paused plan, one runs it and the other is told it was claimed.
 */
export class PlanRunner {
  readonly store: GuardrailStore;
  readonly service: AutonomyGuardrailService;
  readonly #clock: Clock;
  readonly #toolOptions: Omit<BuiltinToolOptions, 'baseDir'>;
  readonly #onEvent: PlanRunnerOptions['onEvent'];
  readonly #signal: AbortSignal | undefined;

  constructor(options: PlanRunnerOptions) {
    this.store = options.store;
    this.#clock = options.clock ?? systemClock;
    this.service = new AutonomyGuardrailService({ store: this.store, clock: this.#clock });
    this.#toolOptions = options.tools ?? {};
    this.#onEvent = options.onEvent;
    this.#signal = options.signal;
  }

  /**
   * Starts a plan file under a new plan id: `id` when given (refused when taken), else the file's id or
   * name, numbered `-2`, `-3`… when a plan of that name exists already.
   */
  async start(input: {
    file: PlanFile;
    source: string;
    baseDir: string;
    name: string;
    id?: string;
    policy?: Policy | null;
  }): Promise<RunReport> {
    const file = validatePlanFile(input.file, { source: input.source });
    const policy = input.policy === undefined || input.policy === null ? null : validatePolicy(input.policy);
    const startedAt = formatIso(this.#clock.now());
    const record: RunRecord = {
      source: input.source,
      baseDir: input.baseDir,
      file,
      policy,
      metadata: {},
      outcome: null,
      startedAt,
    };
    // Checked before an id is claimed, so a bad plan leaves nothing behind.
    const probe = planFileToPlan(file, 'probe');
    this.#executor(record).validate(probe);
    const planId = await this.#claimId(input.id ?? file.id ?? input.name, input.id !== undefined, record);
    // A policy binds the plan file: each limit is the stricter of the two, so neither can loosen the other.
    const guardrails =
      policy === null
        ? planFileGuardrails(file)
        : strictestGuardrails(planFileGuardrails(file), policyToGuardrailsInit(policy));
    try {
      await this.service.configureGuardrails(planId, guardrails);
    } catch (error) {
      await this.#saveFailed(planId, record, errorText(error));
      throw error;
    }
    return this.#run(planId, planFileToPlan(file, planId), record);
  }

  /** Continues a plan awaiting confirmation, after a person approved (or denied) its step. */
  async resume(planId: string): Promise<RunReport> {
    const doc = await this.store.getPlanDocument(planId);
    if (doc === null) throw new GuardrailError('PLAN_NOT_FOUND', `no plan "${planId}" in this store`);
    if (doc.phase !== 'awaiting_confirmation') {
      throw new GuardrailError(
        'PLAN_NOT_PAUSED',
        `plan "${planId}" is ${doc.phase}, not awaiting confirmation: there is nothing to resume`,
      );
    }
    const record = readRecord(doc);
    const claimed = { ...record, outcome: null };
    try {
      await this.store.savePlanDocument(
        { planId, phase: 'execute', body: recordToJson(claimed), updatedAt: formatIso(this.#clock.now()) },
        { expectedRevision: doc.revision },
      );
    } catch (error) {
      if (isGuardrailError(error) && error.code === 'PLAN_DOCUMENT_CONFLICT') {
        throw new GuardrailError('PLAN_CLAIMED', `plan "${planId}" was resumed by another process just now`, {
          cause: error,
        });
      }
      throw error;
    }
    const plan: Plan = {
      ...planFileToPlan(record.file, planId),
      phase: 'awaiting_confirmation',
      metadata: record.metadata,
    };
    return this.#run(planId, plan, claimed);
  }

  /**
   * A person approves a pending confirmation; with `resume`, a paused plan the runner started then
   * continues. Any other plan is left to the application that asked, which resumes its run itself.
   */
  async approve(
    approvalId: string,
    decision: ApprovalDecision,
    options: { resume?: boolean } = {},
  ): Promise<DecisionReport> {
    return this.#afterDecision(await this.service.approve(approvalId, decision), options.resume === true);
  }

  /**
   * A person denies a pending confirmation; with `resume`, a paused plan the runner started then ends
   * (failed). Any other plan is left to the application that asked.
   */
  async deny(
    approvalId: string,
    decision: ApprovalDecision,
    options: { resume?: boolean } = {},
  ): Promise<DecisionReport> {
    return this.#afterDecision(await this.service.deny(approvalId, decision), options.resume === true);
  }

  /** Who continues the plan of a decided approval, and the run resumed when that is the runner. */
  async #afterDecision(approval: Approval, resume: boolean): Promise<DecisionReport> {
    const doc = await this.store.getPlanDocument(approval.planId);
    if (doc === null || !startedByRunner(doc)) return { approval, run: null, resumedBy: 'application' };
    const run = resume ? await this.resumeIfPaused(approval.planId) : null;
    return { approval, run, resumedBy: 'runner' };
  }

  /** One plan as the store has it, or null when the store knows no such plan. */
  async status(planId: string): Promise<PlanStatus | null> {
    const [doc, guardrails, pending] = await Promise.all([
      this.store.getPlanDocument(planId),
      this.service.getGuardrails(planId),
      this.service.listApprovals({ planId, status: 'pending' }),
    ]);
    if (doc === null && guardrails === null) return null;
    return {
      planId,
      phase: doc?.phase ?? null,
      updatedAt: doc?.updatedAt ?? null,
      guardrails,
      record: doc === null ? null : runRecordOf(doc),
      pending,
    };
  }

  /**
   * Every plan the store knows, most recently saved first. A plan whose document cannot be read is listed
   * with the reason rather than hiding the others.
   */
  async list(): Promise<PlanListRow[]> {
    const listed = await this.store.listPlans();
    const rows = await Promise.all(
      listed.map(async (l): Promise<PlanListRow | null> => {
        try {
          const status = await this.status(l.planId);
          return status === null ? null : { status };
        } catch (error) {
          return { planId: l.planId, error: errorText(error) };
        }
      }),
    );
    const updated = (r: PlanListRow) => ('status' in r ? (r.status.updatedAt ?? '') : '');
    const id = (r: PlanListRow) => ('status' in r ? r.status.planId : r.planId);
    return rows
      .filter((r): r is PlanListRow => r !== null)
      .sort((a, b) => updated(b).localeCompare(updated(a)) || id(a).localeCompare(id(b)));
  }

  /**
   * Resumes the plan when it is awaiting confirmation; null when it is not (it runs, ended, or is not a
   * runner's plan) or another process claimed it first.
   */
  async resumeIfPaused(planId: string): Promise<RunReport | null> {
    const doc = await this.store.getPlanDocument(planId);
    if (doc?.phase !== 'awaiting_confirmation') return null;
    try {
      return await this.resume(planId);
    } catch (error) {
      if (isGuardrailError(error) && error.code === 'PLAN_CLAIMED') return null;
      throw error;
    }
  }

  /**
   * Ends a plan left in phase `execute` by a process that died (killed, or the machine lost): marks it
   * failed, keeping its progress, so it no longer shows as running. Refused for a plan in another phase.
   */
  async abandon(planId: string, by: string): Promise<PlanStatus> {
    const who = validDecision({ by }, false).by;
    const why = `abandoned by ${who}: its process was gone`;
    const doc = await this.store.getPlanDocument(planId);
    if (doc === null) throw new GuardrailError('PLAN_NOT_FOUND', `no plan "${planId}" in this store`);
    if (doc.phase !== 'execute') {
      throw new GuardrailError(
        'PLAN_NOT_RUNNING',
        `plan "${planId}" is ${doc.phase}, not execute: nothing to abandon`,
      );
    }
    const record = readRecord(doc);
    const outcome = failedOutcome(record, why);
    try {
      await this.store.savePlanDocument(
        {
          planId,
          phase: 'failed',
          body: recordToJson({ ...record, outcome }),
          updatedAt: formatIso(this.#clock.now()),
        },
        { expectedRevision: doc.revision },
      );
    } catch (error) {
      if (isGuardrailError(error) && error.code === 'PLAN_DOCUMENT_CONFLICT') {
        throw new GuardrailError(
          'PLAN_CLAIMED',
          `plan "${planId}" changed just now: look again before abandoning it`,
          {
            cause: error,
          },
        );
      }
      throw error;
    }
    return (await this.status(planId)) as PlanStatus;
  }

  /** Saves the new plan's document under the first free id, atomically. */
  async #claimId(wanted: string, exact: boolean, record: RunRecord): Promise<string> {
    const body = recordToJson(record);
    for (let n = 1; n <= 1000; n++) {
      const planId = n === 1 ? wanted : `${wanted}-${n}`;
      const free = (await this.service.getGuardrails(planId)) === null;
      if (free) {
        try {
          await this.store.savePlanDocument(
            { planId, phase: 'execute', body, updatedAt: record.startedAt },
            { expectedRevision: null },
          );
          return planId;
        } catch (error) {
          if (!isGuardrailError(error) || error.code !== 'PLAN_DOCUMENT_CONFLICT') throw error;
        }
      }
      if (exact) {
        throw new GuardrailValidationError(
          'id',
          `plan id "${planId}" is taken in this store: choose another`,
        );
      }
    }
    throw new GuardrailValidationError('id', `plan ids "${wanted}" to "${wanted}-1000" are all taken`);
  }

  async #run(planId: string, plan: Plan, record: RunRecord): Promise<RunReport> {
    const executor = this.#executor(record);
    const options = this.#signal === undefined ? {} : { signal: this.#signal };
    let result: ExecutionResult;
    try {
      result =
        plan.phase === 'execute'
          ? await executor.execute(plan, options)
          : await executor.resume(plan, options);
    } catch (error) {
      // The plan must not stay `execute` for ever: record why it ended, then report the error.
      await this.#saveFailed(planId, { ...record, metadata: plan.metadata }, errorText(error));
      throw error;
    }
    const outcome = outcomeOf(result, plan.decisions.length);
    await this.#save(planId, plan.phase, { ...record, metadata: plan.metadata, outcome });
    const report: RunReport = { planId, outcome, result, completed: result.completed };
    // A person may have decided between the request and the save above, when nothing could resume the
    // plan yet: resume it now (the claim keeps a concurrent resume from running it twice).
    if (result.status === 'awaiting_confirmation' && result.approval) {
      const approval = await this.service.getApproval(result.approval.id);
      if (approval !== null && approval.status !== 'pending')
        return (await this.resumeIfPaused(planId)) ?? report;
    }
    return report;
  }

  /** Saves the plan as failed for `reason`, as far as the store lets it: the caller reports the error. */
  async #saveFailed(planId: string, record: RunRecord, reason: string): Promise<void> {
    await this.#save(planId, 'failed', { ...record, outcome: failedOutcome(record, reason) }).catch(
      () => undefined,
    );
  }

  #save(planId: string, phase: string, record: RunRecord): Promise<PlanDocument> {
    return this.store.savePlanDocument({
      planId,
      phase,
      body: recordToJson(record),
      updatedAt: formatIso(this.#clock.now()),
    });
  }

  #executor(record: RunRecord): PlanExecutor {
    const tools = builtinTools(record.file.tools, { ...this.#toolOptions, baseDir: record.baseDir });
    const executor = new PlanExecutor({
      service: this.service,
      tools,
      ...(record.policy === null
        ? {}
        : { toolRules: toolRules(record.policy), approvalTtlMs: approvalTtlMs(record.policy) }),
    });
    const onEvent = this.#onEvent;
    if (onEvent) for (const e of EVENTS) executor.on(e, (payload) => onEvent(e, payload as never));
    return executor;
  }
}

/** The time a plan's wall clock stands at: `now` while it runs or waits, its last save once it ended. */
export function clockOf(s: Pick<PlanStatus, 'phase' | 'updatedAt'>, now: number): number {
  if (s.phase === 'completed' || s.phase === 'failed' || s.phase === 'cancelled') {
    const saved = s.updatedAt === null ? NaN : parseIsoMs(s.updatedAt);
    if (!Number.isNaN(saved)) return Math.min(saved, now);
  }
  return now;
}

/** A failed outcome for `reason`, counting the work the executor's progress in `record` says was done. */
function failedOutcome(record: RunRecord, reason: string): RunOutcome {
  return { status: 'failed', reason, completed: doneSoFar(record), decisions: record.file.decisions.length };
}

/** Decisions done according to the executor's progress in the record's metadata; 0 when unreadable. */
function doneSoFar(record: RunRecord): number {
  try {
    return stateFromMetadata(record.metadata, record.file.decisions.length).next;
  } catch {
    return 0;
  }
}

function outcomeOf(result: ExecutionResult, decisions: number): RunOutcome {
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

function recordToJson(r: RunRecord): JsonObject {
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
function runRecordOf(doc: PlanDocument): RunRecord | null {
  try {
    return readRecord(doc);
  } catch (error) {
    if (isGuardrailError(error) && error.code === 'PLAN_NOT_RUNNABLE') return null;
    throw error;
  }
}

/** Whether a runner saved the document, of this version of leash or another. */
function startedByRunner(doc: PlanDocument): boolean {
  return doc.body['format'] === RECORD_FORMAT;
}

/** A run record read back from the store: checked like any input, since another writer may have saved it. */
function readRecord(doc: PlanDocument): RunRecord {
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
