/** What a guard decided, as recorded in the audit trail. Wire values are the spec's snake_case names. */
export const GuardrailEventType = Object.freeze({
  STEP_ALLOWED: 'step_allowed',
  STEP_BLOCKED: 'step_blocked',
  BUDGET_ALLOWED: 'budget_allowed',
  BUDGET_BLOCKED: 'budget_blocked',
  CONFIRMATION_REQUIRED: 'confirmation_required',
  CONFIRMATION_NOT_REQUIRED: 'confirmation_not_required',
  WALL_CLOCK_ALLOWED: 'wall_clock_allowed',
  WALL_CLOCK_BLOCKED: 'wall_clock_blocked',
  ACTOR_TOOL_CALLS_ALLOWED: 'actor_tool_calls_allowed',
  ACTOR_TOOL_CALLS_BLOCKED: 'actor_tool_calls_blocked',
  RETRY_ALLOWED: 'retry_allowed',
  RETRY_BLOCKED: 'retry_blocked',
  /** Budget set aside for a call in flight. */
  BUDGET_RESERVED: 'budget_reserved',
  /** A reservation settled at the call's actual cost, within the budget. */
  BUDGET_COMMITTED: 'budget_committed',
  /** A reservation given back unspent (the call failed or was not made). */
  BUDGET_RELEASED: 'budget_released',
  /** A call cost more than the budget had left: recorded, and the plan stops. */
  BUDGET_OVERRUN: 'budget_overrun',
  /** A person approved a pending confirmation. */
  CONFIRMATION_APPROVED: 'confirmation_approved',
  /** A person denied a pending confirmation. */
  CONFIRMATION_DENIED: 'confirmation_denied',
  /** An approval was used, once, for the decision it was given for. */
  CONFIRMATION_GRANT_USED: 'confirmation_grant_used',
  /** An approval could not be used: expired, already used, or for other input. */
  CONFIRMATION_GRANT_REFUSED: 'confirmation_grant_refused',
  /** A person approved towards a rule's quorum, which is not reached yet: the approval stays pending. */
  CONFIRMATION_VOTE: 'confirmation_vote',
  /** A decision the approval's rule does not count (not an approver, the requester, twice, too late). */
  CONFIRMATION_VOTE_REFUSED: 'confirmation_vote_refused',
  /** An approval nobody decided in time, denied by its rule's `on_timeout`. */
  CONFIRMATION_EXPIRED: 'confirmation_expired',
  /** A tool call within the tool's calls-per-plan limit. */
  TOOL_CALLS_ALLOWED: 'tool_calls_allowed',
  /** A tool call past the tool's calls-per-plan limit. */
  TOOL_CALLS_BLOCKED: 'tool_calls_blocked',
  /** A spend cap shared by several plans (a team's monthly budget, say) cannot cover the amount. */
  BUDGET_CAP_BLOCKED: 'budget_cap_blocked',
  /** Spending in a cap's window reached one of its `alert_at` fractions: recorded once per window. */
  BUDGET_CAP_ALERT: 'budget_cap_alert',
} as const);
export type GuardrailEventType = (typeof GuardrailEventType)[keyof typeof GuardrailEventType];

/** A check either allows or denies; there is no third answer. */
export const GuardrailResult = Object.freeze({ ALLOWED: 'allowed', DENIED: 'denied' } as const);
export type GuardrailResult = (typeof GuardrailResult)[keyof typeof GuardrailResult];

export type GuardName =
  | 'step_limit'
  | 'tool_budget'
  | 'confirmation'
  | 'wall_clock'
  | 'actor_tool_calls'
  | 'retry_limit'
  | 'tool_calls_per_plan';

export const GUARD_NAMES: readonly GuardName[] = Object.freeze([
  'step_limit',
  'tool_budget',
  'confirmation',
  'wall_clock',
  'actor_tool_calls',
  'retry_limit',
  'tool_calls_per_plan',
]);

interface EventInfo {
  readonly guardName: GuardName;
  readonly result: GuardrailResult;
}

const { ALLOWED, DENIED } = GuardrailResult;

/** Each event type belongs to exactly one guard and implies exactly one result. */
export const EVENT_INFO: Readonly<Record<GuardrailEventType, EventInfo>> = Object.freeze({
  step_allowed: { guardName: 'step_limit', result: ALLOWED },
  step_blocked: { guardName: 'step_limit', result: DENIED },
  budget_allowed: { guardName: 'tool_budget', result: ALLOWED },
  budget_blocked: { guardName: 'tool_budget', result: DENIED },
  confirmation_not_required: { guardName: 'confirmation', result: ALLOWED },
  confirmation_required: { guardName: 'confirmation', result: DENIED },
  wall_clock_allowed: { guardName: 'wall_clock', result: ALLOWED },
  wall_clock_blocked: { guardName: 'wall_clock', result: DENIED },
  actor_tool_calls_allowed: { guardName: 'actor_tool_calls', result: ALLOWED },
  actor_tool_calls_blocked: { guardName: 'actor_tool_calls', result: DENIED },
  retry_allowed: { guardName: 'retry_limit', result: ALLOWED },
  retry_blocked: { guardName: 'retry_limit', result: DENIED },
  budget_reserved: { guardName: 'tool_budget', result: ALLOWED },
  budget_committed: { guardName: 'tool_budget', result: ALLOWED },
  budget_released: { guardName: 'tool_budget', result: ALLOWED },
  budget_overrun: { guardName: 'tool_budget', result: DENIED },
  confirmation_approved: { guardName: 'confirmation', result: ALLOWED },
  confirmation_denied: { guardName: 'confirmation', result: DENIED },
  confirmation_grant_used: { guardName: 'confirmation', result: ALLOWED },
  confirmation_grant_refused: { guardName: 'confirmation', result: DENIED },
  confirmation_vote: { guardName: 'confirmation', result: ALLOWED },
  confirmation_vote_refused: { guardName: 'confirmation', result: DENIED },
  confirmation_expired: { guardName: 'confirmation', result: DENIED },
  tool_calls_allowed: { guardName: 'tool_calls_per_plan', result: ALLOWED },
  tool_calls_blocked: { guardName: 'tool_calls_per_plan', result: DENIED },
  budget_cap_blocked: { guardName: 'tool_budget', result: DENIED },
  budget_cap_alert: { guardName: 'tool_budget', result: ALLOWED },
});

export function isGuardrailEventType(value: unknown): value is GuardrailEventType {
  return typeof value === 'string' && Object.hasOwn(EVENT_INFO, value);
}

export function isGuardName(value: unknown): value is GuardName {
  return typeof value === 'string' && (GUARD_NAMES as readonly string[]).includes(value);
}
