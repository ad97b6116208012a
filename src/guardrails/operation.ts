import { describeValue, GuardrailValidationError } from '../errors.js';

// Control (Cc), format (Cf) and other default-ignorable characters (variation selectors, Hangul fillers)
// are invisible, so they let two names that look the same compare different.
const HIDDEN = /[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]/u;
// Printable ASCII holds nothing hidden and NFKC leaves it as it is: the common case skips both.
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/**
 * The form in which operation names are compared: NFKC-normalized, trimmed, lower-cased. A name holding
 * control or invisible format characters, or nothing but space, is refused rather than silently treated
 * as "not required".
 *
 * @example
 * normalizeOperation(' ＤＥＰＬＯＹ ') === 'deploy'
 */
export function normalizeOperation(value: unknown, field = 'operation', maxLength?: number): string {
  if (typeof value !== 'string') {
    throw new GuardrailValidationError(field, `${field} must be a string, got ${describeValue(value)}`);
  }
  const ascii = PRINTABLE_ASCII.test(value);
  if (!ascii && HIDDEN.test(value)) {
    throw new GuardrailValidationError(
      field,
      `${field} must not contain control or invisible format characters, got ${describeValue(value)}`,
    );
  }
  const normalized = (ascii ? value : value.normalize('NFKC')).trim().toLowerCase();
  if (normalized.length === 0) {
    throw new GuardrailValidationError(field, `${field} must not be empty, got ${describeValue(value)}`);
  }
  if (!ascii && HIDDEN.test(normalized)) {
    throw new GuardrailValidationError(
      field,
      `${field} must not contain control or invisible format characters, got ${describeValue(value)}`,
    );
  }
  if (maxLength !== undefined && normalized.length > maxLength) {
    throw new GuardrailValidationError(
      field,
      `${field} must be at most ${maxLength} characters, got ${describeValue(value)}`,
    );
  }
  return normalized;
}
