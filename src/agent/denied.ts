import { GuardrailEventType as E } from '../events.js';
import type { GuardCheck } from '../GuardCheck.js';

/** Denials after which no call of the run can go on: the limits that end a run. */
const ENDS_THE_RUN: ReadonlySet<string> = new Set([
  E.BUDGET_BLOCKED,
  // A cap across plans used up ends the run as its own budget would: no call that costs can go on.
  E.BUDGET_CAP_BLOCKED,
  E.STEP_BLOCKED,
  E.WALL_CLOCK_BLOCKED,
  E.ACTOR_TOOL_CALLS_BLOCKED,
]);

/**
 * Whether `check` is a limit that ends the run (the budget or a spend cap across plans, the steps, the
 * wall clock, its calls).
 */
export function endsTheRun(check: { readonly eventType: string }): boolean {
  return ENDS_THE_RUN.has(check.eventType);
}

/** What a model reads in place of a refused call's result: which check refused it, and why. */
export function deniedText(check: GuardCheck): string {
  return `leash denied this call (${check.eventType}): ${check.reason}`;
}

/** How the last message of a run a limit ended begins. */
export const ENDED_PREFIX = 'leash ended the run (';

/** The last message of a run a limit ended: which limit, and why. */
export function endedText(check: GuardCheck): string {
  return `${ENDED_PREFIX}${check.eventType}): ${check.reason}`;
}
