import type { GuardCheck } from './GuardCheck.js';
import { toWellFormed } from './unicode.js';

const BRAND = Symbol.for('leash.GuardrailError');

/** Every code a leash error carries: branch on it rather than on the message. */
export type GuardrailErrorCode =
  /** Bad input: a configuration, an amount, a name or serialized state leash refuses. */
  | 'GUARDRAIL_VALIDATION'
  /** A guard said no in a way that ends a run. */
  | 'GUARDRAIL_VIOLATION'
  /** A person approved an approval a second time, towards a quorum of distinct people. */
  | 'APPROVAL_ALREADY_VOTED'
  | 'APPROVAL_EXPIRED'
  | 'APPROVAL_ID_TAKEN'
  /** A person the approval's rule does not name among its approvers. */
  | 'APPROVAL_NOT_ALLOWED'
  | 'APPROVAL_NOT_FOUND'
  | 'APPROVAL_NOT_PENDING'
  /** The person who asked for an approval, approving it, where the rule does not allow it. */
  | 'APPROVAL_SELF'
  /** A decision that must come from a verified person (a personal token, a sign-in) came from a typed name. */
  | 'IDENTITY_REQUIRED'
  /** No spend cap with the id asked for. */
  | 'CAP_NOT_FOUND'
  /** A tool call's `callTool` after its invocation ended. */
  | 'INVOCATION_ENDED'
  /** No queued notification with the id a dispatcher reported on. */
  | 'NOTIFICATION_NOT_FOUND'
  | 'PLAN_CLAIMED'
  | 'PLAN_DOCUMENT_CONFLICT'
  | 'PLAN_NOT_FOUND'
  /** A guarded call of a plan nobody configured, where that is refused (a run guard's default). */
  | 'PLAN_NOT_CONFIGURED'
  | 'PLAN_NOT_PAUSED'
  | 'PLAN_NOT_RUNNABLE'
  | 'PLAN_NOT_RUNNING'
  /** No principal (a person who may decide) with the id asked for. */
  | 'PRINCIPAL_NOT_FOUND'
  /** A principal that was revoked: it may not sign in, decide, or get new tokens. */
  | 'PRINCIPAL_REVOKED'
  | 'RESERVATION_NOT_OPEN'
  | 'RUN_INTERRUPTED'
  | 'STORE_CLOSED'
  /** A store broke the GuardrailStore contract. */
  | 'STORE_CONTRACT'
  | 'STORE_CORRUPT'
  | 'STORE_DRIVER_MISSING'
  | 'STORE_NOT_FOUND'
  | 'STORE_NOT_MIGRATED'
  | 'STORE_NO_LOG'
  | 'STORE_SCHEMA_TOO_NEW'
  | 'STORE_UNAVAILABLE'
  /** The store does not implement what was asked (a custom store without the methods of principals). */
  | 'STORE_UNSUPPORTED'
  /** A personal token past its expiry. */
  | 'TOKEN_EXPIRED'
  /** A personal token whose hash another token already has. */
  | 'TOKEN_HASH_TAKEN'
  /** Not a personal token this store knows. */
  | 'TOKEN_INVALID'
  /** No personal token with the id asked for. */
  | 'TOKEN_NOT_FOUND'
  /** A personal token that was revoked. */
  | 'TOKEN_REVOKED'
  /** The `leash` command was used wrongly (its exit code 2). */
  | 'USAGE';

/**
 * Base of every error leash throws on purpose. `code` is a stable literal to branch on.
 * Use {@link isGuardrailError} rather than `instanceof`: it also recognises errors from another copy of
 * the package.
 */
export class GuardrailError extends Error {
  readonly code: GuardrailErrorCode;
  readonly [BRAND] = true;

  constructor(code: GuardrailErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = 'GuardrailError';
  }
}

/**
 * Bad input: a configuration, an amount, an operation name or serialized state that leash refuses.
 * `field` names what was wrong (a wire path such as `autonomy_guardrails.audit_trail.entries[3].result`).
 */
export class GuardrailValidationError extends GuardrailError {
  override readonly code = 'GUARDRAIL_VALIDATION' as const;
  readonly field: string | undefined;

  constructor(field: string | undefined, message: string, options?: { cause?: unknown }) {
    super('GUARDRAIL_VALIDATION', message, options);
    this.name = 'GuardrailValidationError';
    this.field = field;
  }
}

/** A guard said no in a way that ends a run; carries the check that denied. */
export class GuardrailViolationError extends GuardrailError {
  override readonly code = 'GUARDRAIL_VIOLATION' as const;
  readonly check: GuardCheck;

  constructor(check: GuardCheck, options?: { cause?: unknown }) {
    super('GUARDRAIL_VIOLATION', `${check.guardName}: ${check.reason}`, options);
    this.name = 'GuardrailViolationError';
    this.check = check;
  }
}

const OUTCOME_UNKNOWN = Symbol.for('leash.StoreOutcomeUnknownError');

