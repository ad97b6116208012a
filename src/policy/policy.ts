import { parseDocument, type Document, type YAMLError } from 'yaml';
import type { z } from 'zod';
import { describeValue, GuardrailValidationError, isGuardrailValidationError } from '../errors.js';
import type { ToolRule } from '../executor/tools.js';
import { AutonomyGuardrails, type GuardrailsInit } from '../guardrails/AutonomyGuardrails.js';
import {
  DEFAULT_APPROVAL_TTL_SECONDS,
  policySchema,
  type Policy,
  type PolicyGuardrails,
  type PolicyToolRule,
} from './schema.js';

export type { ToolRule };

/** Options of {@link parsePolicy}. */
export interface ParsePolicyOptions {
  /** `yaml` (the default; it also reads JSON) or `json` (strict JSON only). */
  format?: 'yaml' | 'json';
  /** The file's name, used in error messages and as the `field` of errors about the whole file. */
  source?: string;
}

/** Options of {@link validatePolicy}. */
export interface ValidatePolicyOptions {
  /** The file's name, used in error messages and as the `field` of errors about the whole value. */
  source?: string;
}

/**
 * Aliases expanded while reading YAML, weighted by what they expand to. Enough for a few shared tool rules,
 * far too few for an alias bomb ("billion laughs").
 */
export const MAX_YAML_ALIAS_COUNT = 64;

/** Deeper than this a value cannot match the schema, so the plain-data check stops descending. */
const MAX_CHECK_DEPTH = 8;

interface Context {
  /** Names the whole value: the source, or `policy`. */
  readonly root: string;
  /** Put before messages about a part of the value, so they say which file they are about. */
  readonly prefix: string;
}

/**
 * Reads a policy file. YAML is the default and, being a superset of JSON, reads JSON files too; `json`
 * insists on strict JSON. Duplicate keys, several documents, custom tags and alias bombs are refused.
 *
 * @example
 * const policy = parsePolicy(readFileSync('leash.yaml', 'utf8'), { source: 'leash.yaml' });
 * await service.configureGuardrails(planId, policyToGuardrailsInit(policy));
 * @throws GuardrailValidationError for anything unreadable or invalid, naming the path in the file:
 * `tools.shell.cost_per_call must be a finite number >= 0, got -1`
 */
export function parsePolicy(text: string, options?: ParsePolicyOptions): Policy {
  const { format, source } = readOptions(options, ['format', 'source']);
  if (format !== undefined && format !== 'yaml' && format !== 'json') {
    throw new GuardrailValidationError(
      'format',
      `format must be "yaml" or "json", got ${describeValue(format)}`,
    );
  }
  const ctx = context(source);
  if (typeof text !== 'string')
    throw refuse(ctx, ctx.root, `must be text (a string), got ${describeValue(text)}`);
  // Editors on some systems write a byte order mark; it is not content.
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const value = format === 'json' ? readJson(body, ctx) : readYaml(body, ctx);
  return validate(value, ctx);
}

/**
 * Validates a policy that is already parsed (from JSON, or built in code). The value is treated as untrusted:
 * only plain objects, arrays and scalars are read, and a `__proto__` key is refused.
 *
 * @throws GuardrailValidationError naming the path: `guardrails.max_steps must be an integer >= 1, got 0`
 */
export function validatePolicy(value: unknown, options?: ValidatePolicyOptions): Policy {
  const { source } = readOptions(options, ['source']);
  return validate(value, context(source));
}

/**
 * The policy's guardrails as the camelCase init that {@link AutonomyGuardrails.create} and
 * `AutonomyGuardrailService.configureGuardrails` take. Limits the policy leaves out stay out, so
 * reconfiguring a plan keeps its counters.
 */
