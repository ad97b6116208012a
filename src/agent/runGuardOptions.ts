import { z } from 'zod';
import { DEFAULT_APPROVAL_TTL_MS } from './calls.js';
import { clockOption, wait, type Clock } from '../clock.js';
import { isPlainObject } from '../json.js';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import { validatePlanId } from '../ids.js';
import { checkedBy, functionOption, handle, integer, parseOptions } from '../validation.js';
import { type UnpricedModels } from './modelCalls.js';
import { priceTable, type ModelPrice, type ModelPrices } from './prices.js';
import { realTimers, type Timers } from './deadline.js';
import { DEFAULT_RETRY, retryOption, type RetryOptions, type Sleep } from './retries.js';
import { toolRulesOf, type AgentToolRule } from './requests.js';
import type { UnconfiguredPlans } from './unconfigured.js';

// What a run guard is made with, checked.

export interface RunGuardOptions {
  readonly service: AutonomyGuardrailService;
  /** The plan whose guardrails and audit log the agent's run is held to. */
  readonly planId: string;
  /** Per-tool rules by tool name, e.g. `toolRules(policy)`; a tool without one has no rule. */
  readonly tools?: ReadonlyMap<string, AgentToolRule> | Readonly<Record<string, AgentToolRule>>;
  /** Only to validate that callers pass one clock everywhere; the service's clock decides. */
  readonly clock?: Clock;
  /** How long a confirmation request stays valid. Default 24 hours. */
  readonly approvalTtlMs?: number;
  /** Backoff between retries of one failure, and the cap when the guardrails set none. */
  readonly retry?: RetryOptions;
  /** Waits between retries; defaults to a real timer. Inject one in tests. */
  readonly sleep?: Sleep;
  /** Timers for the wall-clock abort; injectable so tests need no real time. */
  readonly timers?: Timers;
  /** Model prices per million tokens by model id, e.g. `modelPrices(policy)`. */
  readonly models?: ModelPrices | Readonly<Record<string, ModelPrice>>;
  /** A model with no price, while the plan has a budget: refused (`deny`, the default) or run unmetered. */
  readonly unpricedModels?: UnpricedModels;
  /**
   * A plan nobody configured: `deny` (the default) rejects every guarded call with a `PLAN_NOT_CONFIGURED`
   * error naming the plan, since a mistyped id would otherwise mean no limits; `allow` runs its calls as
   * the service answers the checks of a plan with no guardrails.
   */
  readonly unconfiguredPlans?: UnconfiguredPlans;
  /**
   * Every entry of a call's checks names the call: its tool and its input's canonical hash (the one
   * grants are bound to). Default false: a call is known by its tool call id and its operation.
   */
  readonly recordCalls?: boolean;
}

const isFunction = (value: unknown): boolean => typeof value === 'function';
const isMapOrObject = (value: unknown): boolean => value instanceof Map || isPlainObject(value);

/** The options a run guard and a plan executor share. */
export const RUN_OPTIONS = {
  /** Checked, not used: the service's clock decides. */
  clock: clockOption.optional(),
  approvalTtlMs: integer(1).default(DEFAULT_APPROVAL_TTL_MS),
  retry: retryOption.default(() => DEFAULT_RETRY),
  sleep: functionOption<Sleep>().default(() => wait),
  timers: handle<Timers>(
    'an object with setTimeout and clearTimeout functions',
    (v) => isFunction((v as Timers | null)?.setTimeout) && isFunction((v as Timers | null)?.clearTimeout),
  ).default(() => realTimers),
};

const NO_RULES: ReadonlyMap<string, AgentToolRule> = new Map();
const NO_PRICES: ModelPrices = new Map();

const runGuardOptions = z.object({
  service: handle<AutonomyGuardrailService>('an AutonomyGuardrailService', (v) =>
    isFunction((v as AutonomyGuardrailService | null)?.takeStep),
  ),
  planId: checkedBy(validatePlanId),
  // Without rules or prices a guard shares the defaults: most are made per run.
  tools: handle<ReadonlyMap<string, AgentToolRule> | Readonly<Record<string, AgentToolRule>>>(
    'a Map or an object of tool rules',
    isMapOrObject,
  )
    .transform(toolRulesOf)
    .default(() => NO_RULES),
  models: handle<ModelPrices | Readonly<Record<string, ModelPrice>>>(
    'an object of model prices',
    isMapOrObject,
  )
    .transform((models) => priceTable(models, 'models'))
    .default(() => NO_PRICES),
  unpricedModels: z.enum(['deny', 'allow'], { error: 'deny or allow' }).default('deny'),
  unconfiguredPlans: z.enum(['deny', 'allow'], { error: 'deny or allow' }).default('deny'),
  recordCalls: z.boolean({ error: 'a boolean' }).default(false),
  ...RUN_OPTIONS,
});

/** A run guard's options, checked, with their defaults: what {@link runGuardSettings} returns. */
export type RunGuardSettings = z.output<typeof runGuardOptions>;

/** Checks a run guard's options (throws GuardrailValidationError naming the field). */
export function runGuardSettings(options: RunGuardOptions): RunGuardSettings {
  return parseOptions(runGuardOptions, options);
}
