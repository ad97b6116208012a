// Ids every layer checks, from the lowest up: a plan id names a plan in the store, the log and the API.
import { describeValue, GuardrailValidationError } from './errors.js';
import { isPlainText } from './unicode.js';

/** Longest plan id accepted. */
export const MAX_PLAN_ID_LENGTH = 256;

/** The plan id validatePlanId last found valid. */
let lastValid: string | undefined;

/** A plan id is a non-empty string of at most 256 characters without control characters. */
export function validatePlanId(planId: unknown): string {
  // Every check validates its plan id, most often the one just validated: strings cannot change.
  if (lastValid !== undefined && planId === lastValid) return lastValid;
  if (
    typeof planId !== 'string' ||
    planId.length === 0 ||
    planId.length > MAX_PLAN_ID_LENGTH ||
    !isPlainText(planId)
  ) {
    throw new GuardrailValidationError(
      'plan_id',
      `plan_id must be a non-empty string of at most ${MAX_PLAN_ID_LENGTH} characters without control characters or lone surrogates, got ${describeValue(planId)}`,
    );
  }
  lastValid = planId;
  return planId;
}