export function policyToGuardrailsInit(policy: Policy): GuardrailsInit {
  const init = toInit(policy.guardrails ?? {});
  // A tool whose every call needs a person is confirmed under its own name (the executor checks it).
  const confirmed = Object.keys(policy.tools ?? {}).filter(
    (name) => policy.tools?.[name]?.requires_confirmation,
  );
  if (confirmed.length > 0) {
    init.requiredConfirmations = [...new Set([...(init.requiredConfirmations ?? []), ...confirmed])];
  }
  return init;
}

/**
 * The per-tool rules with their defaults: no call limit, no policy cost, no confirmation.
 * A tool the policy does not name has no entry.
 */
export function toolRules(policy: Policy): ReadonlyMap<string, ToolRule> {
  const rules = new Map<string, ToolRule>();
  const tools = policy.tools ?? {};
  for (const name of Object.keys(tools)) {
    const rule = tools[name] as PolicyToolRule;
    rules.set(
      name,
      Object.freeze({
        maxCallsPerPlan: rule.max_calls_per_plan ?? null,
        costPerCall: rule.cost_per_call ?? null,
        requiresConfirmation: rule.requires_confirmation ?? false,
      }),
    );
  }
  return rules;
}

/**
 * How long a confirmation request stays valid, in whole milliseconds (at least 1; default one day).
 * Rounded rather than truncated so that `1.1` seconds is 1100 ms, not 1100.0000000000002.
 */
export function approvalTtlMs(policy: Policy): number {
  const seconds = policy.approvals?.ttl_seconds ?? DEFAULT_APPROVAL_TTL_SECONDS;
  return Math.max(1, Math.round(seconds * 1000));
}

// ---- validation ------------------------------------------------------------------------------------

function validate(value: unknown, ctx: Context): Policy {
  try {
    checkPlainData(value, [], 0, new Set(), ctx);
    const parsed = policySchema.safeParse(value);
    if (!parsed.success) throw issueError(parsed.error.issues[0], value, ctx);
    const policy = toPolicy(parsed.data);
    checkGuardrails(policy, ctx);
    return policy;
  } catch (e) {
    if (isGuardrailValidationError(e)) throw e;
    // A getter that throws or a revoked proxy: unreadable input is still bad input.
    throw refuse(ctx, ctx.root, `could not be read: ${errorText(e)}`, e);
  }
}

/**
 * zod reads inherited properties and accepts a Date or a Map as an object, and drops a `__proto__` key of
 * a record without a word; so before zod sees the value, everything in it must be plain data.
 */
function checkPlainData(
  value: unknown,
  path: readonly PropertyKey[],
  depth: number,
  seen: Set<object>,
  ctx: Context,
): void {
  if (typeof value !== 'object' || value === null || depth > MAX_CHECK_DEPTH || seen.has(value)) return;
  seen.add(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) checkPlainData(value[i], [...path, i], depth + 1, seen, ctx);
    return;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    throw refuse(
      ctx,
      fieldOf(path, ctx),
      `must be plain data (an object, array, string, number, boolean or null), got ${kindOf(value)}`,
    );
  }
  for (const key of Object.keys(value)) {
    if (key === '__proto__') {
      throw refuse(ctx, fieldOf(path, ctx), 'must not have a "__proto__" key');
    }
    checkPlainData((value as Record<string, unknown>)[key], [...path, key], depth + 1, seen, ctx);
  }
}

type ZodIssue = z.core.$ZodIssue;

/** Renders a zod issue in the library's words: `<path> must be <rule>, got <value>`. */
function issueError(issue: ZodIssue | undefined, input: unknown, ctx: Context): GuardrailValidationError {
  if (issue === undefined) return refuse(ctx, ctx.root, 'is not a valid policy');
  const path = issue.path;
  switch (issue.code) {
    case 'unrecognized_keys': {
      const field = fieldOf([...path, String(issue.keys[0])], ctx);
      return refuse(ctx, field, `is not a known field (known: ${issue.message})`);
    }
    case 'invalid_key': {
      const rule = issue.issues[0]?.message ?? issue.message;
      const key = describeValue(path.at(-1));
      return refuse(ctx, fieldOf(path.slice(0, -1), ctx), `key must be a tool name: ${rule}, got ${key}`);
    }
    default: {
      const field = fieldOf(path, ctx);
      const found = lookUp(input, path);
      if (!found.present) return refuse(ctx, field, 'is missing');
      return refuse(ctx, field, `must be ${issue.message}, got ${describeValue(found.value)}`);
    }
  }
}

