import { describeValue, GuardrailValidationError, invalid } from '../errors.js';
import { isPlainObject, isWellFormed, notWellFormed } from '../json.js';
import type { DeciderIdentity } from '../store/people.js';
import { hasHiddenCharacters } from '../unicode.js';

/** Longest name of who decided, and longest reason, kept in an approval. */
export const MAX_DECIDER_LENGTH = 256;
export const MAX_REASON_LENGTH = 2048;
/** Longest name of the tool an approval is for. */
export const MAX_TOOL_NAME_LENGTH = 256;

// A reason may run over lines, but no other control character (a terminal escape) may reach a screen.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_BUT_LINES = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

/** Who decided and why, as given to `approve` and `deny`. */
export interface Decision {
  /** Who decided: a person's name or handle. */
  readonly by: string;
  /** Why; required for a denial. */
  readonly reason?: string;
  /** Who decided, as verified by whatever signed them in (a personal token, an OpenID Connect sign-in). */
  readonly identity?: DeciderIdentity;
}

/**
 * A person's name as shown and recorded (`by`, a requester): trimmed, 1 to {@link MAX_DECIDER_LENGTH}
 * characters, none of them control or invisible, well-formed.
 */
export function validPersonName(value: unknown, field: string, what: string): string {
  if (
    typeof value !== 'string' ||
    value.trim().length === 0 ||
    value.length > MAX_DECIDER_LENGTH ||
    hasHiddenCharacters(value)
  ) {
    throw new GuardrailValidationError(
      field,
      `${field} must name ${what} (1 to ${MAX_DECIDER_LENGTH} characters, none of them control or invisible), got ${describeValue(value)}`,
    );
  }
  // Names are hashed into the audit log, which cannot hold a lone surrogate (RFC 8785).
  if (!isWellFormed(value)) notWellFormed(value, field);
  return value.trim();
}

/** Validates `{ by, reason }`; a denial must say why. */
export function validDecision(value: unknown, reasonRequired: boolean): { by: string; reason?: string } {
  if (!isPlainObject(value)) {
    throw new GuardrailValidationError('decision', `decision must be an object, got ${describeValue(value)}`);
  }
  const by = validPersonName(value['by'], 'by', 'who decided');
  const reason = value['reason'];
  if (reason === undefined && !reasonRequired) return { by };
  if (
    typeof reason !== 'string' ||
    reason.trim().length === 0 ||
    reason.length > MAX_REASON_LENGTH ||
    CONTROL_BUT_LINES.test(reason)
  ) {
    throw new GuardrailValidationError(
      'reason',
      `reason must be ${reasonRequired ? 'given, as ' : ''}a non-empty string of at most ${MAX_REASON_LENGTH} characters without control characters (line breaks and tabs allowed), got ${describeValue(reason)}`,
    );
  }
  if (!isWellFormed(reason)) notWellFormed(reason, 'reason');
  return { by, reason: reason.trim() };
}

/** Validates the name of the tool an approval is for: shown to people, like who decided. */
export function validToolName(value: unknown): string {
  if (
    typeof value !== 'string' ||
    value.trim().length === 0 ||
    value.length > MAX_TOOL_NAME_LENGTH ||
    hasHiddenCharacters(value)
  ) {
    invalid(
      'toolName',
      `a tool's name of 1 to ${MAX_TOOL_NAME_LENGTH} characters, none of them control or invisible`,
      value,
    );
  }
  if (!isWellFormed(value)) notWellFormed(value, 'toolName');
  return value;
}

/** How an audit entry names the operations of a confirmation: `operation` for one, `operations` for several. */
export function operationsDetail(ops: readonly string[]): { operation: string } | { operations: string[] } {
  return ops.length === 1 ? { operation: ops[0] as string } : { operations: [...ops] };
}
