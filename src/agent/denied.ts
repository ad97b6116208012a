import type { GuardCheck } from '../GuardCheck.js';

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
