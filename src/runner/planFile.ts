import { isGuardrailValidationError, GuardrailValidationError } from '../errors.js';
import { validatePlan, type Decision, type Plan } from '../executor/Plan.js';
import type { GuardrailsInit } from '../guardrails/AutonomyGuardrails.js';
import { MAX_JSON_DEPTH, type JsonValue } from '../json.js';
import { policyToGuardrailsInit, validatePolicy } from '../policy/policy.js';
import { readFormat, readOptions, readText, subjectOf } from '../policy/read.js';
import { validateWith, type Subject } from '../validation.js';
import { POLICY_VERSION } from '../policy/schema.js';
import { validatePlanId } from '../ids.js';
import {
  BUILTIN_TOOL_NAMES,
  planFileSchema,
  toolInputSchemas,
  type BuiltinToolName,
  type EchoInput,
  type HttpInput,
  type PlanFile,
  type ShellInput,
  type SleepInput,
} from './planSchema.js';

export {
  BUILTIN_TOOL_NAMES,
  DEFAULT_HTTP_TIMEOUT_SECONDS,
  DEFAULT_SHELL_ENV,
  DEFAULT_SHELL_TIMEOUT_SECONDS,
  HTTP_METHODS,
  MAX_SLEEP_SECONDS,
  MAX_TIMEOUT_SECONDS,
  PLAN_FILE_VERSION,
  PLAN_SCHEMA_ID,
  planFileJsonSchema,
  planFileSchema,
  toolInputSchemas,
  type BuiltinToolName,
  type EchoInput,
  type HttpInput,
  type HttpMethod,
  type HttpSettings,
  type PlanFile,
  type PlanFileDecision,
  type PlanFileTools,
  type ShellInput,
  type ShellSettings,
  type SleepInput,
} from './planSchema.js';

/** Options of {@link parsePlanFile}. */
export interface ParsePlanFileOptions {
  /** `yaml` (the default; it also reads JSON) or `json` (strict JSON only). */
  format?: 'yaml' | 'json';
  /** The file's name, used in error messages and as the `field` of errors about the whole file. */
  source?: string;
}

/** Options of {@link validatePlanFile}. */
export interface ValidatePlanFileOptions {
  /** The file's name, used in error messages and as the `field` of errors about the whole value. */
  source?: string;
}

/** How deep a decision's input sits in the file: the file → `decisions` → the decision → `input`. */
const INPUT_DEPTH = 3;

/**
 * Reads a plan file. YAML is the default and, being a superset of JSON, reads JSON files too; `json`
 * insists on strict JSON. Duplicate keys, several documents, custom tags and alias bombs are refused, and
 * so is anything the executor would refuse later: a plan file that parses runs as far as its guardrails let it.
 *
 * @example
 * const file = parsePlanFile(readFileSync('release.plan.yaml', 'utf8'), { source: 'release.plan.yaml' });
 * await service.configureGuardrails('release', planFileGuardrails(file));
 * await executor.execute(planFileToPlan(file, file.id ?? 'release'));
 * @throws GuardrailValidationError for anything unreadable or invalid, naming the path in the file:
 * `release.plan.yaml: decisions[2].input.argv must be a non-empty array of strings, got an array of 0`
 */
export function parsePlanFile(text: string, options?: ParsePlanFileOptions): PlanFile {
  const { format, source } = readOptions(options, ['format', 'source']);
  const checkedFormat = readFormat(format);
  const subject = subjectOf(source, 'plan');
  return validate(readText(text, checkedFormat, subject, 'a plan file'), subject);
}

/**
 * Validates a plan file that is already parsed (from JSON, or read back from a store). The value is
 * treated as untrusted, as {@link parsePlanFile} treats text; the result shares nothing with it.
 *
 * @throws GuardrailValidationError naming the path: `decisions[0].tool must be one of shell, http, sleep, echo, got "bash"`
 */
export function validatePlanFile(value: unknown, options?: ValidatePlanFileOptions): PlanFile {
  const { source } = readOptions(options, ['source']);
  return validate(value, subjectOf(source, 'plan'));
}

/**
 * The plan the executor runs, in phase `execute` with empty metadata. `id` is the plan's id (usually the
 * file's `id`, else its name); the file's own `id` is not consulted, so the caller decides.
 */