/**
 * Applies the guardrails' own rules (operation names, amounts) through {@link AutonomyGuardrails.create},
 * so a policy can never hold limits that configuring a plan would refuse; errors are renamed to the path
 * in the file.
 */
function checkGuardrails(policy: Policy, ctx: Context): void {
  try {
    AutonomyGuardrails.create(policyToGuardrailsInit(policy));
  } catch (e) {
    if (!isGuardrailValidationError(e)) throw e;
    const inner = e.field;
    const field = inner === undefined ? fieldOf(['guardrails'], ctx) : `guardrails.${inner}`;
    const message =
      inner !== undefined && e.message.startsWith(inner)
        ? `guardrails.${e.message}`
        : `guardrails: ${e.message}`;
    throw new GuardrailValidationError(field, `${ctx.prefix}${message}`, { cause: e });
  }
}

type PolicyData = z.output<typeof policySchema>;

/**
 * A fresh, deeply frozen copy holding only the keys that were given; it shares nothing with the input, so
 * the caller cannot change a validated policy afterwards.
 */
function toPolicy(data: PolicyData): Policy {
  const out: { -readonly [K in keyof Policy]: Policy[K] } = { version: data.version };
  if (data.guardrails !== undefined) {
    const g = data.guardrails;
    out.guardrails = frozen({
      max_steps: g.max_steps,
      tool_budget: g.tool_budget,
      required_confirmations:
        g.required_confirmations === undefined ? undefined : Object.freeze([...g.required_confirmations]),
      max_wall_clock_seconds: g.max_wall_clock_seconds,
      actor_limits: g.actor_limits === undefined ? undefined : frozen({ ...g.actor_limits }),
    });
  }
  if (data.approvals !== undefined) out.approvals = frozen({ ttl_seconds: data.approvals.ttl_seconds });
  if (data.tools !== undefined) {
    const tools: Record<string, PolicyToolRule> = Object.create(null) as Record<string, PolicyToolRule>;
    for (const name of Object.keys(data.tools)) {
      tools[name] = frozen({ ...(data.tools[name] as PolicyToolRule) });
    }
    out.tools = Object.freeze(tools);
  }
  return Object.freeze(out);
}

/**
 * Drops keys whose value is undefined (the type promises they are absent), turns -0 into 0 (it would read
 * back as "-0" in messages) and freezes.
 */
function frozen<T extends object>(o: { [K in keyof T]: T[K] | undefined }): T {
  const record = o as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const value = record[key];
    if (value === undefined) delete record[key];
    else if (typeof value === 'number') record[key] = value + 0;
  }
  return Object.freeze(o) as T;
}

function toInit(g: PolicyGuardrails): GuardrailsInit {
  const init: GuardrailsInit = {};
  if (g.max_steps !== undefined) init.maxSteps = g.max_steps;
  if (g.tool_budget !== undefined) init.toolBudget = g.tool_budget;
  if (g.required_confirmations !== undefined) init.requiredConfirmations = [...g.required_confirmations];
  if (g.max_wall_clock_seconds !== undefined) init.maxWallClockSeconds = g.max_wall_clock_seconds;
  if (g.actor_limits !== undefined) {
    const a = g.actor_limits;
    init.actorLimits = {};
    if (a.max_tool_calls_per_invocation !== undefined) {
      init.actorLimits.maxToolCallsPerInvocation = a.max_tool_calls_per_invocation;
    }
    if (a.max_retries_per_failure !== undefined) {
      init.actorLimits.maxRetriesPerFailure = a.max_retries_per_failure;
    }
  }
  return init;
}

