// Reading configuration files (policy files, plan files) from untrusted text: YAML or JSON in, a value
// checked against a zod schema out, and every refusal a GuardrailValidationError naming the path.
import { parseDocument, type Document, type YAMLError } from 'yaml';
import type { z } from 'zod';
import { describeValue, errorText, GuardrailValidationError, isGuardrailValidationError } from '../errors.js';

/**
 * Aliases expanded while reading YAML, weighted by what they expand to. Enough for a few shared tool rules,
 * far too few for an alias bomb ("billion laughs").
 */
export const MAX_YAML_ALIAS_COUNT = 64;

/** What is being read, for error messages. */
export interface Subject {
  /** Names the whole value: the source file, or a noun such as `policy`. */
  readonly root: string;
  /** Put before messages about a part of the value, so they say which file they are about. */
  readonly prefix: string;
  /** Path segments put before every path in the value (`input` makes `argv` read `input.argv`). */
  readonly at: readonly PropertyKey[];
}

// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * The subject of a file called `source`, or of an unnamed value called `fallback`.
 * @throws GuardrailValidationError (field `source`) for a source name that cannot head a message
 */
export function subjectOf(source: unknown, fallback: string): Subject {
  if (source === undefined) return { root: fallback, prefix: '', at: [] };
  if (typeof source !== 'string' || source.length === 0 || CONTROL.test(source)) {
    throw new GuardrailValidationError(
      'source',
      `source must be a non-empty string without control characters, got ${describeValue(source)}`,
    );
  }
  return { root: source, prefix: `${source}: `, at: [] };
}

/** Checks that `options` is undefined or an object of `known` keys only, and returns it. */
export function readOptions(options: unknown, known: readonly string[]): Record<string, unknown> {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new GuardrailValidationError('options', `options must be an object, got ${describeValue(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw new GuardrailValidationError(
        `options.${key}`,
        `options.${key} is not a known field (known: ${known.join(', ')})`,
      );
    }
  }
  return options as Record<string, unknown>;
}

/** Checks the `format` option of a reader: `yaml`, `json`, or undefined (YAML). */
export function readFormat(format: unknown): 'yaml' | 'json' | undefined {
  if (format !== undefined && format !== 'yaml' && format !== 'json') {
    throw new GuardrailValidationError(
      'format',
      `format must be "yaml" or "json", got ${describeValue(format)}`,
    );
  }
  return format;
}

/**
 * Reads the text of a configuration file. YAML is the default and, being a superset of JSON, reads JSON
 * files too; `json` insists on strict JSON. A byte order mark is skipped; duplicate keys, several
 * documents, custom tags and alias bombs are refused. `noun` names the kind of file in messages
 * (`a policy file must hold exactly one document`).
 */
export function readText(
  text: unknown,
  format: 'yaml' | 'json' | undefined,
  subject: Subject,
  noun: string,
): unknown {
  if (typeof text !== 'string') {
    throw refuse(subject, subject.root, `must be text (a string), got ${describeValue(text)}`);
  }
  // Editors on some systems write a byte order mark; it is not content.
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  return format === 'json' ? readJson(body, subject) : readYaml(body, subject, noun);
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

// ---- reading text ----------------------------------------------------------------------------------

function readYaml(text: string, subject: Subject, noun: string): unknown {
  let doc: Document.Parsed;
  try {
    doc = parseDocument(text, {
      version: '1.2',
      schema: 'core',
      merge: false,
      uniqueKeys: true,
      // `1:` and `true:` are names, not a number and a boolean turned back into text.
      stringKeys: true,
      prettyErrors: true,
    });
  } catch (e) {
    throw unreadable(subject, 'YAML', e);
  }
  // Warnings are refused too: an unresolved tag or a collection used as a key means the file does not
  // say what it seems to.
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem !== undefined) throw yamlError(problem, subject, noun);
  if (doc.contents === null) throw refuse(subject, subject.root, 'is empty');
  try {
    return doc.toJS({ maxAliasCount: MAX_YAML_ALIAS_COUNT });
  } catch (e) {
    if (e instanceof ReferenceError && /excessive alias count/i.test(e.message)) {
      const limit = `the limit of ${MAX_YAML_ALIAS_COUNT} (a defence against alias bombs)`;
      throw refuse(subject, subject.root, `is refused: its YAML aliases expand beyond ${limit}`, e);
    }
    throw unreadable(subject, 'YAML', e);
  }
}

function yamlError(problem: YAMLError, subject: Subject, noun: string): GuardrailValidationError {
  const reason =
    problem.code === 'MULTIPLE_DOCS'
      ? `${noun} must hold exactly one document`
      : (problem.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
  const pos = problem.linePos?.[0];
  const where = pos === undefined ? '' : ` (line ${pos.line}, column ${pos.col})`;
  return refuse(subject, subject.root, `is not valid YAML: ${reason}${where}`, problem);
}

function readJson(text: string, subject: Subject): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    const message = errorText(e);
    const at = /at position (\d+)/.exec(message);
    const reason = message
      .replace(/ in JSON at position \d+.*$/s, '')
      .replace(/ \(line \d+ column \d+\)$/, '');
    const where = at?.[1] === undefined ? '' : ` (${lineColumn(text, Number(at[1]))})`;
    throw refuse(subject, subject.root, `is not valid JSON: ${reason}${where}`, e);
  }
  // JSON.parse keeps the last of two equal keys: the first limit would vanish without a word.
  const duplicate = findDuplicateKey(text);
  if (duplicate !== undefined) {
    const key = describeValue(duplicate.key);
    const where = lineColumn(text, duplicate.index);
    throw refuse(
      subject,
      subject.root,
      `is not valid JSON: key ${key} appears twice in one object (${where})`,
    );
  }
  return value;
}

/** The first key repeated within one object of `text`, which must be valid JSON. */
function findDuplicateKey(text: string): { key: string; index: number } | undefined {
  // One entry per open object (its keys so far) or array (null).
  const open: (Set<string> | null)[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      const start = i;
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
      i++;
      const keys = open.at(-1);
      if (keys) {
        let j = i;
        while (text[j] === ' ' || text[j] === '\t' || text[j] === '\n' || text[j] === '\r') j++;
        if (text[j] === ':') {
          const key = JSON.parse(text.slice(start, i)) as string;
          if (keys.has(key)) return { key, index: start };
          keys.add(key);
        }
      }
      continue;
    }
    if (c === '{') open.push(new Set());
    else if (c === '[') open.push(null);
    else if (c === '}' || c === ']') open.pop();
    i++;
  }
  return undefined;
}

function lineColumn(text: string, index: number): string {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < index && i < text.length; i++) {
    if (text[i] === '\n') {
      line++;
      lineStart = i + 1;
    }
  }
  return `line ${line}, column ${index - lineStart + 1}`;
}

function unreadable(subject: Subject, format: string, e: unknown): GuardrailValidationError {
  return refuse(subject, subject.root, `is not valid ${format}: ${errorText(e)}`, e);
}
