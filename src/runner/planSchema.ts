import { z } from 'zod';
import { MAX_TIMER_MS } from '../clock.js';
import type { JsonValue } from '../json.js';
import { guardrailsSchema, positiveSeconds, type PolicyGuardrails } from '../policy/schema.js';
import { amount, strict } from '../validation.js';
import { labelsSchema } from './labelsSchema.js';

/** The plan file format version this release reads. */
export const PLAN_FILE_VERSION = 1;

/** The tools a plan file's decisions can call: the `leash` command's built-in tools. */
export const BUILTIN_TOOL_NAMES = Object.freeze(['shell', 'http', 'sleep', 'echo'] as const);
export type BuiltinToolName = (typeof BUILTIN_TOOL_NAMES)[number];

/** The environment variables a shell command gets from leash's own environment when a plan does not say. */
export const DEFAULT_SHELL_ENV: readonly string[] = Object.freeze([
  'PATH',
  'HOME',
  'LANG',
  'LC_ALL',
  'TERM',
  'TMPDIR',
  'USER',
]);
/** How long a shell command may run when neither the decision nor the plan's settings say. */
export const DEFAULT_SHELL_TIMEOUT_SECONDS = 300;
/** How long an HTTP request may take when the plan's settings do not say. */
export const DEFAULT_HTTP_TIMEOUT_SECONDS = 30;
/** The longest timeout accepted: what one timer can wait (2^31 - 1 ms, about 24.8 days). */
export const MAX_TIMEOUT_SECONDS = Math.floor(MAX_TIMER_MS / 1000);
/** The longest `sleep` accepted: a day. Longer waits are a plan to be resumed later, not a step. */
export const MAX_SLEEP_SECONDS = 86_400;
/** The HTTP methods the `http` tool sends. */
export const HTTP_METHODS = Object.freeze(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const);
export type HttpMethod = (typeof HTTP_METHODS)[number];

// ---- types ---------------------------------------------------------------------------------------------

/** The input of a `shell` decision: a program and its arguments, never a command line for a shell. */
export type ShellInput = {
  readonly argv: readonly string[];
  /** Resolved against the plan file's folder. */
  readonly cwd?: string;
  /** Literal values added to the allow-listed environment. */
  readonly env?: { readonly [name: string]: string };
  readonly timeout_seconds?: number;
};

/** The input of an `http` decision. */
export type HttpInput = {
  /** Default GET. */
  readonly method?: HttpMethod;
  readonly url: string;
  readonly headers?: { readonly [name: string]: string };
  /** A string is sent as it is; any other JSON value as JSON, with content-type application/json. */
  readonly body?: JsonValue;
};

/** The input of a `sleep` decision. */
export type SleepInput = { readonly seconds: number };

/** The input of an `echo` decision: `{ message }`, or any JSON value that is not an object. */
export type EchoInput = JsonValue;

/** What every decision of a plan file may say besides its tool and input. */
interface DecisionCommon {
  readonly id: string;
  /** An estimate that can raise the tool's own, never lower it. */
  readonly cost?: number;
  /** An extra operation name to confirm, besides the tool's name. */
  readonly operation?: string;
}

/** One decision of a plan file; its input is checked against its tool's input schema. */
export type PlanFileDecision =
  | (DecisionCommon & { readonly tool: 'shell'; readonly input: ShellInput })
  | (DecisionCommon & { readonly tool: 'http'; readonly input: HttpInput })
  | (DecisionCommon & { readonly tool: 'sleep'; readonly input: SleepInput })
  | (DecisionCommon & { readonly tool: 'echo'; readonly input?: EchoInput });

/** The operator's settings of the `shell` tool. */
export interface ShellSettings {
  /** Names of leash's environment variables passed to commands; default {@link DEFAULT_SHELL_ENV}. */
  readonly env?: readonly string[];
  readonly timeout_seconds?: number;
}

/** The operator's settings of the `http` tool. */
export interface HttpSettings {
  readonly cost_per_call?: number;
  readonly timeout_seconds?: number;
}

