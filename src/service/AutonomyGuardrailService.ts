import type { Telemetry } from '../telemetry/Telemetry.js';
import type { AuditTrail } from '../audit/AuditTrail.js';
import type { Clock } from '../clock.js';
import {
  validRuntimeKey,
  type AutonomyGuardrails,
  type GuardrailsInit,
} from '../guardrails/AutonomyGuardrails.js';
import type { GuardCheck } from '../GuardCheck.js';
import { spendCaps, type SpendCap, type SpendCapInit } from '../guardrails/caps.js';
import { validatePlanId } from '../ids.js';
import type {
  Approval,
  ApprovalStatus,
  DeciderIdentity,
  GuardrailStore,
  PersonalToken,
  Principal,
} from '../store/GuardrailStore.js';
import type { Decision } from './approvals.js';
import * as budget from './budget.js';
import type { BudgetReservation } from './BudgetReservation.js';
import * as checks from './checks.js';
import * as confirmations from './confirmations.js';
import type { ConfirmationAsk, ConfirmationRequest, GrantAsk, GrantUse } from './confirmations.js';
import { ServiceCore, type AutonomyGuardrailServiceOptions } from './core.js';
import { expireApprovals } from './expiry.js';
import * as people from './people.js';
import type { NewToken, PrincipalInit, TokenOptions } from './people.js';
import * as plans from './plans.js';
import * as votes from './votes.js';
import {
  beginToolCall,
  openToolCall,
  type ToolCallBegin,
  type ToolCallBegun,
  type ToolCallOpen,
  type ToolCallOpened,
} from './toolCall.js';

export {
  DEFAULT_RESERVATION_TTL_MS,
  MAX_APPROVAL_TTL_MS,
  type AutonomyGuardrailServiceOptions,
} from './core.js';
export type { ConfirmationAsk, ConfirmationRequest, GrantUse } from './confirmations.js';
export type { NewToken, PrincipalInit, TokenOptions } from './people.js';
export type { ToolCallBegin, ToolCallBegun, ToolCallOpen, ToolCallOpened } from './toolCall.js';

/**
 * Guardrails per plan over a {@link GuardrailStore}: every check is recorded in the plan's audit trail
 * together with its effect, in one atomic step. A facade: each concern lives in a module of its own
 * (`checks`, `budget`, `confirmations`, `toolCall`, `plans`), all working on one {@link ServiceCore}.
 *
 * @example
 * const service = new AutonomyGuardrailService();
 * await service.configureGuardrails('plan-1', { toolBudget: 1 });
 * (await service.checkToolBudget('plan-1', 0.4)).allowed; // true, and 0.4 is now spent
 */
export class AutonomyGuardrailService {
  readonly #core: ServiceCore;

