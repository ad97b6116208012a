import { AuditEntry } from '../audit/AuditEntry.js';
import { invalid } from '../errors.js';
import { validRuntimeKey } from '../guardrails/AutonomyGuardrails.js';
import { GuardrailEventType as E } from '../events.js';
import type { GuardCheck } from '../GuardCheck.js';
import { intField, objectWithKeys } from '../guardrails/validate.js';
import { validatePlanId } from '../ids.js';
import type { JsonObject } from '../json.js';
import { toMicros } from '../money.js';
import type { Approval, CapWrite, PlanChange, PlanMutation } from '../store/GuardrailStore.js';
import { decideReservation, settledWithinBudget } from './budget.js';
import type { BudgetReservation } from './BudgetReservation.js';
import {
  decideConfirmation,
  decideGrant,
  validConfirmation,
  type ConfirmationAsk,
  type ValidGrant,
} from './confirmations.js';
import type { ServiceCore } from './core.js';
import {
  decideActorCalls,
  decideOperation,
  decideStep,
  decideToolCalls,
  decideWallClock,
} from './decisions.js';
import { inputHash } from './hash.js';
import { ApprovalNotices } from './notifications.js';
import { merged } from '../objects.js';
import { normalizeOperation } from '../guardrails/operation.js';

/** A tool call about to run, for {@link AutonomyGuardrailService.beginToolCall}. */
export interface ToolCallBegin {
  /** The confirmation asked for the call; its decision id is the tool call's id. */
  readonly confirm: ConfirmationAsk;
  /**
   * The approval asked for under the call's id already (found with `findApproval`): the call took its
   * step when it was asked for, and goes on only by using its grant, in place of the step and the
   * confirmation. The grant is used in this same update, and only when every check after it lets the
   * call through: a call refused for its calls or its budget leaves the approval approved. A use that
   * finds it pending, denied or not usable refuses the call and is recorded.
   */
  readonly approvalId?: string | undefined;
  /** The tool's calls per plan, counted when allowed; without it, not counted. */
  readonly tool?: { readonly name: string; readonly maxCallsPerPlan: number } | undefined;
  /**
   * Tool calls of this invocation before this one, checked against `max_tool_calls_per_invocation`;
   * without it, that check is not made (a plan's own decision is no call within an invocation).
   */
  readonly currentCalls?: number;
  /** The amount to set aside for the call, and the reservation's id. */
  readonly estimate: number;
  readonly reservationId: string;
  /**
   * Every entry of the call names it too: `tool` (the confirmation's tool name) and `input_hash` (the
   * canonical hash of its input, the one grants are bound to). Default false.
   */
  readonly recordCall?: boolean;
  /**
   * The id of the reservation of the call before: this call is decided only once that reservation is
   * settled within the budget (not overrun); until then nothing is decided or recorded, and the answer is
   * null. Lets the settlement and the next call's checks be sent together, to share a store's write.
   */
  readonly after?: string;
}

/** What {@link AutonomyGuardrailService.beginToolCall} decided. */
export interface ToolCallBegun {
  /** The check that refused the call, or the reservation's. */
  readonly check: GuardCheck;
  /** The wall-clock check, allowed when the call got past it. */
  readonly wallClock: GuardCheck;
  /** The approval a person must decide, when the confirmation refused the call (or found it pending). */
  readonly approval?: Approval;
  /** The call's budget set aside, when every check let it through: settle it with commit or release. */
  readonly reservation?: BudgetReservation;
}

/**
 * A call that is not a step of its own and cannot wait for a person (a tool a tool calls, another try
 * of a call), for {@link AutonomyGuardrailService.openToolCall}.
 */
export interface ToolCallOpen {
  /** Checks the wall clock first (another try of a call); default false. */
  readonly wallClock?: boolean | undefined;
  /** Tool calls of the invocation before this one; without it, that check is not made. */
  readonly currentCalls?: number | undefined;
  /** Operations that must need no person, each checked in order; a call that needs one is refused. */
  readonly operations?: readonly string[] | undefined;
  /** Those of `operations` that need a person whatever the plan's list says (a per-tool rule). */
  readonly alwaysRequire?: readonly string[] | undefined;
  /** The tool's calls per plan, counted when allowed; without it, not counted. */
  readonly tool?: { readonly name: string; readonly maxCallsPerPlan: number } | undefined;
  /** The amount to set aside for the call, and the reservation's id. */
  readonly estimate: number;
  readonly reservationId: string;
}

/** What {@link AutonomyGuardrailService.openToolCall} decided. */
export interface ToolCallOpened {
  /** The check that refused the call, or the reservation's. */
  readonly check: GuardCheck;
  /** The wall-clock check, when it was asked for. */
  readonly wallClock?: GuardCheck;
  /** The call's budget set aside, when every check let it through: settle it with commit or release. */
  readonly reservation?: BudgetReservation;
}

const begunOf = (check: GuardCheck): ToolCallBegun => ({ check, wallClock: check });
const openedOf = (check: GuardCheck): ToolCallOpened => ({ check });

