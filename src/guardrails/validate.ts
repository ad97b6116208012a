import { describeValue, GuardrailValidationError, invalid } from '../errors.js';
import { isPlainObject } from '../json.js';

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
  // for-in, not Object.keys: no array per call, and options are checked on every guarded call. A plain
  // object inherits no enumerable key, and a key it inherits is not its own: only own keys are checked.
  for (const key in value) {
    if (!allowed.includes(key) && Object.hasOwn(value, key)) {
      const path = `${keyPrefix ?? `${field}.`}${key}`;
      throw new GuardrailValidationError(path, `${path} is not a known field (known: ${allowed.join(', ')})`);
    }
  }
  return value;
}

/** Throws the error for a required key that is absent. */
export function missing(field: string): never {
  throw new GuardrailValidationError(field, `${field} is missing`);
}
