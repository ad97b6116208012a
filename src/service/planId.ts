import { describeValue, GuardrailValidationError } from '../errors.js';

/** Longest plan id accepted. */
export const MAX_PLAN_ID_LENGTH = 256;

/** A plan id is a non-empty string of at most 256 characters without control characters. */
export function validatePlanId(planId: unknown): string {
  if (
    typeof planId !== 'string' ||
    planId.length === 0 ||
    planId.length > MAX_PLAN_ID_LENGTH ||
    !plainText(planId)
  ) {
    throw new GuardrailValidationError(
      'plan_id',
      `plan_id must be a non-empty string of at most ${MAX_PLAN_ID_LENGTH} characters without control characters or lone surrogates, got ${describeValue(planId)}`,
    );
  }
  return planId;
}

/**
 * True when `text` holds no control character and no lone surrogate (databases store one as U+FFFD,
 * so two different ids would meet in one row). A loop, not a regex: every check validates its plan id.
 */
function plainText(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return false;
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = text.charCodeAt(i + 1);
      if (c > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) return false;
      i++; // a whole pair
    }
  }
  return true;
}