/** `tools` of a plan file: settings of the built-in tools. */
export interface PlanFileTools {
  readonly shell?: ShellSettings;
  readonly http?: HttpSettings;
}

/**
 * A validated plan file. Keys are spelt as in the file (snake_case); absent keys stay absent. The value is
 * deeply frozen and plain JSON, so it can be stored and validated again.
 */
export interface PlanFile {
  readonly version: typeof PLAN_FILE_VERSION;
  readonly id?: string;
  readonly description?: string;
  readonly guardrails?: PolicyGuardrails;
  /** Who or what the plan runs for (`team: ml`); `leash run --label` adds to them. */
  readonly labels?: { readonly [name: string]: string };
  readonly tools?: PlanFileTools;
  readonly decisions: readonly PlanFileDecision[];
}

// ---- schema --------------------------------------------------------------------------------------------

// Rules are the messages of their checks, as in the policy schema, so issues read
// `<path> must be <rule>, got <value>`. NUL cannot be passed to a process (argument, directory or
// environment), and CR or LF in a header would split it; both are refused here rather than by the tool.
/* eslint-disable no-control-regex -- finding control characters is the point */
const NO_NUL = /^[^\u0000]*$/;
const ENV_NAME = /^[^=\u0000]+$/;
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const HEADER_VALUE = /^[^\r\n\u0000]*$/;
/* eslint-enable no-control-regex */

/** Any JSON value. Named, so that the JSON Schema defines it once. */
const json: z.ZodType<JsonValue> = z
  .lazy(() =>
    z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(json), z.record(z.string(), json)], {
      error: 'a JSON value',
    }),
  )
  .meta({ id: 'json_value', description: 'Any JSON value.' });

function timeoutSeconds(what: string) {
  return positiveSeconds(MAX_TIMEOUT_SECONDS).optional().describe(what);
}

const ARG_RULE = 'a string without NUL characters';
const ARGV_RULE = 'a non-empty array of strings';
const CWD_RULE = 'a directory path (a non-empty string without NUL characters)';
const ENV_NAME_RULE = 'an environment variable name (not empty, without "=" or NUL characters)';
const ENV_VALUE_RULE = 'a string without NUL characters';

const envName = z.string({ error: ENV_NAME_RULE }).regex(ENV_NAME, { error: ENV_NAME_RULE });

/** The input of the `shell` tool. */
export const shellInputSchema = strict({
  argv: z
    .array(z.string({ error: ARG_RULE }).regex(NO_NUL, { error: ARG_RULE }), { error: ARGV_RULE })
    .min(1, { error: ARGV_RULE })
    .refine((argv) => argv[0] !== '', { path: [0], error: 'a program name or path, not empty' })
    .describe(
      'The program and its arguments. Run without a shell: no globbing, pipes, variables or $(…); each item arrives verbatim. Use ["sh", "-c", "…"] to ask for a shell explicitly.',
    ),
  cwd: z
    .string({ error: CWD_RULE })
    .min(1, { error: CWD_RULE })
    .regex(NO_NUL, { error: CWD_RULE })
    .optional()
    .describe('The directory the command runs in, relative to the plan file’s folder. Default: that folder.'),
  env: z
    .record(envName, z.string({ error: ENV_VALUE_RULE }).regex(NO_NUL, { error: ENV_VALUE_RULE }), {
      error: 'an object of environment variable names to string values',
    })
    .optional()
    .describe('Environment variables set for this command, in addition to the allow-listed ones.'),
  timeout_seconds: timeoutSeconds(
    `Seconds the command may run before it is stopped (SIGTERM, then SIGKILL). Default: tools.shell.timeout_seconds, else ${DEFAULT_SHELL_TIMEOUT_SECONDS}.`,
  ),
}).describe('Runs a program without a shell.');

const URL_RULE =
  'an http:// or https:// URL written in ASCII (spaces and other characters percent-encoded, hostnames in punycode)';

/**
 * An http: or https: URL as RFC 3986 writes it: ASCII only, anything else percent-encoded. `new URL()`
 * would take more (spaces, Unicode, hostnames that are not what is sent), and the URL a person approves
 * is to be the URL requested; JSON Schema can state this rule, so editors check what the runner checks.
 */
