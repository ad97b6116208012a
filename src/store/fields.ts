import { invalid } from '../errors.js';
import { intField } from '../guardrails/validate.js';
import { canonicalIso } from '../iso.js';
import { isPlainText } from '../unicode.js';

// How a store checks the fields of the people and the notifications it keeps: what it could not keep
// as given, or would read back as something else, is refused before anything is written, naming the
// field. The same checks read a row back, so that a row no writer could have written is found.

/** Longest id or name a store keeps in these records. */
export const MAX_NAME_LENGTH = 1024;

// NUL ends a C string and a lone surrogate is stored as U+FFFD: either would change what is kept.
const LONE_SURROGATE = /\p{Cs}/u;

/** Any text a database keeps as it is: well-formed Unicode without NUL. */
export function storedText(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.includes('\0') || LONE_SURROGATE.test(value)) {
    invalid(field, 'a string of well-formed Unicode without NUL', value);
  }
  return value;
}

/** An id or a name: 1 to {@link MAX_NAME_LENGTH} characters, none a control character. */
export function storedName(value: unknown, field: string): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > MAX_NAME_LENGTH ||
    !isPlainText(value)
  ) {
    invalid(field, `a string of 1 to ${MAX_NAME_LENGTH} characters without control characters`, value);
  }
  return value;
}

/** A list of names (see {@link storedName}), copied and frozen. */
export function storedNames(value: unknown, field: string): readonly string[] {
  if (!Array.isArray(value)) invalid(field, 'an array of names', value);
  return Object.freeze(value.map((v: unknown, i) => storedName(v, `${field}[${i}]`)));
}

/** A time, kept in canonical ISO-8601 UTC form so that stores compare times as text. */
export function storedTime(value: unknown, field: string): string {
  return canonicalIso(value, field);
}

/** An integer in [min, max]. */
export function storedInteger(value: unknown, field: string, min: number, max: number): number {
  const n = intField(value, field, min, false) as number;
  if (n > max) invalid(field, `an integer from ${min} to ${max}`, value);
  return n;
}

/** One of `allowed`. */
export function oneOf<T extends string>(value: unknown, field: string, allowed: readonly T[]): T {
  if (!allowed.includes(value as T)) invalid(field, `one of ${allowed.join(', ')}`, value);
  return value as T;
}

/** `{ [key]: check(value) }` for a value given, `{}` for an absent one (undefined). */
export function optional<K extends string, T>(
  key: K,
  value: unknown,
  check: (value: unknown) => T,
): { [P in K]?: T } {
  return (value === undefined ? {} : { [key]: check(value) }) as { [P in K]?: T };
}
