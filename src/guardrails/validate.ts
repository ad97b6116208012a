import { describeValue, GuardrailValidationError, invalid } from '../errors.js';
import { isPlainObject } from '../json.js';
import { refuseUnknownKeys } from '../validation.js';

/** An integer in [min, MAX_SAFE_INTEGER], or null when `nullable`. */
export function intField(value: unknown, field: string, min: number, nullable: boolean): number | null {
  if (value === null && nullable) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    invalid(field, `an integer >= ${min}`, value);
  }
  return value + 0; // + 0 turns -0 into 0
}

/**
 * Checks that `value` is undefined or a plain object holding only `allowed` keys, so that a misspelt
 * option (`maxStep: 5`) is an error instead of a silently missing limit.
 */
export function objectWithKeys(
  value: unknown,
  field: string,
  allowed: readonly string[],
  keyPrefix?: string,
): Record<string, unknown> {
  if (value === undefined) return {};
  if (!isPlainObject(value)) {
    throw new GuardrailValidationError(field, `${field} must be an object, got ${describeValue(value)}`);
  }
  refuseUnknownKeys(value, allowed, keyPrefix ?? `${field}.`);
  return value;
}

/** Throws the error for a required key that is absent. */
export function missing(field: string): never {
  throw new GuardrailValidationError(field, `${field} is missing`);
}
