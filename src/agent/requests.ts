import { z } from 'zod';
import type { ConfirmationAsk } from '../service/confirmations.js';
import { invalid } from '../errors.js';
import { validRuntimeKey } from '../guardrails/AutonomyGuardrails.js';
import { normalizeOperation } from '../guardrails/operation.js';
import { objectWithKeys } from '../guardrails/validate.js';
import { copyJsonValue, isPlainObject, type JsonValue } from '../json.js';
import { toMicros } from '../money.js';
import { isAbortSignal } from '../signals.js';
import { amount, optionField, strict, validateEntry } from '../validation.js';
import type { ToolResult, ToolRule } from './toolResult.js';
import { inputHash } from '../service/hash.js';
import type { Approval } from '../store/GuardrailStore.js';

/** Rules for one tool an agent may call: a policy's `toolRules(policy)` entry, with its operation. */
export interface AgentToolRule extends Partial<ToolRule> {
  /** Operation name checked against `required_confirmations`; defaults to the tool's name. */
  readonly operation?: string;
}

/** What a tool call's `run` is handed. */
export interface ToolCallContext {
  readonly toolCallId: string;
  /** 1 for the first try, 2 for the first retry, … */
  readonly attempt: number;
  /**
   * The call's input as it was when the call started: a frozen copy, the one the grant was checked
   * against. `run` must act on it, not on the object it was given, which its caller may still change.
   */
  readonly input: JsonValue | undefined;
  /** Aborts when the plan's wall-clock limit runs out while the call runs. */
  readonly signal: AbortSignal;
}

/** One tool call a model picked, to guard. */
export interface ToolCallRequest<T> {
  /** The model's id for the call: the decision id its confirmation is bound to. */
  readonly toolCallId: string;
  readonly toolName: string;
  /** The call's arguments (JSON), copied when the call starts: a grant is bound to their canonical hash. */
  readonly input?: unknown;
  /** Cost to reserve; it can raise the tool's `costPerCall`, never lower it. */
  readonly estimate?: number;
  /** A person must confirm this call whatever the policy says (as a rule's `requiresConfirmation`). */
  readonly requiresConfirmation?: boolean;
  /**
   * Does the call with `ctx.input`: returns its output, or `toolResult(output, { cost })` to report the
   * actual cost.
   */
  readonly run: (ctx: ToolCallContext) => T | ToolResult<T> | Promise<T | ToolResult<T>>;
  /**
   * The caller's cancellation of the call (a framework's abort signal): once it is aborted, a failed try
   * is not tried again and a backoff under way ends, the try's error passed on. Hand it to the tool as
   * well: the guard does not abort `ctx.signal` for it.
   */
  readonly signal?: AbortSignal | undefined;
}

/** A tool call about to be asked for: its id, its tool and its input. */
export type ToolCallStart = Pick<
  ToolCallRequest<unknown>,
  'toolCallId' | 'toolName' | 'input' | 'requiresConfirmation'
>;

const REQUEST_KEYS = ['toolCallId', 'toolName', 'input', 'estimate', 'requiresConfirmation', 'run', 'signal'];

/** A request as a guard holds it once checked: every field present (undefined when not given). */
export interface ValidRequest<T> {
  readonly toolCallId: string;
  readonly toolName: string;
  /** A frozen copy of the input. */
  readonly input: JsonValue | undefined;
  readonly estimate: number | undefined;
  readonly requiresConfirmation: boolean;
  readonly run: ToolCallRequest<T>['run'];
  readonly signal: AbortSignal | undefined;
}

const notRun = (): undefined => undefined;

/**
 * The request, checked, as a frozen copy: its input copied now, so later changes to it reach nothing.
 * Without `withRun`, a call about to be asked for (no `run` needed).
 */
export function validRequest<T>(request: ToolCallRequest<T>): ValidRequest<T>;
export function validRequest(request: ToolCallStart, withRun: false): ValidRequest<unknown>;
export function validRequest<T>(
  request: ToolCallRequest<T> | ToolCallStart,
  withRun = true,
): ValidRequest<T> {
  const r = objectWithKeys(request, 'request', REQUEST_KEYS);
  const toolCallId = validRuntimeKey(r['toolCallId'], 'toolCallId');
  const toolName = r['toolName'];
  if (typeof toolName !== 'string' || toolName.length === 0) {
    invalid('toolName', 'a non-empty string', toolName);
  }
  normalizeOperation(toolName, 'toolName');
  const input = r['input'] === undefined ? undefined : copyJsonValue(r['input'], 'input');
  const estimate = r['estimate'];
  if (estimate !== undefined) toMicros(estimate, 'estimate', 'up');
  const confirm = r['requiresConfirmation'];
  if (confirm !== undefined && typeof confirm !== 'boolean')
    invalid('requiresConfirmation', 'a boolean', confirm);
  const run = withRun ? r['run'] : notRun;
  if (typeof run !== 'function') invalid('run', 'a function', run);
  const signal = r['signal'];
  if (signal !== undefined && !isAbortSignal(signal)) invalid('signal', 'an AbortSignal', signal);
  // One shape for every request: a literal with optional keys spread in would leave V8's fast path.
  return Object.freeze({
    toolCallId,
    toolName,
    input,
    estimate: estimate as number | undefined,
    requiresConfirmation: confirm === true,
    run: run as ToolCallRequest<T>['run'],
    signal: signal as AbortSignal | undefined,
  });
}

const CALLS_RULE = 'an integer >= 1 or null';

/** One tool's rule as an option holds it (see {@link AgentToolRule}); its operation is a name to confirm. */
const agentToolRuleSchema = strict({
  operation: z.string({ error: 'a string' }).optional(),
  requiresConfirmation: z.boolean({ error: 'a boolean' }).optional(),
  costPerCall: amount().nullable().optional(),
  maxCallsPerPlan: z.int({ error: CALLS_RULE }).min(1, { error: CALLS_RULE }).nullable().optional(),
});

/** The per-tool rules, from a Map (as `toolRules(policy)` gives) or a plain object, validated. */
export function toolRulesOf(value: unknown): ReadonlyMap<string, AgentToolRule> {
  if (value === undefined) return new Map();
  const entries =
    value instanceof Map
      ? [...(value as Map<unknown, unknown>)]
      : isPlainObject(value)
        ? Object.entries(value)
        : invalid('tools', 'a Map or an object of tool rules', value);
  const rules = new Map<string, AgentToolRule>();
  for (const [key, raw] of entries) {
    const name = String(key);
    // An undefined rule is no rule of its own, as an undefined option is no option.
    const rule = validateEntry(agentToolRuleSchema, raw === undefined ? {} : raw, ['tools', name]);
    // An operation is compared as the policy's names are: the one rule for them.
    if (rule.operation !== undefined)
      normalizeOperation(rule.operation, optionField(['tools', name, 'operation']));
    rules.set(name, Object.freeze(rule as AgentToolRule));
  }
  return rules;
}

/** What a call's confirmation asks for (see `RunGuard.#ask`). */
export type Ask = ConfirmationAsk & {
  readonly decisionId: string;
  readonly operation: readonly string[];
  readonly input: unknown;
  readonly alwaysRequire: readonly string[];
};

/**
 * Whether `asked`, the approval found under the call's id, still stands for the call: it, or null. An
 * id used again for other input once its approval was used or refused (ids a model reuses across
 * conversations) is a new decision: null.
 */
export function stillAsked(ask: Ask, asked: Approval | null): Approval | null {
  if (asked === null || (asked.status !== 'used' && asked.status !== 'denied')) return asked;
  return asked.inputHash === inputHash(ask.input) ? asked : null;
}
