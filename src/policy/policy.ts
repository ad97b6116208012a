import type { z } from 'zod';
import { GuardrailValidationError, isGuardrailValidationError } from '../errors.js';
import { policyPrices, priceTable, type ModelPrices } from '../agent/prices.js';
import type { ToolRule } from '../executor/tools.js';
import { AutonomyGuardrails, type GuardrailsInit } from '../guardrails/AutonomyGuardrails.js';
import { spendCapsFromJson, type SpendCap } from '../guardrails/caps.js';
import { approvalRuleEntries, checkApprovalRules } from './approvals.js';
import { readFormat, readOptions, readText, subjectOf } from './read.js';
import { checkNotify, copyNotify } from './notify.js';
import { fieldOf, validateWith, type Subject } from '../validation.js';
import {
  DEFAULT_APPROVAL_TTL_SECONDS,
  policySchema,
  type Policy,
  type PolicyApprovalRule,
  type PolicyApprovals,
  type PolicyGuardrails,
  type PolicyModelPrice,
  type PolicySpendCap,
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

export { MAX_YAML_ALIAS_COUNT } from './read.js';

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
  const checkedFormat = readFormat(format);
  const subject = subjectOf(source, 'policy');
  return validate(readText(text, checkedFormat, subject, 'a policy file'), subject);
}

/**
 * Validates a policy that is already parsed (from JSON, or built in code). The value is treated as untrusted:
 * only plain objects, arrays and scalars are read, and a `__proto__` key is refused.
 *
 * @throws GuardrailValidationError naming the path: `guardrails.max_steps must be an integer >= 1, got 0`
 */
export function validatePolicy(value: unknown, options?: ValidatePolicyOptions): Policy {
  const { source } = readOptions(options, ['source']);
  return validate(value, subjectOf(source, 'policy'));
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
 * The strictest of several sets of limits, limit by limit: the lowest of the numbers (absent or null is
 * unlimited) and every confirmation any of them requires. Used where two parties set limits for one plan
 * (an operator's policy over an agent's plan file), so that neither can loosen the other.
 */
export function strictestGuardrails(...inits: readonly GuardrailsInit[]): GuardrailsInit {
  const lowest = (values: readonly (number | null | undefined)[]): number | null => {
    const set = values.filter((v): v is number => typeof v === 'number');
    return set.length === 0 ? null : Math.min(...set);
  };
  const confirmations = [...new Set(inits.flatMap((i) => i.requiredConfirmations ?? []))];
  return {
    maxSteps: lowest(inits.map((i) => i.maxSteps)),
    toolBudget: lowest(inits.map((i) => i.toolBudget)),
    requiredConfirmations: confirmations,
    maxWallClockSeconds: lowest(inits.map((i) => i.maxWallClockSeconds)),
    actorLimits: {
      maxToolCallsPerInvocation: lowest(inits.map((i) => i.actorLimits?.maxToolCallsPerInvocation)),
      maxRetriesPerFailure: lowest(inits.map((i) => i.actorLimits?.maxRetriesPerFailure)),
    },
  };
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
 * The policy's model prices, held exactly in micro-units per million tokens, for `RunGuard({ models })`.
 * A model the policy does not name has no entry.
 */
export function modelPrices(policy: Policy): ModelPrices {
  return policyPrices(priceTable(policy.models ?? {}));
}

/**
 * The policy's spend caps across plans (`budgets:`), validated, limits held exactly in micro-units,
 * time zones defaulted to UTC: what a service or store enforces. None when the policy has no `budgets:`.
 */
export function policyBudgets(policy: Policy): readonly SpendCap[] {
  return spendCapsFromJson(policy.budgets ?? [], 'budgets');
}

/** What the policy does with a model it has no price for: `deny` (the default) or `allow`. */
export function unpricedModels(policy: Policy): 'deny' | 'allow' {
  return policy.unpriced_models ?? 'deny';
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

function validate(value: unknown, subject: Subject): Policy {
  const keyRule = (path: readonly PropertyKey[]) =>
    path[0] === 'models'
      ? 'a model id'
      : path[0] === 'budgets'
        ? 'a label name'
        : path[0] === 'notify'
          ? 'a target name'
          : 'a tool name';
  const policy = toPolicy(validateWith(policySchema, value, subject, { keyRule }));
  checkGuardrails(policy, subject);
  checkApprovalRules(policy, subject);
  checkNotify(policy.notify, subject);
  return policy;
}

/**
 * The limits together, as the guardrails check them: a rule the schema cannot express (an operation name
 * with invisible characters) is refused here, naming its path in the file.
 */
function checkGuardrails(policy: Policy, subject: Subject): void {
  try {
    AutonomyGuardrails.create(policyToGuardrailsInit(policy));
  } catch (e) {
    if (!isGuardrailValidationError(e)) throw e;
    const inner = e.field;
    const field = inner === undefined ? fieldOf(['guardrails'], subject) : `guardrails.${inner}`;
    const message =
      inner !== undefined && e.message.startsWith(inner)
        ? `guardrails.${e.message}`
        : `guardrails: ${e.message}`;
    throw new GuardrailValidationError(field, `${subject.prefix}${message}`, { cause: e });
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
  if (data.approvals !== undefined) out.approvals = toPolicyApprovals(data.approvals as PolicyApprovals);
  if (data.tools !== undefined) {
    const tools: Record<string, PolicyToolRule> = Object.create(null) as Record<string, PolicyToolRule>;
    for (const name of Object.keys(data.tools)) {
      tools[name] = frozen({ ...(data.tools[name] as PolicyToolRule) });
    }
    out.tools = Object.freeze(tools);
  }
  if (data.models !== undefined) {
    const models = Object.create(null) as Record<string, PolicyModelPrice>;
    for (const id of Object.keys(data.models))
      models[id] = frozen({ ...(data.models[id] as PolicyModelPrice) });
    out.models = Object.freeze(models);
  }
  if (data.unpriced_models !== undefined) out.unpriced_models = data.unpriced_models;
  if (data.mcp !== undefined) {
    const m = data.mcp;
    out.mcp = frozen({
      allow: m.allow === undefined ? undefined : Object.freeze([...m.allow]),
      deny: m.deny === undefined ? undefined : Object.freeze([...m.deny]),
      confirm_destructive: m.confirm_destructive,
    });
  }
  if (data.budgets !== undefined) out.budgets = Object.freeze(data.budgets.map(toPolicySpendCap));
  if (data.notify !== undefined) out.notify = copyNotify(data.notify);
  return Object.freeze(out);
}

/** `approvals` copied: `ttl_seconds` and each rule, in a record without a prototype. */
function toPolicyApprovals(data: PolicyApprovals): PolicyApprovals {
  const out = Object.create(null) as Record<string, PolicyApprovalRule | number>;
  if (data.ttl_seconds !== undefined) out['ttl_seconds'] = data.ttl_seconds;
  for (const [key, rule] of approvalRuleEntries(data)) {
    out[key] = frozen<PolicyApprovalRule>({ ...rule, approvers: Object.freeze([...rule.approvers]) });
  }
  return Object.freeze(out);
}

function toPolicySpendCap(cap: NonNullable<PolicyData['budgets']>[number]): PolicySpendCap {
  return frozen<PolicySpendCap>({
    id: cap.id,
    match: Object.freeze({ ...cap.match }),
    limit: cap.limit,
    window: cap.window,
    timezone: cap.timezone,
    alert_at: cap.alert_at === undefined ? undefined : Object.freeze(cap.alert_at.map((f) => f + 0)),
  });
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
