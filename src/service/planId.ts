import { describeValue, GuardrailValidationError } from '../errors.js';

/** Longest plan id accepted. */
export const MAX_PLAN_ID_LENGTH = 256;

/** A plan id is a non-empty string of at most 256 characters without control characters. */
export function validatePlanId(planId: unknown): string {
  if (
    typeof planId !== 'string' ||
    planId.length === 0 ||
    planId.length > MAX_PLAN_ID_LENGTH ||
    hasControl(planId)
  ) {
    throw new GuardrailValidationError(
      'plan_id',
      `plan_id must be a non-empty string of at most ${MAX_PLAN_ID_LENGTH} characters without control characters, got ${describeValue(planId)}`,
    );
  }
  return planId;
}

/** True when `text` holds a control character (Unicode category Cc: U+0000-U+001F, U+007F-U+009F). */
function hasControl(text: string): boolean {
  // A loop, not /\p{Cc}/u: every check validates its plan id, and this is several times cheaper.
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return true;
  }
  return false;
}
