import { describeValue, GuardrailValidationError } from './errors.js';
import { isWellFormed } from './unicode.js';

export { isWellFormed, toWellFormed } from './unicode.js';

/** A value that survives `JSON.stringify` → `JSON.parse` unchanged. */
export type JsonValue =
  null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };
export type JsonObject = { readonly [key: string]: JsonValue };

/** Nesting deeper than this is refused rather than walked, so hostile input cannot exhaust the stack. */
export const MAX_JSON_DEPTH = 32;

const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Throws the error for a string that is not {@link isWellFormed}, naming `field` and showing the first
 * lone surrogate escaped (`\udc00`), with where it is. `what` begins the message (default `field`).
 */
export function notWellFormed(text: string, field: string, what = field): never {
  const at = LONE_SURROGATE.exec(text)?.index ?? 0;
  const unit = `\\u${text.charCodeAt(at).toString(16).padStart(4, '0')}`;
  throw new GuardrailValidationError(
    field,
    `${what} must be well-formed Unicode, but holds a lone surrogate (${unit} at index ${at}), got ${describeValue(text)}`,
  );
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Copies an untrusted JSON object into a fresh, deeply frozen one, checking every value is JSON.
 * Keys such as `__proto__` and `constructor` become ordinary own properties: they never reach a prototype.
 * Returns the copy and its serialized size in UTF-8 bytes.
 */
export function copyJsonObject(value: unknown, path: string): { value: JsonObject; bytes: number } {
  if (!isPlainObject(value)) {
    throw new GuardrailValidationError(path, `${path} must be a JSON object, got ${describeValue(value)}`);
  }
  const copy = copyJson(value, { parent: null, key: path }, 0) as JsonObject;
  return { value: copy, bytes: Buffer.byteLength(JSON.stringify(copy), 'utf8') };
}

/** Copies an untrusted JSON value (of any kind) into a fresh, deeply frozen one; see {@link copyJsonObject}. */
export function copyJsonValue(value: unknown, path: string): JsonValue {
  return copyJson(value, { parent: null, key: path }, 0);
}

function copyJson(value: unknown, at: At, depth: number): JsonValue {
  if (depth > MAX_JSON_DEPTH) {
    const path = pathOf(at);
    throw new GuardrailValidationError(path, `${path} nests deeper than ${MAX_JSON_DEPTH} levels`);
  }
  switch (typeof value) {
    case 'string':
      if (!isWellFormed(value)) notWellFormed(value, pathOf(at));
      return value;
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) {
        const path = pathOf(at);
        throw new GuardrailValidationError(
          path,
          `${path} must be a finite number, got ${describeValue(value)}`,
        );
      }
      return value + 0; // + 0 turns -0 into 0, as JSON would
    case 'object': {
      if (value === null) return null;
      if (Array.isArray(value)) {
        const out: JsonValue[] = [];
        for (let i = 0; i < value.length; i++)
          out.push(copyJson(value[i], { parent: at, key: i }, depth + 1));
        return Object.freeze(out);
      }
      if (!isPlainObject(value)) {
        const path = pathOf(at);
        throw new GuardrailValidationError(path, `${path} must be plain JSON, got ${describeValue(value)}`);
      }
      const out: Record<string, JsonValue> = {};
      for (const key of Object.keys(value)) {
        if (!isWellFormed(key)) notWellFormed(key, pathOf(at), `a key of ${pathOf(at)}`);
        const copy = copyJson(value[key], { parent: at, key }, depth + 1);
        // `__proto__` assigned would set the prototype: defined, it is an ordinary own property.
        if (key === '__proto__') {
          Object.defineProperty(out, key, {
            value: copy,
            enumerable: true,
            writable: true,
            configurable: true,
          });
        } else out[key] = copy;
      }
      return Object.freeze(out);
    }
    default: {
      const path = pathOf(at);
      throw new GuardrailValidationError(path, `${path} must be plain JSON, got ${describeValue(value)}`);
    }
  }
}

/**
 * The canonical JSON text of a JSON value (RFC 8785): object keys sorted by UTF-16 code units, no
 * white space, numbers and strings as ECMAScript's JSON.stringify writes them. Two values that are equal
 * as JSON give the same text, whatever order their keys were written in. Values nest at most
 * {@link MAX_JSON_DEPTH} levels deep.
 * @throws GuardrailValidationError for anything that is not finite, plain JSON, for a string or key
 * holding a lone surrogate (RFC 8785 makes it an error), and for nesting deeper than MAX_JSON_DEPTH
 */
export function canonicalJson(value: unknown, path = 'value'): string {
  return canonical(value, { parent: null, key: path }, 0);
}

/** Where a value sits, as a chain of keys: the path text is built only for an error message. */
interface At {
  readonly parent: At | null;
  readonly key: string | number;
}

function pathOf(at: At): string {
  const key = at.key;
  if (at.parent === null) return String(key);
  return typeof key === 'number' ? `${pathOf(at.parent)}[${key}]` : `${pathOf(at.parent)}.${key}`;
}

function canonical(value: unknown, at: At, depth: number): string {
  if (depth > MAX_JSON_DEPTH) {
    const path = pathOf(at);
    throw new GuardrailValidationError(path, `${path} nests deeper than ${MAX_JSON_DEPTH} levels`);
  }
  if (typeof value === 'string') {
    if (!isWellFormed(value)) notWellFormed(value, pathOf(at));
    return JSON.stringify(value);
  }
  if (value === null || typeof value === 'boolean') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) {
      const path = pathOf(at);
      throw new GuardrailValidationError(
        path,
        `${path} must be a finite number, got ${describeValue(value)}`,
      );
    }
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    const parts: string[] = [];
    // An index loop, not map: map skips the holes of a sparse array, which JSON cannot hold.
    for (let i = 0; i < value.length; i++) {
      if (!(i in value)) {
        const path = pathOf({ parent: at, key: i });
        throw new GuardrailValidationError(path, `${path} is a hole in the array`);
      }
      parts.push(canonical(value[i], { parent: at, key: i }, depth + 1));
    }
    return `[${parts.join(',')}]`;
  }
  if (isPlainObject(value)) {
    const keys = Object.keys(value).sort();
    const parts: string[] = [];
    for (const k of keys) {
      if (!isWellFormed(k)) notWellFormed(k, pathOf(at), `a key of ${pathOf(at)}`);
      parts.push(`${JSON.stringify(k)}:${canonical(value[k], { parent: at, key: k }, depth + 1)}`);
    }
    return `{${parts.join(',')}}`;
  }
  const path = pathOf(at);
  throw new GuardrailValidationError(path, `${path} must be plain JSON, got ${describeValue(value)}`);
}