// ---- reading text ----------------------------------------------------------------------------------

function readYaml(text: string, ctx: Context): unknown {
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
    throw unreadable(ctx, 'YAML', e);
  }
  // Warnings are refused too: an unresolved tag or a collection used as a key means the file does not
  // say what it seems to.
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem !== undefined) throw yamlError(problem, ctx);
  if (doc.contents === null) throw refuse(ctx, ctx.root, 'is empty');
  try {
    return doc.toJS({ maxAliasCount: MAX_YAML_ALIAS_COUNT });
  } catch (e) {
    if (e instanceof ReferenceError && /excessive alias count/i.test(e.message)) {
      const limit = `the limit of ${MAX_YAML_ALIAS_COUNT} (a defence against alias bombs)`;
      throw refuse(ctx, ctx.root, `is refused: its YAML aliases expand beyond ${limit}`, e);
    }
    throw unreadable(ctx, 'YAML', e);
  }
}

function yamlError(problem: YAMLError, ctx: Context): GuardrailValidationError {
  const reason =
    problem.code === 'MULTIPLE_DOCS'
      ? 'a policy file must hold exactly one document'
      : (problem.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
  const pos = problem.linePos?.[0];
  const where = pos === undefined ? '' : ` (line ${pos.line}, column ${pos.col})`;
  return refuse(ctx, ctx.root, `is not valid YAML: ${reason}${where}`, problem);
}

function readJson(text: string, ctx: Context): unknown {
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
    throw refuse(ctx, ctx.root, `is not valid JSON: ${reason}${where}`, e);
  }
  // JSON.parse keeps the last of two equal keys: the first limit would vanish without a word.
  const duplicate = findDuplicateKey(text);
  if (duplicate !== undefined) {
    const key = describeValue(duplicate.key);
    const where = lineColumn(text, duplicate.index);
    throw refuse(ctx, ctx.root, `is not valid JSON: key ${key} appears twice in one object (${where})`);
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

function unreadable(ctx: Context, format: string, e: unknown): GuardrailValidationError {
  return refuse(ctx, ctx.root, `is not valid ${format}: ${errorText(e)}`, e);
}

// ---- small helpers ---------------------------------------------------------------------------------

/**
 * The error for `<field> <rest>`. A message about part of a named file starts with the file's name, so
 * it still says which file when it is printed on its own.
 */
function refuse(ctx: Context, field: string, rest: string, cause?: unknown): GuardrailValidationError {
  const lead = field === ctx.root ? '' : ctx.prefix;
  const message = `${lead}${field} ${rest}`;
  return cause === undefined
    ? new GuardrailValidationError(field, message)
    : new GuardrailValidationError(field, message, { cause });
}

// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

function context(source: unknown): Context {
  if (source === undefined) return { root: 'policy', prefix: '' };
  if (typeof source !== 'string' || source.length === 0 || CONTROL.test(source)) {
    throw new GuardrailValidationError(
      'source',
      `source must be a non-empty string without control characters, got ${describeValue(source)}`,
    );
  }
  return { root: source, prefix: `${source}: ` };
}

function readOptions(options: unknown, known: readonly string[]): Record<string, unknown> {
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

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** `tools.shell.cost_per_call`, `guardrails.required_confirmations[2]`, `tools["my.tool"]`. */
function fieldOf(path: readonly PropertyKey[], ctx: Context): string {
  if (path.length === 0) return ctx.root;
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (typeof segment === 'string' && PLAIN_KEY.test(segment))
      out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out;
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

function errorText(e: unknown): string {
  if (e instanceof Error) return e.message;
  try {
    return String(e);
  } catch {
    return describeValue(e);
  }
}
