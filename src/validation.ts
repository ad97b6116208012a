// Checking values against zod schemas: untrusted data (policy and plan files) and the options objects
// of the library's classes, every refusal a GuardrailValidationError naming the path, in the library's
// words: `<path> must be <rule>, got <value>`.
import { z } from 'zod';
import { describeValue, errorText, GuardrailValidationError, isGuardrailValidationError } from './errors.js';
import { isPlainObject } from './json.js';
import { MAX_AMOUNT } from './money.js';

/** What is being read, for error messages. */
export interface Subject {
  /** Names the whole value: the source file, or a noun such as `policy`. */
  readonly root: string;
  /** Put before messages about a part of the value, so they say which file they are about. */
  readonly prefix: string;
  /** Path segments put before every path in the value (`input` makes `argv` read `input.argv`). */
  readonly at: readonly PropertyKey[];
}

/** How {@link validateWith} treats a value. */
export interface ValidateOptions {
  /**
   * How deep the plain-data check descends (default 8). With `refuseDeeper`, a value nesting deeper is
   * refused (where the schema accepts any JSON, so that nothing deep reaches zod's recursion); without,
   * the check stops there, because the schema refuses the value at a shallower level anyway.
   */
  readonly maxDepth?: number;
  readonly refuseDeeper?: boolean;
  /**
   * What a record's key must be, put before the key schema's own rule: `a tool name`; a function of the
   * record's path when records differ.
   */
  readonly keyRule?: string | ((recordPath: readonly PropertyKey[]) => string);
}

/**
 * Checks an untrusted value against `schema` and returns zod's output (a fresh copy). Before zod sees it,
 * the value must be plain data: zod reads inherited properties, accepts a Date or a Map as an object and
 * drops a `__proto__` key of a record without a word. The first issue is reported in the library's words,
 * `<path> must be <rule>, got <value>`, where `<rule>` is the failing check's message.
 */
export function validateWith<S extends z.ZodType>(
  schema: S,
  value: unknown,
  subject: Subject,
  options: ValidateOptions = {},
): z.output<S> {
  try {
    checkPlainData(value, [], 0, new Set(), subject, options);
    const parsed = schema.safeParse(value);
    if (!parsed.success) throw issueError(parsed.error.issues[0], value, subject, options);
    return parsed.data;
  } catch (e) {
    if (isGuardrailValidationError(e)) throw e;
    // A getter that throws or a revoked proxy: unreadable input is still bad input.
    throw refuse(subject, subject.root, `could not be read: ${errorText(e)}`, e);
  }
}

/**
 * The error for `<field> <rest>`. A message about part of a named file starts with the file's name, so
 * it still says which file when it is printed on its own.
 */
export function refuse(
  subject: Subject,
  field: string,
  rest: string,
  cause?: unknown,
): GuardrailValidationError {
  const lead = field === subject.root ? '' : subject.prefix;
  const message = `${lead}${field} ${rest}`;
  return cause === undefined
    ? new GuardrailValidationError(field, message)
    : new GuardrailValidationError(field, message, { cause });
}

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** `tools.shell.cost_per_call`, `guardrails.required_confirmations[2]`, `tools["my.tool"]`. */
export function fieldOf(path: readonly PropertyKey[], subject: Subject): string {
  if (path.length === 0) return subject.root;
  let out = '';
  for (const segment of [...subject.at, ...path]) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (typeof segment === 'string' && PLAIN_KEY.test(segment))
      out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out;
}

// ---- plain data ------------------------------------------------------------------------------------

function checkPlainData(
  value: unknown,
  path: readonly PropertyKey[],
  depth: number,
  seen: Set<object>,
  subject: Subject,
  options: ValidateOptions,
): void {
  if (typeof value !== 'object' || value === null || seen.has(value)) return;
  const maxDepth = options.maxDepth ?? 8;
  if (depth > maxDepth) {
    if (options.refuseDeeper) {
      throw refuse(subject, fieldOf(path, subject), `nests deeper than ${maxDepth} levels`);
    }
    return;
  }
  seen.add(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      checkPlainData(value[i], [...path, i], depth + 1, seen, subject, options);
    }
    return;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    throw refuse(
      subject,
      fieldOf(path, subject),
      `must be plain data (an object, array, string, number, boolean or null), got ${kindOf(value)}`,
    );
  }
  for (const key of Object.keys(value)) {
    if (key === '__proto__') {
      throw refuse(subject, fieldOf(path, subject), 'must not have a "__proto__" key');
    }
    const child = (value as Record<string, unknown>)[key];
    checkPlainData(child, [...path, key], depth + 1, seen, subject, options);
  }
}