/**
 * A store lost the database while a change was on its way, so the change may or may not have been
 * committed. Its code is `STORE_UNAVAILABLE`, as for any store that cannot be reached: read the plan's
 * state before acting as if the change happened, or did not.
 */
export class StoreOutcomeUnknownError extends GuardrailError {
  readonly [OUTCOME_UNKNOWN] = true;

  constructor(message: string, options?: { cause?: unknown }) {
    super('STORE_UNAVAILABLE', message, options);
    this.name = 'StoreOutcomeUnknownError';
  }
}

/** True for a {@link StoreOutcomeUnknownError}, from this or another copy of the package. */
export function isStoreOutcomeUnknownError(e: unknown): e is StoreOutcomeUnknownError {
  return hasBrand(e) && (e as { [OUTCOME_UNKNOWN]?: unknown })[OUTCOME_UNKNOWN] === true;
}

function hasBrand(e: unknown): e is GuardrailError {
  return typeof e === 'object' && e !== null && (e as { [BRAND]?: unknown })[BRAND] === true;
}

/** True for any leash error, including one thrown by another copy of the package. */
export function isGuardrailError(e: unknown): e is GuardrailError {
  return hasBrand(e);
}

/** True for a {@link GuardrailValidationError}, from this or another copy of the package. */
export function isGuardrailValidationError(e: unknown): e is GuardrailValidationError {
  return hasBrand(e) && e.code === 'GUARDRAIL_VALIDATION';
}

/** True for a {@link GuardrailViolationError}, from this or another copy of the package. */
export function isGuardrailViolationError(e: unknown): e is GuardrailViolationError {
  return hasBrand(e) && e.code === 'GUARDRAIL_VIOLATION';
}

/** The message of an error, or the error itself as text; never throws. */
export function errorText(e: unknown): string {
  if (e instanceof Error) return e.message;
  try {
    return String(e);
  } catch {
    return describeValue(e);
  }
}

/** Renders a bad value for an error message: short, unambiguous, never throws. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'undefined':
      return 'undefined';
    case 'number':
      return Object.is(value, -0) ? '-0' : String(value);
    case 'string': {
      const quoted = JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
      return value.length > 60 ? `${quoted} (${value.length} characters)` : quoted;
    }
    case 'boolean':
    case 'bigint':
      return String(value);
    case 'object':
      try {
        return Array.isArray(value) ? `an array of ${value.length}` : 'an object';
      } catch {
        // A revoked proxy throws even from Array.isArray.
        return 'an object';
      }
    default:
      return `a ${typeof value}`;
  }
}

/** Throws a validation error of the form ``<field> must be <rule>, got <value>``. */
export function invalid(field: string, rule: string, value: unknown): never {
  throw new GuardrailValidationError(field, `${field} must be ${rule}, got ${describeValue(value)}`);
}

/** How much of a tool's error is kept: its last lines, where the exit code's cause usually is. */
export const ERROR_TAIL_LINES = 20;
export const ERROR_TAIL_BYTES = 4096;

/**
 * The end of a text, bounded: its last `maxLines` lines, and of those at most `maxBytes` bytes of UTF-8
 * (whole characters). A text that was cut starts with `…`, which the bound includes. The result is
 * well-formed, as an audit entry must be: a lone surrogate (half of a UTF-16 pair) becomes U+FFFD.
 */
export function textTail(text: string, maxLines: number, maxBytes: number): string {
  // trimEnd and lastIndexOf take time in proportion to the text; a regex such as /\s+$/ would try each
  // run of whitespace to its end, quadratic in a long one not at the end. Only the kept lines are split.
  const trimmed = text.trimEnd();
  const from = lastLinesStart(trimmed, Math.max(1, maxLines));
  let tail = trimmed.slice(from).replace(/\r\n/g, '\n');
  let cut = from > 0;
  const room = Math.max(0, maxBytes - Buffer.byteLength('…', 'utf8'));
  if (Buffer.byteLength(tail, 'utf8') > (cut ? room : maxBytes)) {
    const chars = [...tail];
    let bytes = 0;
    let start = chars.length;
    while (start > 0) {
      const size = Buffer.byteLength(chars[start - 1] as string, 'utf8');
      if (bytes + size > room) break;
      bytes += size;
      start -= 1;
    }
    tail = chars.slice(start).join('');
    cut = true;
  }
  return toWellFormed(cut ? `…${tail}` : tail);
}

/** Where the last `count` lines of `text` start: 0 when it has no more lines than that. */
function lastLinesStart(text: string, count: number): number {
  let end = text.length;
  for (let n = 0; n < count; n++) {
    const newline = end === 0 ? -1 : text.lastIndexOf('\n', end - 1);
    if (newline < 0) return 0;
    end = newline;
  }
  return end + 1;
}

/** The message of an error as {@link textTail} keeps it: its last 20 lines, at most 4 KiB, well-formed. */
export function errorTail(e: unknown): string {
  return textTail(errorText(e), ERROR_TAIL_LINES, ERROR_TAIL_BYTES);
}
