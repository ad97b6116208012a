import { z } from 'zod';
import { modelPriceSchema } from '../agent/prices.js';
import { spendCapsJsonSchema, type SpendCapJson } from '../guardrails/caps.js';
import { APPROVER_PATTERN, APPROVER_RULE, MAX_APPROVERS } from '../identity/rules.js';
import { amount, strict } from '../validation.js';
import { isWellFormed } from '../json.js';
import { notifySchema, type PolicyNotify } from './notifySchema.js';

export type { PolicyNotify, PolicyNotifyTarget } from './notifySchema.js';

/** The policy file format version this release reads. */
export const POLICY_VERSION = 1;
/** Longest tool name accepted, in UTF-16 code units (as `string.length` counts). */
export const MAX_TOOL_NAME_LENGTH = 128;
/** How long a confirmation request stays valid when a policy does not say. One day. */
export const DEFAULT_APPROVAL_TTL_SECONDS = 86_400;
/** Longest approval TTL accepted: beyond it the TTL in milliseconds is no longer an exact integer. */
export const MAX_APPROVAL_TTL_SECONDS = Math.floor(Number.MAX_SAFE_INTEGER / 1000);

/** `guardrails.actor_limits` as written in a policy file. */
export interface PolicyActorLimits {
  readonly max_tool_calls_per_invocation?: number | null;
  readonly max_retries_per_failure?: number | null;
}

/**
 * `guardrails` as written in a policy file: the limits of the wire form (DESIGN.md §3) without its runtime
 * state (`step_count`, `budget_spent`, `start_time`), which a policy must not reset.
 */
export interface PolicyGuardrails {
  readonly max_steps?: number | null;
  readonly tool_budget?: number | null;
  readonly required_confirmations?: readonly string[];
  readonly max_wall_clock_seconds?: number | null;
  readonly actor_limits?: PolicyActorLimits;
}

/** A rule of `approvals` as written in a policy file: who decides approvals of an operation or tool. */
export interface PolicyApprovalRule {
  readonly approvers: readonly string[];
  readonly quorum?: number;
  readonly self_approval?: boolean;
  readonly ttl_seconds?: number;
  readonly on_timeout?: 'deny';
  readonly elicitation?: 'allow' | 'deny';
}

/**
 * `approvals` as written in a policy file: `ttl_seconds`, and beside it rules keyed by operation, tool
 * name or `*` (`policyApprovalRules(policy)` compiles them).
 */
export interface PolicyApprovals {
  readonly ttl_seconds?: number;
  readonly [key: string]: PolicyApprovalRule | number | undefined;
}

/** One entry of `tools` as written in a policy file. */
export interface PolicyToolRule {
  readonly max_calls_per_plan?: number;
  readonly cost_per_call?: number;
  readonly requires_confirmation?: boolean;
}

/** One entry of `models` as written in a policy file: prices per million tokens. */
export interface PolicyModelPrice {
  readonly input: number;
  readonly output: number;
  readonly cached_input?: number;
}

/** `mcp` as written in a policy file: what `leash mcp` shows and confirms. */
export interface PolicyMcp {
  readonly allow?: readonly string[];
  readonly deny?: readonly string[];
  readonly confirm_destructive?: boolean;
}

/**
 * One entry of `budgets` as written in a policy file: a spend cap across plans. `policyBudgets(policy)`
 * gives them validated, limits in micro-units and defaults filled in.
 */
export type PolicySpendCap = SpendCapJson;

/**
 * A validated policy file. Keys are spelt as in the file (snake_case); absent keys stay absent, and the
 * helpers in `policy.ts` supply the defaults. `tools` has no prototype, so a tool named `constructor` is
 * just a tool.
 */
export interface Policy {
  readonly version: typeof POLICY_VERSION;
  readonly guardrails?: PolicyGuardrails;
  readonly approvals?: PolicyApprovals;
  readonly tools?: Readonly<Record<string, PolicyToolRule>>;
  readonly models?: Readonly<Record<string, PolicyModelPrice>>;
  readonly unpriced_models?: 'deny' | 'allow';
  readonly mcp?: PolicyMcp;
  readonly budgets?: readonly PolicySpendCap[];
  readonly notify?: PolicyNotify;
}

// Every check carries its rule as its message, so that an issue renders as `<path> must be <rule>, got <v>`
// in the library's own words rather than zod's. Some builders are exported for the plan file format,
// so that one rule reads the same in every file.