type ZodIssue = z.core.$ZodIssue;

/** Renders a zod issue in the library's words: `<path> must be <rule>, got <value>`. */
function issueError(
  issue: ZodIssue | undefined,
  input: unknown,
  subject: Subject,
  options: ValidateOptions,
): GuardrailValidationError {
  if (issue === undefined) return refuse(subject, subject.root, 'is not valid');
  const path = issue.path;
  switch (issue.code) {
    case 'unrecognized_keys': {
      const field = fieldOf([...path, String(issue.keys[0])], subject);
      return refuse(subject, field, `is not a known field (known: ${issue.message})`);
    }
    case 'invalid_key': {
      const inner = issue.issues[0]?.message ?? issue.message;
      const keyRule =
        typeof options.keyRule === 'function' ? options.keyRule(path.slice(0, -1)) : options.keyRule;
      const rule = keyRule === undefined ? inner : `${keyRule}: ${inner}`;
      const key = describeValue(path.at(-1));
      return refuse(subject, fieldOf(path.slice(0, -1), subject), `key must be ${rule}, got ${key}`);
    }
    case 'invalid_union': {
      // A value that got past the top of exactly one branch was meant for that branch: its issue says more
      // than "none of the branches" would.
      const deep = issue.errors
        .map((branch) => branch.find((inner) => inner.path.length > 0))
        .filter((inner) => inner !== undefined);
      const first = deep.length === 1 ? deep[0] : undefined;
      if (first !== undefined) {
        return issueError({ ...first, path: [...path, ...first.path] }, input, subject, options);
      }
      return refuseValue(issue, input, subject);
    }
    default:
      return refuseValue(issue, input, subject);
  }
}

/** `<path> must be <rule>, got <value>`, or `<path> is missing`. */
function refuseValue(issue: ZodIssue, input: unknown, subject: Subject): GuardrailValidationError {
  const field = fieldOf(issue.path, subject);
  const found = lookUp(input, issue.path);
  if (!found.present) return refuse(subject, field, 'is missing');
  return refuse(subject, field, `must be ${issue.message}, got ${describeValue(found.value)}`);
}

/** The value at `path` in `input`, reading own properties only. */
function lookUp(input: unknown, path: readonly PropertyKey[]): { present: boolean; value?: unknown } {
  let current = input;
  for (const segment of path) {
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, segment)) {
      return { present: false };
    }
    current = (current as Record<PropertyKey, unknown>)[segment];
  }
  return { present: true, value: current };
}

function kindOf(value: object): string {
  const name = Object.prototype.toString.call(value).slice(8, -1);
  return name === 'Object' ? 'an object that is not plain' : `a ${name}`;
}

// ---- options ---------------------------------------------------------------------------------------

/** The options of one of the library's classes: fields are named as they are (`clock`, `retry.maxMs`). */
const OPTIONS: Subject = { root: 'options', prefix: '', at: [] };

/**
 * Refuses an own enumerable key of `value` that is not in `known`, naming it `<prefix><key>`: a misspelt
 * option or limit would otherwise be silently missing. for-in, not Object.keys: no array per call.
 */
export function refuseUnknownKeys(value: object, known: readonly string[], prefix: string): void {
  for (const key in value) {
    if (!known.includes(key) && Object.hasOwn(value, key)) {
      const path = `${prefix}${key}`;
      throw new GuardrailValidationError(path, `${path} is not a known field (known: ${known.join(', ')})`);
    }
  }
}

/** What parseOptions knows of a schema, worked out once per schema. */
interface OptionsLayout {
  readonly known: readonly string[];
  /** The keys whose values must be plain data: all but those holding handles. */
  readonly data: ReadonlySet<string>;
}

const layouts = new WeakMap<z.ZodObject, OptionsLayout>();

function layoutOf(schema: z.ZodObject): OptionsLayout {
  let layout = layouts.get(schema);
  if (layout === undefined) {
    const known = Object.keys(schema.shape);
    const data = new Set(known.filter((key) => !holdsHandles(schema.shape[key] as z.ZodType)));
    layout = { known, data };
    layouts.set(schema, layout);
  }
  return layout;
}

