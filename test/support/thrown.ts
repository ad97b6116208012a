import { GuardrailValidationError } from '../../src/errors.js';

/** Runs `fn` and returns the GuardrailValidationError it throws; fails the test on anything else. */
export function thrown(fn: () => unknown): GuardrailValidationError {
  try {
    fn();
  } catch (e) {
    if (e instanceof GuardrailValidationError) return e;
    throw e;
  }
  throw new Error('expected a GuardrailValidationError, but nothing was thrown');
}

/** The `field` of the GuardrailValidationError that `fn` throws. */
export function fieldOf(fn: () => unknown): string | undefined {
  return thrown(fn).field;
}