const URL_PCHAR = "[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2}";
const HTTP_URL = new RegExp(
  `^[Hh][Tt][Tt][Pp][Ss]?://(?:${URL_PCHAR}|[\\[\\]])+(?:/(?:${URL_PCHAR})*)*` +
    `(?:[?](?:${URL_PCHAR}|[/?])*)?(?:#(?:${URL_PCHAR}|[/?])*)?$`,
);
const HEADER_NAME_RULE = 'an HTTP header name';
const HEADER_VALUE_RULE = 'a string without CR, LF or NUL characters';

/** The input of the `http` tool. */
export const httpInputSchema = strict({
  method: z
    .enum(HTTP_METHODS, { error: `one of ${HTTP_METHODS.join(', ')}` })
    .optional()
    .meta({ description: 'The request method. Default GET.', default: 'GET' }),
  url: z
    .string({ error: URL_RULE })
    .regex(HTTP_URL, { error: URL_RULE, abort: true })
    // What the pattern cannot say (a port past 65535, a malformed IPv4 host …), the URL parser does.
    .refine((url) => URL.canParse(url), { error: 'a URL with a valid host and port' })
    .describe(
      'The URL to request: http: or https:, in ASCII as RFC 3986 writes it (spaces and other characters percent-encoded, international hostnames in punycode).',
    ),
  headers: z
    .record(
      z.string({ error: HEADER_NAME_RULE }).regex(HEADER_NAME, { error: HEADER_NAME_RULE }),
      z.string({ error: HEADER_VALUE_RULE }).regex(HEADER_VALUE, { error: HEADER_VALUE_RULE }),
      { error: 'an object of header names to string values' },
    )
    .optional()
    .describe('Request headers.'),
  body: json
    .optional()
    .describe(
      'The request body: a string is sent as it is, any other JSON value as JSON with content-type application/json. Not allowed for GET and HEAD.',
    ),
})
  // GET and HEAD carry no body: fetch would refuse the request only when the step runs.
  .refine(
    (input) => input.body === undefined || ((input.method ?? 'GET') !== 'GET' && input.method !== 'HEAD'),
    {
      path: ['body'],
      error: 'absent for a GET or HEAD request',
    },
  )
  .describe(
    'Sends one HTTP request. A 5xx answer (and 408, 429) is a failure worth retrying; another 4xx is not.',
  );

/** The input of the `sleep` tool. */
export const sleepInputSchema = strict({
  seconds: z
    .number({ error: 'a finite number >= 0' })
    .min(0, { error: 'a finite number >= 0' })
    .max(MAX_SLEEP_SECONDS, { error: `at most ${MAX_SLEEP_SECONDS}` })
    .describe(`Seconds to wait, at most ${MAX_SLEEP_SECONDS}.`),
}).describe('Waits.');

/**
 * The input of the `echo` tool: an object holding only `message`, or any JSON value that is not an object.
 * An object is held to `message` so that a misspelt `mesage` is refused rather than echoed.
 */
export const echoInputSchema = z
  .union(
    [
      strict({ message: json.optional().describe('The value to return.') }),
      z.string(),
      z.number(),
      z.boolean(),
      z.null(),
      z.array(json),
    ],
    { error: 'an object with a message, or any JSON value that is not an object' },
  )
  .describe('Returns `message` (or the input, when it is not an object): for notes and notify steps.');

/** Each built-in tool's input schema, by tool name. */
export const toolInputSchemas = Object.freeze({
  shell: shellInputSchema,
  http: httpInputSchema,
  sleep: sleepInputSchema,
  echo: echoInputSchema,
});

const decisionCommon = {
  id: z
    .string({ error: 'a string' })
    .describe('The decision’s id, unique within the plan; it names the step in the audit trail.'),
  cost: amount()
    .optional()
    .describe('An estimated cost. It can raise the tool’s own estimate, never lower it.'),
  operation: z
    .string({ error: 'a string' })
    .optional()
    .describe('An operation name to confirm in addition to the tool’s name (see required_confirmations).'),
};

