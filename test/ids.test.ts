import { describe, expect, it } from 'vitest';
import { GuardrailValidationError } from '../src/errors.js';
import { validatePlanId } from '../src/ids.js';

describe('validatePlanId', () => {
  it('refuses a missing plan id before any was checked', () => {
    expect(() => validatePlanId(undefined)).toThrow(GuardrailValidationError);
  });

  it('accepts the same plan id checked again', () => {
    expect(validatePlanId('plan-1')).toBe('plan-1');
    expect(validatePlanId('plan-1')).toBe('plan-1');
  });

  it('refuses a bad plan id right after a good one', () => {
    validatePlanId('plan-1');
    expect(() => validatePlanId('plan\u0000-1')).toThrow(/plan_id must be a non-empty string/);
    expect(() => validatePlanId(undefined)).toThrow(GuardrailValidationError);
  });
});