export function planFileToPlan(file: PlanFile, id: string): Plan {
  validatePlanId(id);
  const decisions = file.decisions.map((d): Decision => {
    const out: { -readonly [K in keyof Decision]: Decision[K] } = { id: d.id, tool: d.tool };
    if (d.input !== undefined) out.input = d.input;
    if (d.cost !== undefined) out.cost = d.cost;
    if (d.operation !== undefined) out.operation = d.operation;
    return Object.freeze(out);
  });
  return { id, phase: 'execute', decisions: Object.freeze(decisions), metadata: {} };
}

/**
 * The file's guardrails as the init `AutonomyGuardrailService.configureGuardrails` takes, exactly as a
 * policy file with the same `guardrails` would give them, and the file's labels. No `guardrails` means
 * no limits.
 */
export function planFileGuardrails(file: PlanFile): GuardrailsInit {
  const init = policyToGuardrailsInit(
    file.guardrails === undefined
      ? { version: POLICY_VERSION }
      : { version: POLICY_VERSION, guardrails: file.guardrails },
  );
  if (file.labels !== undefined) init.labels = file.labels;
  return init;
}

/** The input type of each built-in tool. */
export interface ToolInputs {
  readonly shell: ShellInput;
  readonly http: HttpInput;
  readonly sleep: SleepInput;
  readonly echo: EchoInput | undefined;
}

/** Where a tool's input sits for error messages: `input`, so a field reads `input.argv`. */
const TOOL_INPUT: Subject = { root: 'input', prefix: '', at: ['input'] };

/**
 * Checks the input of a built-in tool as a plan file's decision is checked; the tools call it themselves,
 * since `ctx.callTool` hands them input no plan file checked.
 *
 * @throws GuardrailValidationError naming the field: `input.argv must be a non-empty array of strings, got an array of 0`
 */
export function validateToolInput<T extends BuiltinToolName>(tool: T, input: unknown): ToolInputs[T] {
  const data = validateWith(toolInputSchemas[tool], input, TOOL_INPUT, {
    maxDepth: MAX_JSON_DEPTH,
    refuseDeeper: true,
  });
  return frozenCopy(data) as unknown as ToolInputs[T];
}

// ---- validation ------------------------------------------------------------------------------------

function validate(value: unknown, subject: Subject): PlanFile {
  const data = validateWith(planFileSchema, value, subject, {
    // Inputs are any JSON, so depth is bounded here, where the executor bounds it.
    maxDepth: INPUT_DEPTH + MAX_JSON_DEPTH,
    refuseDeeper: true,
  });
  // The schema output is a fresh copy of the checked value; the type's optional keys are really absent.
  const file = frozenCopy(data) as unknown as PlanFile;
  if (file.id !== undefined) {
    const id = file.id;
    relocated(() => validatePlanId(id), 'plan_id', 'id', subject);
  }
  // The rules the schema cannot express are those of the guardrails and the executor: checked by them.
  if (file.guardrails !== undefined) {
    validatePolicy(
      { version: POLICY_VERSION, guardrails: file.guardrails },
      subject.prefix === '' ? {} : { source: subject.root },
    );
  }
  const plan = planFileToPlan(file, 'plan');
  relocated(() => validatePlan(plan, new Set(BUILTIN_TOOL_NAMES)), 'plan.', '', subject);
  return file;
}

/**
 * Runs a check written for another shape of the same data and moves its error's field from `from` to
 * `to` (`plan.decisions[0].id` → `decisions[0].id`), so it names the path in the file.
 */
function relocated(check: () => void, from: string, to: string, subject: Subject): void {
  try {
    check();
  } catch (e) {
    if (!isGuardrailValidationError(e) || e.field === undefined || !e.field.startsWith(from)) throw e;
    const field = `${to}${e.field.slice(from.length)}`;
    const rest = e.message.startsWith(e.field) ? e.message.slice(e.field.length) : `: ${e.message}`;
    throw new GuardrailValidationError(field, `${subject.prefix}${field}${rest}`, { cause: e });
  }
}

/**
 * A deeply frozen copy without keys whose value is undefined (the types promise they are absent) and with
 * -0 as 0 (it would read back as "-0" in messages).
 */
function frozenCopy(value: unknown): JsonValue {
  if (typeof value === 'number') return value + 0;
  if (typeof value !== 'object' || value === null) return value as JsonValue;
  if (Array.isArray(value)) return Object.freeze(value.map(frozenCopy));
  const out: Record<string, JsonValue> = {};
  for (const [key, v] of Object.entries(value)) {
    // defineProperty, not assignment: a key named __proto__ stays an ordinary key.
    if (v !== undefined) {
      Object.defineProperty(out, key, { value: frozenCopy(v), enumerable: true });
    }
  }
  return Object.freeze(out);
}
