import { describeValue, GuardrailValidationError, invalid } from '../errors.js';
import { validRuntimeKey, type AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';
import { GuardrailEventType as E } from '../events.js';
import { makeCheck, type GuardCheck } from '../GuardCheck.js';
import { confirmationReason } from '../guardrails/operation.js';
import { intField } from '../guardrails/validate.js';
import { validatePlanId } from '../ids.js';
import { ruleFor, snapshotOf, type ConfiguredApprovalRule } from '../identity/rules.js';
import { formatIso, isSerializableTimestamp, parseIsoMs } from '../iso.js';
import { isPlainObject } from '../json.js';
import {
  APPROVAL_STATUSES,
  type Approval,
  type ApprovalStatus,
  type PlanChange,
} from '../store/GuardrailStore.js';
import { operationsDetail, validPersonName, validToolName } from './approvals.js';
import { MAX_APPROVAL_TTL_MS, rejecting, type ServiceCore } from './core.js';
import { expiry } from './expiry.js';
import { inputHash } from './hash.js';
import { ApprovalNotices } from './notifications.js';
import { inputPreview } from './preview.js';

// Confirmations: asking a person, their decision, and the single-use grant it gives.

/** A request for a person's confirmation of one decision. */
export interface ConfirmationAsk {
  readonly decisionId: string;
  /** The operation, or all the operations of the decision: one approval covers those that need it. */
  readonly operation: string | readonly string[];
  readonly input?: unknown;
  readonly ttlMs: number;
  /** Operations that need a person whatever the plan's list says (a per-tool rule). */
  readonly alwaysRequire?: readonly string[];
  /** Stop the wall clock while the person decides; default true. */
  readonly pauseClock?: boolean;
  /** The tool an agent wants to call, shown to the person asked. */
  readonly toolName?: string;
  /** The JSON value to show the person a preview of, e.g. the tool's arguments. */
  readonly preview?: unknown;
  /**
   * Who asked, as a principal's id (whose run it is): an approval rule without self-approval does not
   * let them approve it. Default: the plan's `user` label.
   */
  readonly requester?: string;
}

/** A confirmation request, checked: what a plan's change is decided from. */
export interface ValidConfirmation {
  readonly expires: number;
  readonly decisionId: string;
  readonly ops: readonly string[];
  readonly always: readonly string[];
  readonly pause: boolean;
  readonly toolName: string | undefined;
  readonly shown: { readonly value: unknown; readonly field: string } | null;
  readonly input: unknown;
  readonly requester: string | undefined;
}

/** What {@link AutonomyGuardrailService.requestConfirmation} did: the check, and the approval it opened. */
export interface ConfirmationRequest {
  readonly check: GuardCheck;
  readonly approval?: Approval;
}

/** What {@link AutonomyGuardrailService.useGrant} found. */
export interface GrantUse {
  readonly outcome: 'granted' | 'pending' | 'denied' | 'refused';
  readonly check: GuardCheck;
  readonly approval: Approval | null;
}

/** A use of a grant, as given to {@link AutonomyGuardrailService.useGrant}. */
export interface GrantAsk {
  decisionId: string;
  /** The operation, or all the operations of the decision, as given to requestConfirmation. */
  operation: string | readonly string[];
  input?: unknown;
  alwaysRequire?: readonly string[];
  /** As given to requestConfirmation: false leaves the wall clock as it is. Default true. */
  pauseClock?: boolean;
  /**
   * Record a use that finds the approval pending or denied too (default false: the request and the
   * decision were recorded, and a runner that waits asks again and again). For a caller whose use
   * means the call was about to run: an approval claimed where leash has none.
   */
  recordRefusal?: boolean;
}

/** The answer of a confirmation request that opened no approval. */
const requestOf = (check: GuardCheck): ConfirmationRequest => ({ check });

/** The operations among `ops` that need a person: listed in the guardrails, or always. */
function requiredOf(g: AutonomyGuardrails, ops: readonly string[], always: readonly string[]): string[] {
  return ops.filter((op) => always.includes(op) || g.requiresConfirmation(op));
}

/** The `pauseClock` option of a confirmation: a boolean, default true. */
function pauseClockOf(value: unknown): boolean {
  if (value !== undefined && typeof value !== 'boolean') invalid('pauseClock', 'a boolean', value);
  return value !== false;
}

/** A confirmation request, checked (throws GuardrailValidationError naming the field), as of `now`. */
export function validConfirmation(
  core: ServiceCore,
  request: ConfirmationAsk,
  now: number,
): ValidConfirmation {
  if (!isPlainObject(request)) invalid('request', 'an object', request);
  const decisionId = validRuntimeKey(request.decisionId, 'decisionId');
  const ops = core.operations(request.operation);
  const always = core.operations(request.alwaysRequire ?? [], 'alwaysRequire', true);
  const pause = pauseClockOf(request.pauseClock);
  const toolName = request.toolName === undefined ? undefined : validToolName(request.toolName);
  // What the person is shown of the input: `preview`, else the input of a named tool, else nothing.
  const shown =
    request.preview !== undefined
      ? { value: request.preview, field: 'preview' }
      : toolName === undefined
        ? null
        : { value: request.input, field: 'input' };
  const ttlMs = intField(request.ttlMs, 'ttlMs', 1, false) as number;
  if (ttlMs > MAX_APPROVAL_TTL_MS) invalid('ttlMs', `at most ${MAX_APPROVAL_TTL_MS} (ten years)`, ttlMs);
  const expires = now + ttlMs;
  if (!isSerializableTimestamp(expires))
    invalid('ttlMs', 'small enough to expire before the year 10000', ttlMs);
  const requester =
    request.requester === undefined
      ? undefined
      : validPersonName(request.requester, 'requester', 'who asked');
  return { decisionId, ops, always, pause, toolName, shown, input: request.input, expires, requester };
}

/** The confirmation of `c` decided from a configured plan's guardrails: an approval opened when needed. */
export function decideConfirmation(
  core: ServiceCore,
  g: AutonomyGuardrails,
  planId: string,
  c: ValidConfirmation,
  now: number,
): PlanChange<ConfirmationRequest> {
  const { decisionId, ops, always, pause, toolName, shown, expires } = c;
  const required = requiredOf(g, ops, always);
  if (required.length === 0) {
    // The reason is written only if asked for: an allowed check's entry does not carry it.
    const check = makeCheck(E.CONFIRMATION_NOT_REQUIRED, () => confirmationReason(ops, false), null);
    const details =
      ops.length === 1 ? { operation: ops[0] as string, limit: null } : { operations: [...ops], limit: null };
    return { result: { check }, audit: core.entry(check, details, now) };
  }
  // The approval keeps them as one comma-separated string, as stores hold it.
  const op = required.join(',');
  const check = makeCheck(E.CONFIRMATION_REQUIRED, confirmationReason(required, true), null);
  const rules = core.approvalRules;
  const rule = rules === undefined ? undefined : ruleFor(rules, { toolName, operations: required });
  const requester = c.requester ?? g.labels['user'];
  const notify = core.approvalTargets;
  // A new id only when a person is asked; the store refuses one already in use.
  const approval: Approval = Object.freeze({
    id: core.newId(),
    planId,
    decisionId,
    operation: op,
    ...(toolName === undefined ? {} : { toolName }),
    // Like the hash, made only when a person must confirm.
    ...(shown === null ? {} : { inputPreview: inputPreview(shown.value, shown.field) }),
    inputHash: inputHash(c.input), // hashed only when a person must confirm
    requestedAt: formatIso(now),
    expiresAt: formatIso(rule?.ttlMs === undefined ? expires : ruleExpiry(rule, rule.ttlMs, now)),
    status: 'pending',
    ...(notify.length === 0 ? {} : { notify }),
    ...(requester === undefined ? {} : { requester }),
    ...(rule === undefined ? {} : { rule: snapshotOf(rule) }),
  });
  const details = {
    ...operationsDetail(required),
    decision_id: decisionId,
    approval_id: approval.id,
    expires_at: approval.expiresAt,
    ...(rule === undefined ? {} : { rule: rule.name }),
  };
  return {
    result: { check, approval },
    audit: core.entry(check, details, now),
    ...(pause ? { mutation: { pause: approval.requestedAt } } : {}),
    newApproval: approval,
  };
}

/** See {@link AutonomyGuardrailService.requestConfirmation}. */
export function requestConfirmation(
  core: ServiceCore,
  planId: string,
  request: ConfirmationAsk,
): Promise<ConfirmationRequest> {
  return core.checking(E.CONFIRMATION_REQUIRED, requestOf, () => {
    validatePlanId(planId);
    const now = core.now();
    const c = validConfirmation(core, request, now);
    const always = c.always;
    const notices = new ApprovalNotices(core);
    const change = notices.changing((g): PlanChange<ConfirmationRequest> => {
      if (!g && always.length > 0) {
        // A rule says a person must confirm: with no plan to keep an approval in, nobody can (fail closed).
        const reason = `${always.join(', ')} always needs a person's confirmation, and plan "${planId}" is not configured to ask one`;
        return { result: { check: makeCheck(E.CONFIRMATION_REQUIRED, reason, null) } };
      }
      if (!g) {
        const check = core.unconfigured(E.CONFIRMATION_NOT_REQUIRED, E.CONFIRMATION_REQUIRED, planId).result;
        return { result: { check } };
      }
      return decideConfirmation(core, g, planId, c, now);
    });
    return notices.after(core.update(planId, change));
  });
}

/** When an approval opened at `now` under `rule`, which sets its own time to live, expires. */
function ruleExpiry(rule: ConfiguredApprovalRule, ttlMs: number, now: number): number {
  const expires = now + ttlMs;
  if (ttlMs > MAX_APPROVAL_TTL_MS || !isSerializableTimestamp(expires)) {
    invalid(`approvalRules["${rule.name}"].ttlMs`, `at most ${MAX_APPROVAL_TTL_MS} (ten years)`, ttlMs);
  }
  return expires;
}

/** A use of a grant, checked: what its part of a plan's change is decided from. */
export interface ValidGrant {
  readonly id: string;
  readonly decisionId: string;
  readonly ops: readonly string[];
  readonly always: readonly string[];
  /** The hash of the input the call will run with, which the grant must have been given for. */
  readonly hash: string;
  readonly unpause: boolean;
  readonly record: boolean;
}

/** See {@link AutonomyGuardrailService.useGrant}. */
export function useGrant(
  core: ServiceCore,
  planId: string,
  approvalId: string,
  use: GrantAsk,
): Promise<GrantUse> {
  return rejecting(() => {
    validatePlanId(planId);
    if (!isPlainObject(use)) invalid('use', 'an object', use);
    const id = validRuntimeKey(approvalId, 'approval_id');
    const decisionId = validRuntimeKey(use.decisionId, 'decisionId');
    const ops = core.operations(use.operation);
    const always = core.operations(use.alwaysRequire ?? [], 'alwaysRequire', true);
    const hash = inputHash(use.input);
    const unpause = pauseClockOf(use.pauseClock);
    const record = use.recordRefusal ?? false;
    if (typeof record !== 'boolean') invalid('recordRefusal', 'a boolean', record);
    const grant: ValidGrant = { id, decisionId, ops, always, hash, unpause, record };
    const now = core.now();
    const notices = new ApprovalNotices(core);
    const change = notices.changing((g, a) => decideGrant(core, g, a, planId, grant, now));
    return notices.after(core.update(planId, change, { approvalId: grant.id }));
  });
}

/**
 * The use of `grant` decided from the plan's guardrails and the approval `a` it names: the approval
 * marked used when it was approved for this decision, its operations as they need a person now, and this
 * input, in time. A use that finds it pending or denied is recorded only when `grant.record` says so.
 */
export function decideGrant(
  core: ServiceCore,
  g: AutonomyGuardrails | null,
  a: Approval | null,
  planId: string,
  grant: ValidGrant,
  now: number,
): PlanChange<GrantUse> {
  const { id, decisionId, ops } = grant;
  const details = { approval_id: id, decision_id: decisionId, ...operationsDetail(ops) };
  if (!g || !a) {
    const check = makeCheck(E.CONFIRMATION_GRANT_REFUSED, `no approval "${id}" for plan "${planId}"`, null);
    const result: GrantUse = { outcome: 'refused', check, approval: null };
    if (!g) return { result };
    return { result, audit: core.entry(check, details, now) };
  }
  const undecided = (outcome: 'pending' | 'denied', check: GuardCheck): PlanChange<GrantUse> => {
    const result: GrantUse = { outcome, check, approval: a };
    return grant.record ? { result, audit: core.entry(check, details, now) } : { result };
  };
  if (a.status === 'pending' && now <= parseIsoMs(a.expiresAt)) {
    return undecided('pending', makeCheck(E.CONFIRMATION_REQUIRED, 'awaiting a decision', null));
  }
  if (a.status === 'pending' && a.rule !== undefined) {
    // Its rule denies it now that nobody decided in time; recorded whoever finds it.
    const { check, approval, audit, mutation } = expiry(core, a, now);
    return { result: { outcome: 'denied', check, approval }, audit, approval, mutation };
  }
  if (a.status === 'denied') {
    const reason = `denied by ${a.decidedBy ?? 'someone'}: ${a.reason ?? ''}`;
    return undecided('denied', makeCheck(E.CONFIRMATION_DENIED, reason, null));
  }
  // What needs a person now: a grant covers exactly that, so a wider need asks again.
  const op = requiredOf(g, ops, grant.always).join(',');
  const problem = grantProblem(a, decisionId, op, grant.hash, now);
  if (problem !== null) {
    const reason = `approval "${id}" cannot be used: ${problem}`;
    const check = makeCheck(E.CONFIRMATION_GRANT_REFUSED, reason, null);
    return {
      result: { outcome: 'refused', check, approval: a },
      audit: core.entry(check, details, now),
    };
  }
  const used: Approval = Object.freeze({ ...a, status: 'used', usedAt: formatIso(now) });
  const check = makeCheck(E.CONFIRMATION_GRANT_USED, `approved by ${a.decidedBy ?? 'someone'}`, null);
  const audit = core.entry(check, { ...details, by: a.decidedBy ?? null }, now);
  const result: GrantUse = { outcome: 'granted', check, approval: used };
  return grant.unpause
    ? { result, audit, approval: used, mutation: { unpause: now } }
    : { result, audit, approval: used };
}

/** Why a decided approval's grant cannot be used for this decision, operation and input now, or null. */
function grantProblem(a: Approval, decisionId: string, op: string, hash: string, now: number): string | null {
  if (a.status === 'used') return 'it was used already';
  if (a.decisionId !== decisionId) return `it was given for decision "${a.decisionId}"`;
  if (a.operation !== op) return `it was given for operation "${a.operation}"`;
  if (a.inputHash !== hash) return 'the input changed since it was given';
  if (now > parseIsoMs(a.expiresAt)) return `it expired at ${a.expiresAt}`;
  return null;
}

/** See {@link AutonomyGuardrailService.findApproval}. */
export function findApproval(
  core: ServiceCore,
  planId: string,
  decisionId: string,
): Promise<Approval | null> {
  return rejecting(() => {
    validatePlanId(planId);
    const id = validRuntimeKey(decisionId, 'decisionId');
    const store = core.store;
    // Asked before every guarded call: no async frame of its own.
    if (store.findApproval) return store.findApproval(planId, id);
    return store.listApprovals({ planId }).then((approvals) => newestOf(approvals, id));
  });
}

/** The newest of `approvals` (oldest first) asked for under decision `id`, or null. */
function newestOf(approvals: readonly Approval[], id: string): Approval | null {
  for (let i = approvals.length - 1; i >= 0; i--) {
    if ((approvals[i] as Approval).decisionId === id) return approvals[i] as Approval;
  }
  return null;
}

/** See {@link AutonomyGuardrailService.listApprovals}. */
export async function listApprovals(
  core: ServiceCore,
  filter: { planId?: string; status?: ApprovalStatus },
): Promise<Approval[]> {
  if (!isPlainObject(filter)) invalid('filter', 'an object', filter);
  if (filter.planId !== undefined) validatePlanId(filter.planId);
  if (filter.status !== undefined && !APPROVAL_STATUSES.includes(filter.status)) {
    throw new GuardrailValidationError(
      'status',
      `status must be one of ${APPROVAL_STATUSES.join(', ')}, got ${describeValue(filter.status)}`,
    );
  }
  return core.store.listApprovals(filter);
}