  constructor(options: AutonomyGuardrailServiceOptions = {}) {
    // Reservations settle through the service's own method, so that wrapping it wraps every settlement.
    this.#core = new ServiceCore(options, (planId, id, actual, o) =>
      this.settleReservation(planId, id, actual, o),
    );
  }

  /** The store this service writes to. */
  get store(): GuardrailStore {
    return this.#core.store;
  }

  /** Where this service reports its decisions to OpenTelemetry; null when it does not. */
  get telemetry(): Telemetry | null {
    return this.#core.telemetry;
  }

  /** The clock every check of this service reads. */
  get clock(): Clock {
    return this.#core.clock;
  }

  /**
   * Sets a plan's limits. A plan configured before keeps its audit trail, steps taken, money spent and
   * start time, unless `init` gives them; its labels are those of `init` (none when it gives none).
   * Validated in full first: a bad init changes nothing. Returns a copy of what was stored.
   */
  configureGuardrails(planId: string, init?: GuardrailsInit): Promise<AutonomyGuardrails> {
    return plans.configureGuardrails(this.#core, planId, init);
  }

  /** A copy of the plan's guardrails, or null when it has none. */
  getGuardrails(planId: string): Promise<AutonomyGuardrails | null> {
    return plans.getGuardrails(this.#core, planId);
  }

  /** Checks `step` against `max_steps` and records the check. Counts nothing: see {@link takeStep}. */
  checkStepLimit(planId: string, step: number): Promise<GuardCheck> {
    return checks.checkStepLimit(this.#core, planId, step);
  }

  /**
   * Atomic check-and-count of the plan's next step: allowed iff `step_count < max_steps`, and then
   * `step_count` goes up by one. Recorded either way.
   */
  takeStep(planId: string): Promise<GuardCheck> {
    return checks.takeStep(this.#core, planId);
  }

  /**
   * Atomic check-and-spend: allowed iff `budget_spent + cost <= tool_budget`, and then `cost` is spent.
   * Concurrent calls never overspend. Recorded either way.
   */
  checkToolBudget(planId: string, cost: number): Promise<GuardCheck> {
    return budget.checkToolBudget(this.#core, planId, cost);
  }

  /**
   * A model with no price cannot be metered: denied (`budget_blocked`, its reason naming the model and
   * where its price goes: the policy key `models.<id>`, or with `pricesFrom: 'options'` the run guard's
   * `models` option) while the plan has a budget, and recorded then. Allowed, and not recorded, for a
   * plan with no budget.
   */
  checkUnpricedModel(
    planId: string,
    modelId: string,
    options?: { readonly pricesFrom?: budget.PricesFrom },
  ): Promise<GuardCheck> {
    return budget.checkUnpricedModel(this.#core, planId, modelId, options);
  }

  /**
   * The checks before a tool call runs, decided and recorded in one update of the plan, each audited as
   * its own method would: wall clock → step (counted) → confirmation (an approval opened when a person
   * must confirm) → the invocation's tool calls (when `currentCalls` is given) → the tool's calls per
   * plan (counted) → reservation of the estimate. Stops at the first that refuses. Resolves null for a
   * plan that is not configured: its checks are asked one by one then; and, given `after`, while that
   * reservation is not settled within the budget.
   */
  beginToolCall(planId: string, call: ToolCallBegin): Promise<ToolCallBegun | null> {
    return beginToolCall(this.#core, planId, call);
  }

  /**
   * The checks of a call that is no step of its own and cannot wait for a person (a tool a tool calls,
   * another try of a call), decided and recorded in one update, each audited as its own method would:
   * the wall clock (when `wallClock` is true) → the invocation's tool calls (when `currentCalls` is
   * given) → each of `operations` needing no person
   * (`checkConfirmation`; no approval is opened) → the tool's calls per plan (counted) → reservation of
   * the estimate. Stops at the first that refuses. Resolves null for a plan that is not configured.
   */
  openToolCall(planId: string, call: ToolCallOpen): Promise<ToolCallOpened | null> {
    return openToolCall(this.#core, planId, call);
  }

  /** Denied (`confirmation_required`) when a person must confirm `operation`. Recorded either way. */
  checkConfirmation(
    planId: string,
    operation: string,
    options?: { readonly alwaysRequire?: boolean },
  ): Promise<GuardCheck> {
    return checks.checkConfirmation(this.#core, planId, operation, options);
  }

  /** Checks the elapsed wall-clock time against the plan's limit, on the service's clock. */
  checkWallClock(planId: string): Promise<GuardCheck> {
    return checks.checkWallClock(this.#core, planId);
  }

  /** Checks `currentCalls` against `max_tool_calls_per_invocation` and records the check. */
  checkActorToolCalls(planId: string, currentCalls: number): Promise<GuardCheck> {
    return checks.checkActorToolCalls(this.#core, planId, currentCalls);
  }

  /**
   * Checks `currentRetries` against `max_retries_per_failure` and records the check, with `error` (the
   * failure to retry, as text) when given: the entry keeps as much of its end as the details limit lets.
   */
  checkRetries(
    planId: string,
    currentRetries: number,
    options: { error?: string } = {},
  ): Promise<GuardCheck> {
    return checks.checkRetries(this.#core, planId, currentRetries, options);
  }

  /** Sets the plan's `start_time` to now if it is unset; a plan that already started keeps its start. */
  markStarted(planId: string): Promise<void> {
    return checks.markStarted(this.#core, planId);
  }

  /**
   * Atomically sets `amount` aside for a call in flight: allowed iff spent + reserved + amount <= budget.
   * Settle it with `commit(actual)` or give it back with `release()`. Idempotent on `reservationId`:
   * while a reservation with that id is open, asking again returns it without reserving twice. `model`,
   * the model a model call's reservation is for, is recorded with it and with its settlement.
   */
  reserveBudget(
    planId: string,
    amount: number,
    options: { reservationId: string; model?: string },
  ): Promise<BudgetReservation> {
    return budget.reserveBudget(this.#core, planId, amount, options);
  }

  /**
   * @internal settles a reservation at its actual cost (`actual`), or gives it back (null); see
   * {@link BudgetReservation.commit}. A reservation that lapsed is settled once all the same: a commit
   * spends its actual cost, since the work was done. One not open and not lapsed was settled already,
   * by this or another handle of the same id: nothing changes, and nothing is spent twice. `model` is
   * recorded with the settlement.
   */
  settleReservation(
    planId: string,
    id: string,
    actual: number | null,
    options: { error?: string; note?: string; model?: string } = {},
  ): Promise<GuardCheck> {
    return budget.settleReservation(this.#core, planId, id, actual, options);
  }

  /**
   * Atomic check-and-count of one call of `tool` against its calls-per-plan limit (from a policy): allowed
   * iff calls so far < `maxCallsPerPlan`, and then the call is counted. Recorded either way.
   */
  checkToolCalls(planId: string, tool: string, maxCallsPerPlan: number): Promise<GuardCheck> {
    return checks.checkToolCalls(this.#core, planId, tool, maxCallsPerPlan);
  }

  /**
   * Refuses a call of `tool` that may not run at all (a tool its caller hides): recorded as a
   * `tool_calls_blocked` check with a limit of 0, the tool, its input's hash and `reason`. Takes no step
   * and counts nothing. A plan that is not configured records nothing.
   */
  refuseToolCall(
    planId: string,
    call: { readonly tool: string; readonly input?: unknown; readonly reason: string },
  ): Promise<GuardCheck> {
    return checks.refuseToolCall(this.#core, planId, call);
  }

  /**
   * Checks whether `operation` needs a person's confirmation and, if it does, atomically opens a pending
   * approval for this decision and input, and stops the plan's wall clock until the approval is used or
   * denied (`pauseClock: false` leaves it running, for a caller that goes on while the person decides).
   * Recorded either way. The approval shows the person what they are asked about: `toolName`, and a
   * bounded one-line preview of `preview` (see `inputPreview`), or of `input` when only `toolName` is
   * given; without either, no preview.
   */
  requestConfirmation(planId: string, request: ConfirmationAsk): Promise<ConfirmationRequest> {
    return confirmations.requestConfirmation(this.#core, planId, request);
  }

  /**
   * A person approves a pending confirmation: recorded with who and why. The grant is single-use. Under
   * an approval rule (or once the store has principals) it is a vote: `identity` must be a verified
   * person the rule names, not the requester unless the rule allows it, once; the approval is granted
   * when the rule's quorum of different people approved, and stays pending before (`confirmation_vote`).
   * A decision the rule does not count is recorded (`confirmation_vote_refused`) and rejected with a
   * GuardrailError naming the rule: IDENTITY_REQUIRED, APPROVAL_NOT_ALLOWED, APPROVAL_SELF,
   * APPROVAL_ALREADY_VOTED or APPROVAL_EXPIRED (the approval is denied then, as its rule says).
   */
  approve(id: string, decision: Decision): Promise<Approval> {
    return votes.decideApproval(this.#core, id, decision, 'approved');
  }

  /**
   * A person denies a pending confirmation: recorded with who and why (a reason is required). Under an
   * approval rule one denial by a person it names ends it; the requester may deny too.
   */
  deny(id: string, decision: Decision): Promise<Approval> {
    return votes.decideApproval(this.#core, id, decision, 'denied');
  }

  /**
   * Denies every pending approval past its expiry whose rule says `on_timeout: deny` (the default rule
   * too, once the store has principals), recording each as `confirmation_expired` with leash as the
   * decider, and resolves with them. A use of the grant or a decision that meets one does the same.
   */
  expireApprovals(): Promise<Approval[]> {
    return expireApprovals(this.#core);
  }

  /**
   * Uses the grant of `approvalId` for a decision about to run: allowed once, for the same plan, decision,
   * normalized operation and input, before it expires. Marks it used and restarts the wall clock (unless
   * `pauseClock: false`, as the request was made, left it running).
   * Outcomes: `granted`; `pending` (nobody decided yet); `denied` (a person said no); `refused` (expired,
   * used already, or for something else — a new approval is needed). Recorded unless pending or denied.
   */
  useGrant(planId: string, approvalId: string, use: GrantAsk): Promise<GrantUse> {
    return confirmations.useGrant(this.#core, planId, approvalId, use);
  }

  /** An approval by id, or null. */
  async getApproval(id: string): Promise<Approval | null> {
    return this.#core.store.getApproval(validRuntimeKey(id, 'approval_id'));
  }

  /**
   * The newest approval of `planId` asked for decision `decisionId`, or null: how a caller that did not
   * keep an approval's id (a process that restarted) finds the one it asked for.
   */
  findApproval(planId: string, decisionId: string): Promise<Approval | null> {
    return confirmations.findApproval(this.#core, planId, decisionId);
  }

  /** Approvals, oldest first, optionally of one plan and in one status. */
  listApprovals(filter: { planId?: string; status?: ApprovalStatus } = {}): Promise<Approval[]> {
    return confirmations.listApprovals(this.#core, filter);
  }

  /**
   * Adds a principal, a person (or service account) who may decide approvals, or changes the name, roles
   * and e-mail address of the one with its id. Roles are kept sorted, without repeats. An id that was
   * revoked is refused: ids are not reused. Needs a store that keeps principals (`STORE_UNSUPPORTED`).
   * @example
   * await service.addPrincipal({ id: 'ann', name: 'Ann Lee', roles: ['release'] });
   */
  addPrincipal(init: PrincipalInit): Promise<Principal> {
    return people.addPrincipal(this.#core, init);
  }

  /**
   * Revokes a principal: it may no longer decide, and each of its tokens is refused (`PRINCIPAL_REVOKED`).
   * Revoking one that is revoked already changes nothing. `PRINCIPAL_NOT_FOUND` for an unknown id.
   */
  revokePrincipal(id: string): Promise<Principal> {
    return people.revokePrincipal(this.#core, id);
  }

  /** Every principal, revoked ones too, in id order. */
  listPrincipals(): Promise<Principal[]> {
    return people.listPrincipals(this.#core);
  }

  /** True when the store has a principal that is not revoked (false for a store that keeps none). */
  hasPrincipals(): Promise<boolean> {
    return people.hasPrincipals(this.#core);
  }

  /**
   * Makes a personal token for a principal: `token` is the secret, shown to its owner once and kept
   * nowhere; `record` is what the store keeps (its id, its SHA-256, label and expiry).
   * @example
   * const { token, record } = await service.createToken('ann', { label: 'laptop', expiresInSeconds: 90 * 86400 });
   */
  createToken(principalId: string, options?: TokenOptions): Promise<NewToken> {
    return people.createToken(this.#core, principalId, options);
  }

  /** Revokes a personal token by id (`tok_…`); revoking one twice changes nothing. `TOKEN_NOT_FOUND`. */
  revokeToken(id: string): Promise<PersonalToken> {
    return people.revokeToken(this.#core, id);
  }

  /** Personal tokens (revoked and expired ones too), oldest first, optionally of one principal. */
  listTokens(filter?: { readonly principalId?: string }): Promise<PersonalToken[]> {
    return people.listTokens(this.#core, filter);
  }

  /**
   * The identity a personal token proves, on the service's clock. Refused with `TOKEN_INVALID`,
   * `TOKEN_REVOKED`, `TOKEN_EXPIRED` or `PRINCIPAL_REVOKED`; the message never holds the token.
   */
  authenticate(token: string): Promise<DeciderIdentity> {
    return people.authenticate(this.#core, token);
  }

  /** A copy of the plan's audit trail (the newest entries, oldest first), or null when it has none. */
  getAuditTrail(planId: string): Promise<AuditTrail | null> {
    return plans.getAuditTrail(this.#core, planId);
  }

  /**
   * Returns `metadata` with the plan's state added under `autonomy_guardrails` (DESIGN.md §3). The input
   * object is not modified. For a plan with no guardrails, a copy of `metadata` as it was.
   */
  toMetadata(planId: string, metadata: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    return plans.toMetadata(this.#core, planId, metadata);
  }

  /**
   * Replaces the plan's state with the one held in `metadata`, read as untrusted JSON. Validated in full
   * first: on any error nothing changes.
   * @throws GuardrailValidationError naming the path, e.g. `autonomy_guardrails.audit_trail.entries[3].result`
   */
  loadFromMetadata(planId: string, metadata: unknown): Promise<AutonomyGuardrails> {
    return plans.loadFromMetadata(this.#core, planId, metadata);
  }

  /** Forgets the plan's guardrails and audit trail; true if it had any. */
  /**
   * Installs spend caps that span plans (what a policy's `budgets:` block holds), in the store, so that
   * every service sharing it enforces them: a cap whose id is installed already is replaced, keeping
   * what was spent in its windows. Validated first (GuardrailValidationError naming `budgets[i].field`);
   * all or nothing.
   * @example
   * await service.installSpendCaps([{ id: 'team-ml', match: { team: 'ml' }, limit: 500, window: 'month' }]);
   */
  async installSpendCaps(caps: readonly SpendCapInit[]): Promise<readonly SpendCap[]> {
    const checked = spendCaps(caps, 'budgets');
    await this.#core.store.putCaps(checked);
    return checked;
  }

  /** The spend caps installed in the store, in id order. */
  listSpendCaps(): Promise<SpendCap[]> {
    return this.#core.store.listCaps();
  }

  /** Removes a spend cap and its windows; true if it was installed. */
  removeSpendCap(id: string): Promise<boolean> {
    return this.#core.store.deleteCap(id);
  }

  async removePlan(planId: string): Promise<boolean> {
    validatePlanId(planId);
    return this.#core.store.delete(planId);
  }
}