/** True for a schema that accepts handles (see {@link handle}), alone or in an array, union or object. */
function holdsHandles(schema: z.core.$ZodType): boolean {
  const def = schema._zod.def as z.core.$ZodTypeDef & {
    innerType?: z.core.$ZodType;
    in?: z.core.$ZodType;
    element?: z.core.$ZodType;
    options?: readonly z.core.$ZodType[];
    shape?: Readonly<Record<string, z.core.$ZodType>>;
  };
  switch (def.type) {
    case 'custom':
      return true;
    case 'pipe':
      return def.in !== undefined && holdsHandles(def.in);
    case 'array':
      return def.element !== undefined && holdsHandles(def.element);
    case 'union':
      return (def.options ?? []).some(holdsHandles);
    case 'object':
      return Object.values(def.shape ?? {}).some(holdsHandles);
    default:
      return def.innerType !== undefined && holdsHandles(def.innerType);
  }
}

/** A strict object: an unknown key is refused, so a misspelt limit is never silently absent. */
export function strict<T extends z.ZodRawShape>(shape: T) {
  const known = Object.keys(shape).join(', ');
  return z.strictObject(shape, {
    error: (issue) => (issue.code === 'unrecognized_keys' ? known : 'an object'),
  });
}

/**
 * A value zod cannot describe as data: a store, a clock, a function, a tool. `rule` completes
 * `<field> must be …` when `accepts` says no.
 */
export function handle<T>(rule: string, accepts: (value: unknown) => boolean): z.ZodType<T> {
  return z.custom<T>(accepts, { error: rule });
}

/** An option that is a function. */
export function functionOption<F>(): z.ZodType<F> {
  return handle<F>('a function', (value) => typeof value === 'function');
}

/** An integer >= `min`, and at most `max.value` when given (refused in the words of `max.rule`); -0 is 0. */
export function integer(min: number, max?: { readonly value: number; readonly rule: string }) {
  const rule = `an integer >= ${min}`;
  const int = z.int({ error: rule }).min(min, { error: rule });
  return (max === undefined ? int : int.max(max.value, { error: max.rule })).transform((n) => n + 0);
}

/** An amount of money: a finite number >= 0, at most MAX_AMOUNT. */
export function amount() {
  const rule = 'a finite number >= 0';
  return z
    .number({ error: rule })
    .min(0, { error: rule })
    .max(MAX_AMOUNT, { error: `at most ${MAX_AMOUNT}` });
}

/** A schema whose output is `check(value)`: a rule defined elsewhere once (an id, a price table). */
export function checkedBy<T>(check: (value: unknown) => T): z.ZodType<T> {
  return z.unknown().transform((value) => check(value));
}

/**
 * Checks one entry of a table an option holds (a tool's rule, a model's prices) against `schema`, as
 * {@link validateWith} checks a value: paths are named from `at`, e.g. `models.gpt-4o.input`.
 */
export function validateEntry<S extends z.ZodType>(
  schema: S,
  value: unknown,
  at: readonly PropertyKey[],
): z.output<S> {
  return validateWith(schema, value, { root: optionField(at), prefix: '', at });
}

/** The name of a field inside an option: `tools.search.operation`, `models["gpt-4.1"]`. */
export function optionField(path: readonly PropertyKey[]): string {
  return fieldOf(path, OPTIONS);
}

/**
 * Checks the options object of one of the library's classes against `schema`, whose keys are the known
 * options, and returns zod's output. Undefined options are no options, and an undefined value no value;
 * only own keys count, and an unknown key is refused (a misspelt option would otherwise be a limit
 * silently missing). Options may hold handles, checked by the schema's {@link handle} rules; every other
 * value must be plain data, as {@link validateWith} requires. Throws GuardrailValidationError naming the
 * field and the value.
 */
export function parseOptions<S extends z.ZodObject>(schema: S, options: unknown): z.output<S> {
  if (options !== undefined && !isPlainObject(options)) {
    const plainKind = typeof options !== 'object' || options === null || Array.isArray(options);
    const got = plainKind ? describeValue(options) : kindOf(options);
    throw new GuardrailValidationError('options', `options must be a plain object, got ${got}`);
  }
  const { known, data } = layoutOf(schema);
  const given: Record<string, unknown> = {};
  try {
    if (options !== undefined) refuseUnknownKeys(options, known, 'options.');
    for (const key in options) {
      if (!Object.hasOwn(options, key)) continue;
      const value = options[key];
      if (typeof value === 'object' && value !== null && data.has(key)) {
        checkPlainData(value, [key], 1, new Set(), OPTIONS, {});
      }
      given[key] = value;
    }
    const parsed = schema.safeParse(given);
    if (!parsed.success) throw issueError(parsed.error.issues[0], given, OPTIONS, {});
    return parsed.data;
  } catch (e) {
    if (isGuardrailValidationError(e)) throw e;
    throw refuse(OPTIONS, 'options', `could not be read: ${errorText(e)}`, e);
  }
}