function decision<T extends BuiltinToolName, I extends z.ZodType>(tool: T, input: I) {
  const { id, cost, operation } = decisionCommon;
  return strict({ id, tool: z.literal(tool), input, cost, operation });
}

const TOOL_RULE = `one of ${BUILTIN_TOOL_NAMES.join(', ')}`;

export const decisionSchema = z
  .discriminatedUnion(
    'tool',
    [
      decision('shell', shellInputSchema),
      decision('http', httpInputSchema),
      decision('sleep', sleepInputSchema),
      decision('echo', echoInputSchema.optional()),
    ],
    { error: (issue) => (issue.code === 'invalid_union' ? TOOL_RULE : 'an object') },
  )
  .describe('One step: call a built-in tool with an input.');

export const shellSettingsSchema = strict({
  env: z
    .array(envName, { error: 'an array of environment variable names' })
    .optional()
    .meta({
      description:
        'Names of leash’s environment variables passed on to commands; nothing else is. [] passes none.',
      default: [...DEFAULT_SHELL_ENV],
    }),
  timeout_seconds: timeoutSeconds(
    `Seconds a command may run unless its decision says otherwise. Default ${DEFAULT_SHELL_TIMEOUT_SECONDS}.`,
  ),
}).describe('Settings of the shell tool.');

export const httpSettingsSchema = strict({
  cost_per_call: amount().optional().meta({ description: 'Money one request costs. Default 0.', default: 0 }),
  timeout_seconds: timeoutSeconds(
    `Seconds a request may take, answer included. Default ${DEFAULT_HTTP_TIMEOUT_SECONDS}.`,
  ),
}).describe('Settings of the http tool.');

export const planToolsSchema = strict({
  shell: shellSettingsSchema.optional(),
  http: httpSettingsSchema.optional(),
}).describe('Operator settings of the built-in tools.');

/** A plan file, version 1. */
export const planFileSchema = strict({
  version: z
    .literal(PLAN_FILE_VERSION, { error: `${PLAN_FILE_VERSION} (the version this release reads)` })
    .describe('Plan file format version.'),
  id: z
    .string({ error: 'a string' })
    .optional()
    .describe('The plan’s id. Default: the file name without .plan.yaml, .yaml or .json.'),
  description: z.string({ error: 'a string' }).optional().describe('What the plan does, for people.'),
  guardrails: guardrailsSchema.optional(),
  labels: labelsSchema.optional(),
  tools: planToolsSchema.optional(),
  decisions: z
    .array(decisionSchema, { error: 'a non-empty array of decisions' })
    .min(1, { error: 'a non-empty array of decisions' })
    .describe('The steps, run in order.'),
});

export type PlanFileData = z.output<typeof planFileSchema>;

// The interfaces above are what callers read; this line fails to compile when the schema drifts from them.
// (JSON values are left whole: they hold no undefined, and recursing into them never ends.)
type Defined<T> = T extends JsonValue
  ? T
  : T extends object
    ? { [K in keyof T]: Defined<Exclude<T[K], undefined>> }
    : T;
const _schemaMatchesTypes = (data: Defined<PlanFileData>): PlanFile => data;

/** The `$id` of the plan file's JSON Schema. */
export const PLAN_SCHEMA_ID = 'leash-plan.schema.json';

/**
 * The plan file format as JSON Schema (draft 2020-12), generated from the zod schema that
 * `validatePlanFile` applies, so the two cannot drift. It cannot express every rule (unique decision ids,
 * operation names, guardrail rules), so a file it accepts can still be refused by `parsePlanFile`, never
 * the other way round.
 *
 * `schema/plan.schema.json` holds a copy: `npm run schema` rewrites it.
 */
export function planFileJsonSchema(): Record<string, unknown> {
  const { $schema, ...rest } = z.toJSONSchema(planFileSchema, { target: 'draft-2020-12', io: 'input' });
  return {
    $schema,
    $id: PLAN_SCHEMA_ID,
    title: 'leash plan',
    description:
      'A plan for the `leash run` command: decisions run in order with the built-in tools (shell, http, sleep, echo), under optional guardrails. Unknown keys are errors.',
    ...rest,
  };
}
