import { systemClock, type Clock } from '../clock.js';
import { GuardrailError, GuardrailValidationError, isGuardrailError } from '../errors.js';
import type { Plan } from '../executor/Plan.js';
import { PlanExecutor, type ExecutionResult, type ExecutorEvents } from '../executor/PlanExecutor.js';
import type { CompletedDecision } from '../executor/state.js';
import type { AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';
import { formatIso, parseIsoMs } from '../iso.js';
import type { JsonObject } from '../json.js';
import { approvalTtlMs, policyToGuardrailsInit, toolRules, validatePolicy } from '../policy/policy.js';
import type { Policy } from '../policy/schema.js';
import { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import type { Decision as ApprovalDecision } from '../service/approvals.js';
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
  /** The confirmation to give, when it waits for one. */
  readonly approvalId?: string;
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
  /** Called with every executor event of every run. */
  readonly onEvent?: <K extends keyof ExecutorEvents>(event: K, payload: ExecutorEvents[K]) => void;
}

const RECORD_FORMAT = 'leash.run';
const RECORD_VERSION = 1;
const EVENTS: readonly (keyof ExecutorEvents)[] = [
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

  constructor(options: PlanRunnerOptions) {
    this.store = options.store;
    this.#clock = options.clock ?? systemClock;
    this.service = new AutonomyGuardrailService({ store: this.store, clock: this.#clock });
    this.#toolOptions = options.tools ?? {};
    this.#onEvent = options.onEvent;
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
    const guardrails = policy === null ? planFileGuardrails(file) : policyToGuardrailsInit(policy);
    await this.service.configureGuardrails(planId, guardrails);
    const plan = planFileToPlan(file, planId);
    return this.#run(planId, plan, record);
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

  /** A person approves a pending confirmation; with `resume`, the paused plan then continues. */
  async approve(
    approvalId: string,
    decision: ApprovalDecision,
    options: { resume?: boolean } = {},
  ): Promise<{ approval: Approval; run: RunReport | null }> {
    const approval = await this.service.approve(approvalId, decision);
    const run = options.resume ? await this.#resumeIfPaused(approval) : null;
    return { approval, run };
  }

  /** A person denies a pending confirmation; with `resume`, the paused plan then ends (failed). */
  async deny(
    approvalId: string,
    decision: ApprovalDecision,
    options: { resume?: boolean } = {},
  ): Promise<{ approval: Approval; run: RunReport | null }> {
    const approval = await this.service.deny(approvalId, decision);
    const run = options.resume ? await this.#resumeIfPaused(approval) : null;
    return { approval, run };
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

  /** Every plan the store knows, most recently saved first. */
  async list(): Promise<PlanStatus[]> {
    const listed = await this.store.listPlans();
    const all = await Promise.all(listed.map((l) => this.status(l.planId)));
    return all
      .filter((s): s is PlanStatus => s !== null)
      .sort(
        (a, b) => (b.updatedAt ?? '').localeCompare(a.updatedAt ?? '') || a.planId.localeCompare(b.planId),
      );
  }

  async #resumeIfPaused(approval: Approval): Promise<RunReport | null> {
    const doc = await this.store.getPlanDocument(approval.planId);
    if (doc?.phase !== 'awaiting_confirmation') return null;
    return this.resume(approval.planId);
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
    const result = plan.phase === 'execute' ? await executor.execute(plan) : await executor.resume(plan);
    const outcome = outcomeOf(result, plan.decisions.length);
    const ended: RunRecord = { ...record, metadata: plan.metadata, outcome };
    await this.store.savePlanDocument({
      planId,
      phase: plan.phase,
      body: recordToJson(ended),
      updatedAt: formatIso(this.#clock.now()),
    });
    return { planId, outcome, result, completed: result.completed };
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

function outcomeOf(result: ExecutionResult, decisions: number): RunOutcome {
  const base = { status: result.status, completed: result.completed.length, decisions };
  if (result.status === 'awaiting_confirmation') {
    return { ...base, ...(result.approval ? { approvalId: result.approval.id } : {}) };
  }
  if (result.violation) {
    return { ...base, guard: result.violation.check.guardName, reason: result.violation.check.reason };
  }
  if (result.status === 'failed') return { ...base, reason: messageOf(result.error) };
  return base;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
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

/** A run record read back from the store: checked like any input, since another writer may have saved it. */
function readRecord(doc: PlanDocument): RunRecord {
  const b = doc.body;
  if (b['format'] !== RECORD_FORMAT || b['version'] !== RECORD_VERSION) {
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
