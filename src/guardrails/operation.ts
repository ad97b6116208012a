import { describeValue, GuardrailValidationError } from '../errors.js';
import { isWellFormed, notWellFormed } from '../json.js';
import { hasHiddenCharacters } from '../unicode.js';

// Printable ASCII holds nothing hidden and NFKC leaves it as it is: the common case skips both.
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/**
 * The form in which operation names are compared: NFKC-normalized, trimmed, lower-cased. A name holding
 * control or invisible format characters, a lone surrogate, or nothing but space, is refused rather than
 * silently treated as "not required".
 *
 * @example
 * normalizeOperation(' ＤＥＰＬＯＹ ') === 'deploy'
 */
export function normalizeOperation(value: unknown, field = 'operation', maxLength?: number): string {
  if (typeof value !== 'string') {
    throw new GuardrailValidationError(field, `${field} must be a string, got ${describeValue(value)}`);
  }
  const ascii = PRINTABLE_ASCII.test(value);
  // Before NFKC, so the error shows the name as it was given: a lone surrogate cannot be hashed (RFC 8785).
  if (!ascii && !isWellFormed(value)) notWellFormed(value, field);
  if (!ascii && hasHiddenCharacters(value)) {
    throw new GuardrailValidationError(
      field,
      `${field} must not contain control or invisible format characters, got ${describeValue(value)}`,
    );
  }
  const normalized = ascii ? value.trim().toLowerCase() : foldToFixpoint(value).trim();
  if (normalized.length === 0) {
    throw new GuardrailValidationError(field, `${field} must not be empty, got ${describeValue(value)}`);
  }
  if (!ascii && hasHiddenCharacters(normalized)) {
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

/**
 * NFKC and lower-casing each can undo the other's work ("H\u0331" lower-cases to "h\u0331", which NFKC
 * composes to "ẖ"; NFKC turns "ℌ" into "H"), so one pass of each is not a stable form. Repeat until
 * nothing changes, so that a name normalized twice compares equal to itself.
 */
function foldToFixpoint(value: string): string {
  let current = value;
  for (let i = 0; i < 8; i++) {
    const next = current.normalize('NFKC').toLowerCase();
    if (next === current) return current;
    current = next;
  }
  return current;
}

/**
 * The reason of a confirmation check, the one wording for a plan's checks and the service's requests:
 * `operation "deploy" requires confirmation`, `operations "deploy" and "shell" require confirmation`, or
 * with `required` false `… does not require` / `… do not require`.
 */
export function confirmationReason(ops: readonly string[], required: boolean): string {
  const quoted = ops.map((op) => `"${op}"`);
  const names =
    quoted.length === 1
      ? `operation ${quoted[0] as string}`
      : `operations ${quoted.slice(0, -1).join(', ')} and ${quoted[quoted.length - 1] as string}`;
  const verb = quoted.length === 1 ? 'requires' : 'require';
  return `${names} ${required ? verb : `do${quoted.length === 1 ? 'es' : ''} not require`} confirmation`;
}
