import { systemClock, type Clock } from '../clock.js';
import { errorText, GuardrailError, GuardrailValidationError, isGuardrailError } from '../errors.js';
import type { Plan } from '../executor/Plan.js';
import { PlanExecutor, type ExecutionResult, type ExecutorEvents } from '../executor/PlanExecutor.js';
import { type CompletedDecision } from '../executor/state.js';
import { EXECUTOR_EVENTS } from '../executor/listeners.js';
import { validateLabels } from '../guardrails/labels.js';
import { formatIso } from '../iso.js';
import {
  approvalTtlMs,
  policyToGuardrailsInit,
  strictestGuardrails,
  toolRules,
  validatePolicy,
} from '../policy/policy.js';
import { policyServiceOptions } from '../policy/serviceOptions.js';
import type { Policy } from '../policy/schema.js';
import { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import { validDecision, type Decision as ApprovalDecision } from '../service/approvals.js';
import type { Approval, GuardrailStore, PlanDocument } from '../store/GuardrailStore.js';
import { planFileGuardrails, planFileToPlan, validatePlanFile, type PlanFile } from './planFile.js';
import { builtinTools, type BuiltinToolOptions } from './tools/index.js';
import {
  failedOutcome,
  outcomeOf,
  readRecord,
  recordToJson,
  runRecordOf,
  startedByRunner,
  type PlanListRow,
  type PlanStatus,
  type RunOutcome,
  type RunRecord,
} from './record.js';

export { clockOf, type PlanListRow, type PlanStatus, type RunOutcome, type RunRecord } from './record.js';

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
   * name, numbered `-2`, `-3`… when a plan of that name exists already. `labels` are added to the file's,
   * a label of either name taking the value given here (`leash run --label`).
   */
  async start(input: {
    file: PlanFile;
    source: string;
    baseDir: string;
    name: string;
    id?: string;
    policy?: Policy | null;
    labels?: Readonly<Record<string, string>>;
  }): Promise<RunReport> {
    const file = validatePlanFile(input.file, { source: input.source });
    const policy = input.policy === undefined || input.policy === null ? null : validatePolicy(input.policy);
    const labels = validateLabels({ ...file.labels, ...validateLabels(input.labels) });
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
    const guardrails = {
      ...(policy === null
        ? planFileGuardrails(file)
        : strictestGuardrails(planFileGuardrails(file), policyToGuardrailsInit(policy))),
      labels,
    };
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
    // A vote short of its rule's quorum leaves the approval pending: the plan still waits.
    const run = resume && approval.status !== 'pending' ? await this.resumeIfPaused(approval.planId) : null;
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
   * failed, keeping its progress (a document another program saved, such as a `leash mcp` session's, as
   * it is), so it no longer shows as running. Refused for a plan in another phase.
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
    // Another program's document (an MCP session's) is kept as it is: only its phase says it ended.
    const record = runRecordOf(doc);
    const body =
      record === null ? doc.body : recordToJson({ ...record, outcome: failedOutcome(record, why) });
    try {
      await this.store.savePlanDocument(
        {
          planId,
          phase: 'failed',
          body,
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
    // A run under a policy opens its approvals under the policy's rules of who decides them, and queues
    // what it decides for the policy's notify: targets.
    const service =
      record.policy === null
        ? this.service
        : new AutonomyGuardrailService({
            store: this.store,
            clock: this.#clock,
            ...policyServiceOptions(record.policy),
          });
    const executor = new PlanExecutor({
      service,
      tools,
      ...(record.policy === null
        ? {}
        : { toolRules: toolRules(record.policy), approvalTtlMs: approvalTtlMs(record.policy) }),
    });
    const onEvent = this.#onEvent;
    if (onEvent) for (const e of EXECUTOR_EVENTS) executor.on(e, (payload) => onEvent(e, payload as never));
    return executor;
  }
}