function integer(min: number) {
  const rule = `an integer >= ${min}`;
  return z.int({ error: rule }).min(min, { error: rule });
}

/** A number of seconds > 0, at most `max` when given. */
export function positiveSeconds(max?: number) {
  const rule = 'a finite number > 0';
  const seconds = z.number({ error: rule }).positive({ error: rule });
  return max === undefined ? seconds : seconds.max(max, { error: `at most ${max}` });
}

// Control characters, and a key that JavaScript objects treat as their prototype. JSON Schema validators
// cannot all read \p{...} classes, so the pattern spells the ranges out; invisible format characters are
// refused by the refinement below, which only zod applies.
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const TOOL_NAME_PATTERN = /^(?!__proto__$)(?=.*\S)[^\u0000-\u001f\u007f-\u009f]*$/;
const INVISIBLE = /[\p{Cf}\p{Default_Ignorable_Code_Point}]/u;
// A tool's name is also the operation it is confirmed under, so it must be one: not blank, nothing hidden.
export const TOOL_NAME_RULE = `a string of 1 to ${MAX_TOOL_NAME_LENGTH} characters, not only space, without control or invisible characters`;

/** A name that is also shown to people and recorded: a tool's, a model's. */
function visibleName() {
  return (
    z
      .string({ error: TOOL_NAME_RULE })
      .min(1, { error: TOOL_NAME_RULE })
      .max(MAX_TOOL_NAME_LENGTH, { error: TOOL_NAME_RULE })
      .regex(TOOL_NAME_PATTERN, { error: TOOL_NAME_RULE })
      .refine((name) => !INVISIBLE.test(name), { error: TOOL_NAME_RULE })
      // The name is hashed into the audit log, and RFC 8785 refuses a lone surrogate.
      .refine(isWellFormed, { error: 'a string of well-formed Unicode, without a lone surrogate' })
  );
}

const toolName = visibleName();

export const actorLimitsSchema = strict({
  max_tool_calls_per_invocation: integer(1)
    .nullable()
    .optional()
    .describe('Tool calls one actor invocation may make; null or absent = unlimited.'),
  max_retries_per_failure: integer(0)
    .nullable()
    .optional()
    .describe('Retries allowed for one failure; null or absent = unlimited.'),
}).describe('Limits that apply to one actor invocation rather than to the whole plan.');

export const guardrailsSchema = strict({
  max_steps: integer(1).nullable().optional().describe('Steps a plan may take; null or absent = unlimited.'),
  tool_budget: amount()
    .nullable()
    .optional()
    .describe('Money the plan’s tools may spend, exact to one millionth; null or absent = unlimited.'),
  required_confirmations: z
    .array(z.string({ error: 'a string' }), { error: 'an array of strings' })
    .optional()
    .describe(
      'Operation names that need a person’s confirmation. Compared after NFKC normalization, trimming and lower-casing; control and invisible characters are refused.',
    ),
  max_wall_clock_seconds: positiveSeconds()
    .nullable()
    .optional()
    .describe('Seconds a plan may run from its first execution; null or absent = unlimited.'),
  actor_limits: actorLimitsSchema.optional(),
}).describe('The plan’s limits. Runtime state (step_count, budget_spent, start_time) is not allowed here.');

const approvalTtl = () => positiveSeconds(MAX_APPROVAL_TTL_SECONDS).optional();

const RULE_RULE =
  'an approval rule: an object with approvers (keys beside ttl_seconds name an operation, a tool or *)';

export const approvalRuleSchema = z
  .strictObject(
    {
      approvers: z
        .array(z.string({ error: APPROVER_RULE }).regex(APPROVER_PATTERN, { error: APPROVER_RULE }), {
          error: `a list of 1 to ${MAX_APPROVERS} approvers`,
        })
        .min(1, { error: `a list of 1 to ${MAX_APPROVERS} approvers` })
        .max(MAX_APPROVERS, { error: `a list of 1 to ${MAX_APPROVERS} approvers` })
        .describe(
          'Who may decide: "role:NAME" (a principal holding the role), "user:ID" (that principal) or "*" (any principal).',
        ),
      quorum: integer(1)
        .max(MAX_APPROVERS, { error: `an integer from 1 to ${MAX_APPROVERS}` })
        .optional()
        .meta({
          description:
            'How many different approvers must approve; one denial by an approver denies. Default 1. At most the number of users when the approvers are all "user:" entries.',
          default: 1,
        }),
      self_approval: z.boolean({ error: 'a boolean' }).optional().meta({
        description: 'Whether the person whose run asked (its `user` label) may approve it. Default false.',
        default: false,
      }),
      ttl_seconds: approvalTtl().describe(
        'How long approvals under this rule stay open, in seconds; overrides approvals.ttl_seconds.',
      ),
      on_timeout: z.literal('deny', { error: 'deny' }).optional().meta({
        description: 'What an approval nobody decided in time becomes: denied, by leash. Default deny.',
        default: 'deny',
      }),
      elicitation: z.enum(['allow', 'deny'], { error: 'allow or deny' }).optional().meta({
        description:
          'Whether an MCP client’s user, answering an elicitation form, may approve (unverified). Default deny.',
        default: 'deny',
      }),
    },
    {
      error: (issue) =>
        issue.code === 'unrecognized_keys'
          ? 'approvers, quorum, self_approval, ttl_seconds, on_timeout, elicitation'
          : RULE_RULE,
    },
  )
  .describe('Who decides approvals of one operation or tool.');