/**
 * The parts of a tool call's change, taken in order, as one change: their entries in order, their
 * mutations together (each part sets its own fields), the approval one opened.
 */
class ToolCallChange {
  readonly #entries: AuditEntry[] = [];
  readonly #mutation: { -readonly [K in keyof PlanMutation]: PlanMutation[K] } = {};
  #newApproval: Approval | undefined;
  #approval: Approval | undefined;
  #mutates = false;
  #caps: readonly CapWrite[] | undefined;
  /** Parts held back until the call is let through, each with where its entry goes. */
  #held: { readonly out: PlanChange<unknown>; readonly at: number }[] | undefined;

  /** `call`: details every entry of the call carries as well (the tool, its input's hash), or null. */
  constructor(readonly call: JsonObject | null) {}

  /** Adds a part's writes; returns its result. */
  take<T>(out: PlanChange<T>): T {
    const a = out.audit;
    if (a !== undefined) this.#entries.push(this.#named(a));
    if (out.mutation !== undefined) {
      Object.assign(this.#mutation, out.mutation);
      this.#mutates = true;
    }
    if (out.newApproval !== undefined) this.#newApproval = out.newApproval;
    if (out.approval !== undefined) this.#approval = out.approval;
    if (out.caps !== undefined) this.#caps = out.caps;
    return out.result;
  }

  /**
   * Holds a part's writes back: they are made, in the place of the entries they would have had now, only
   * when {@link end} is told to keep them. Returns its result.
   */
  hold<T>(out: PlanChange<T>): T {
    (this.#held ??= []).push({ out, at: this.#entries.length });
    return out.result;
  }

  /** The change; the held parts' writes with it when `keepHeld`. */
  end<R extends object>(result: R, keepHeld = false): PlanChange<R> {
    if (keepHeld && this.#held !== undefined) {
      // The last held first, so that the places of those before it stay as they were.
      for (let i = this.#held.length - 1; i >= 0; i--) {
        const { out, at } = this.#held[i] as { out: PlanChange<unknown>; at: number };
        const later = this.#entries.splice(at);
        this.take(out);
        this.#entries.push(...later);
      }
    }
    const change: { -readonly [K in keyof PlanChange<R>]: PlanChange<R>[K] } = {
      result: Object.freeze(result),
      entries: this.#entries,
    };
    if (this.#mutates) change.mutation = this.#mutation;
    if (this.#newApproval !== undefined) change.newApproval = this.#newApproval;
    if (this.#approval !== undefined) change.approval = this.#approval;
    if (this.#caps !== undefined) change.caps = this.#caps;
    return change;
  }

  #named(a: AuditEntry): AuditEntry {
    return this.call === null
      ? a
      : AuditEntry.trusted(a.eventType, a.timestamp, merged(a.details, this.call));
  }
}

/** The parts every tool call's checks take, checked: its tool and calls of the invocation, its estimate. */
function callParts(o: Record<string, unknown>) {
  const t =
    o['tool'] === undefined ? undefined : objectWithKeys(o['tool'], 'tool', ['name', 'maxCallsPerPlan']);
  const tool = t && {
    name: validRuntimeKey(t['name'], 'tool'),
    max: intField(t['maxCallsPerPlan'], 'max_calls_per_plan', 1, false) as number,
  };
  const current =
    o['currentCalls'] === undefined
      ? null
      : (intField(o['currentCalls'], 'current_calls', 0, false) as number);
  const micros = toMicros(o['estimate'], 'amount', 'up');
  const id = validRuntimeKey(o['reservationId'], 'reservationId');
  return { tool, current, micros, id };
}

/** See {@link AutonomyGuardrailService.beginToolCall}. */
export function beginToolCall(
  core: ServiceCore,
  planId: string,
  call: ToolCallBegin,
): Promise<ToolCallBegun | null> {
  return core.checking(E.WALL_CLOCK_BLOCKED, begunOf, () => {
    validatePlanId(planId);
    const o = objectWithKeys(call, 'call', [
      'confirm',
      'approvalId',
      'tool',
      'currentCalls',
      'estimate',
      'reservationId',
      'recordCall',
      'after',
    ]);
    const after = o['after'] === undefined ? null : validRuntimeKey(o['after'], 'after');
    const now = core.now();
    const c = validConfirmation(core, o['confirm'] as ConfirmationAsk, now);
    const approvalId = o['approvalId'] === undefined ? null : validRuntimeKey(o['approvalId'], 'approvalId');
    const record = o['recordCall'] ?? false;
    if (typeof record !== 'boolean') invalid('recordCall', 'a boolean', record);
    // Hashed once: the grant is bound to it, and every entry names it when asked to.
    const hash = record || approvalId !== null ? inputHash(c.input) : '';
    const named: JsonObject | null = record
      ? { tool: c.toolName ?? c.ops.join(','), input_hash: hash }
      : null;
    const grant: ValidGrant | null =
      approvalId === null
        ? null
        : {
            id: approvalId,
            decisionId: c.decisionId,
            ops: c.ops,
            always: c.always,
            hash,
            unpause: c.pause,
            record: true,
          };
    const { tool, current, micros, id } = callParts(o);
    const expiresAt = core.reservationExpiry(now);
    const options = approvalId === null ? { capsAt: now } : { approvalId, capsAt: now };
    const notices = new ApprovalNotices(core);
    const decide = notices.changing((g, a, caps): PlanChange<ToolCallBegun | null> => {
      if (!g || (after !== null && !settledWithinBudget(g, after))) return { result: null };
      const change = new ToolCallChange(named);
      const wallClock = change.take(decideWallClock(core, g, now));
      if (!wallClock.allowed) return change.end({ check: wallClock, wallClock });
      if (grant === null) {
        const step = change.take(decideStep(core, g, now));
        if (!step.allowed) return change.end({ check: step, wallClock });
        const asked = change.take(decideConfirmation(core, g, planId, c, now));
        if (!asked.check.allowed) {
          const { check, approval } = asked;
          return change.end(approval ? { check, wallClock, approval } : { check, wallClock });
        }
      } else {
        const peek = decideGrant(core, g, a, planId, grant, now);
        if (peek.result.outcome !== 'granted') {
          const { check, outcome, approval } = change.take(peek);
          return change.end(
            outcome === 'pending' && approval ? { check, wallClock, approval } : { check, wallClock },
          );
        }
        // Used only if the call is let through: a call refused after it keeps its approval. The
        // person decided, though: the plan's clock no longer waits for them.
        const { mutation, ...use } = peek;
        if (mutation !== undefined) change.take({ result: undefined, mutation });
        change.hold(use);
      }
      if (current !== null) {
        const actor = change.take(decideActorCalls(core, g, current, now));
        if (!actor.allowed) return change.end({ check: actor, wallClock });
      }
      if (tool) {
        // The tool's count of an approved call is taken only when it runs, so that a call refused
        // for its budget can still run once under its approval.
        const calls = decideToolCalls(core, g, tool.name, tool.max, now);
        if (!calls.result.allowed) return change.end({ check: change.take(calls), wallClock });
        if (grant === null) change.take(calls);
        else change.hold(calls);
      }
      const reservation = change.take(decideReservation(core, g, planId, id, micros, now, expiresAt, caps));
      const { check } = reservation;
      return reservation.allowed
        ? change.end({ check, wallClock, reservation }, true)
        : change.end({ check, wallClock });
    });
    return notices.after(core.update(planId, decide, options));
  });
}

/** Normalized operation names, in the order given: `field[i]` names a bad one. */
function operationList(core: ServiceCore, value: unknown, field: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) invalid(field, 'a list of operation names', value);
  return value.map((op, i) => normalizeOperation(op, `${field}[${i}]`, core.limits.maxOperationNameLength));
}

/** See {@link AutonomyGuardrailService.openToolCall}. */
export function openToolCall(
  core: ServiceCore,
  planId: string,
  call: ToolCallOpen,
): Promise<ToolCallOpened | null> {
  return core.checking(E.BUDGET_BLOCKED, openedOf, () => {
    validatePlanId(planId);
    const o = objectWithKeys(call, 'call', [
      'wallClock',
      'currentCalls',
      'operations',
      'alwaysRequire',
      'tool',
      'estimate',
      'reservationId',
    ]);
    const withWall = o['wallClock'] ?? false;
    if (typeof withWall !== 'boolean') invalid('wallClock', 'a boolean', withWall);
    const { tool, current, micros, id } = callParts(o);
    const ops = operationList(core, o['operations'], 'operations');
    const always = operationList(core, o['alwaysRequire'], 'alwaysRequire');
    const now = core.now();
    const expiresAt = core.reservationExpiry(now);
    return core.update(
      planId,
      (g, _approval, caps): PlanChange<ToolCallOpened | null> => {
        if (!g) return { result: null };
        const change = new ToolCallChange(null);
        const wallClock = withWall ? change.take(decideWallClock(core, g, now)) : undefined;
        const end = (check: GuardCheck, reservation?: BudgetReservation) =>
          change.end<ToolCallOpened>({
            check,
            ...(wallClock === undefined ? {} : { wallClock }),
            ...(reservation === undefined ? {} : { reservation }),
          });
        if (wallClock !== undefined && !wallClock.allowed) return end(wallClock);
        if (current !== null) {
          const actor = change.take(decideActorCalls(core, g, current, now));
          if (!actor.allowed) return end(actor);
        }
        for (const op of ops) {
          const asked = change.take(decideOperation(core, g, op, always.includes(op), now));
          if (!asked.allowed) return end(asked);
        }
        if (tool) {
          const calls = change.take(decideToolCalls(core, g, tool.name, tool.max, now));
          if (!calls.allowed) return end(calls);
        }
        const reservation = change.take(decideReservation(core, g, planId, id, micros, now, expiresAt, caps));
        return end(reservation.check, reservation.allowed ? reservation : undefined);
      },
      { capsAt: now },
    );
  });
}