export const approvalsSchema = z
  .strictObject(
    {
      ttl_seconds: approvalTtl().meta({
        description: `How long a confirmation request stays valid, in seconds. Default ${DEFAULT_APPROVAL_TTL_SECONDS}.`,
        default: DEFAULT_APPROVAL_TTL_SECONDS,
      }),
    },
    { error: 'an object' },
  )
  .catchall(approvalRuleSchema)
  .describe(
    'How confirmation requests behave: ttl_seconds, and rules keyed by operation, tool name or * (every other operation) saying who decides.',
  );

export const toolRuleSchema = strict({
  max_calls_per_plan: integer(1)
    .optional()
    .describe('Calls of this tool one plan may make; absent = unlimited.'),
  cost_per_call: amount().optional().describe('Money one call of this tool costs.'),
  requires_confirmation: z
    .boolean({ error: 'a boolean' })
    .optional()
    .describe('Whether every call of this tool needs a person’s confirmation. Default false.'),
}).describe('Rules for one tool.');

export const toolsSchema = z
  .record(toolName, toolRuleSchema, { error: 'an object' })
  .describe(`Per-tool rules, keyed by tool name (${TOOL_NAME_RULE}; "__proto__" is reserved).`);

export const modelsSchema = z
  .record(visibleName(), modelPriceSchema, { error: 'an object' })
  .describe(`Model prices, keyed by model id (${TOOL_NAME_RULE}; "__proto__" is reserved).`);

export const UNPRICED_MODELS = ['deny', 'allow'] as const;

const GLOB_RULE = 'a tool-name glob: 1 to 256 characters, without control characters';
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const GLOB_PATTERN = /^[^\u0000-\u001f\u007f-\u009f]+$/;
const toolGlobs = z
  .array(
    z
      .string({ error: GLOB_RULE })
      .min(1, { error: GLOB_RULE })
      .max(256, { error: GLOB_RULE })
      .regex(GLOB_PATTERN, { error: GLOB_RULE }),
    { error: 'an array of tool-name globs' },
  )
  .optional();

export const mcpSchema = strict({
  allow: toolGlobs.describe(
    'Tool names `leash mcp` shows its client, as globs (`*` any run of characters, `?` one character); absent = every tool.',
  ),
  deny: toolGlobs.describe('Tool names `leash mcp` hides from its client, as globs; deny wins over allow.'),
  confirm_destructive: z.boolean({ error: 'a boolean' }).optional().meta({
    description:
      'Whether every call of a tool the MCP annotations call destructive needs a person’s confirmation: every tool but those with readOnlyHint true or destructiveHint false (a tool without annotations is destructive). Default false.',
    default: false,
  }),
}).describe('What `leash mcp` shows its client and which calls it has a person confirm.');

export const policySchema = strict({
  version: z
    .literal(POLICY_VERSION, { error: `${POLICY_VERSION} (the version this release reads)` })
    .describe('Policy file format version.'),
  guardrails: guardrailsSchema.optional(),
  approvals: approvalsSchema.optional(),
  tools: toolsSchema.optional(),
  models: modelsSchema.optional(),
  unpriced_models: z.enum(UNPRICED_MODELS, { error: 'deny or allow' }).optional().meta({
    description:
      'A model call for a model with no price, while the plan has a budget: refused (deny) or run unmetered (allow). Default deny.',
    default: 'deny',
  }),
  mcp: mcpSchema.optional(),
  budgets: spendCapsJsonSchema.optional(),
  notify: notifySchema.optional(),
});
