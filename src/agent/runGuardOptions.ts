import { approvalTtlOf } from './calls.js';
import { wait, type Clock } from '../clock.js';
import { invalid } from '../errors.js';
import { objectWithKeys } from '../guardrails/validate.js';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import { validatePlanId } from '../ids.js';
import { type UnpricedModels } from './modelCalls.js';
import { priceTable, type ModelPrice, type ModelPrices } from './prices.js';
import { realTimers, type Timers } from './deadline.js';
import { retryPolicy, type RetryOptions, type RetryPolicy, type Sleep } from './retries.js';
import { toolRulesOf, type AgentToolRule } from './requests.js';

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
   * Every entry of a call's checks names the call: its tool and its input's canonical hash (the one
   * grants are bound to). Default false: a call is known by its tool call id and its operation.
   */
  readonly recordCalls?: boolean;
}

const OPTION_KEYS = [
  'service',
  'planId',
  'tools',
  'clock',
  'approvalTtlMs',
  'retry',
  'sleep',
  'timers',
  'models',
  'unpricedModels',
  'recordCalls',
];

/** A run guard's options, checked (throws GuardrailValidationError naming the field). */
export interface RunGuardSettings {
  readonly service: AutonomyGuardrailService;
  readonly planId: string;
  readonly rules: ReadonlyMap<string, AgentToolRule>;
  readonly approvalTtlMs: number;
  readonly retry: RetryPolicy;
  readonly sleep: Sleep;
  readonly timers: Timers;
  readonly prices: ModelPrices;
  readonly unpriced: UnpricedModels;
  readonly recordCalls: boolean;
}

const NO_RULES: ReadonlyMap<string, AgentToolRule> = new Map();
const NO_PRICES: ModelPrices = new Map();
const DEFAULT_RETRY: RetryPolicy = retryPolicy(undefined);

/** Checks a run guard's options. */
export function runGuardSettings(options: RunGuardOptions): RunGuardSettings {
  const o = objectWithKeys(options, 'options', OPTION_KEYS);
  const service = o['service'] as AutonomyGuardrailService | undefined;
  if (typeof service !== 'object' || service === null || typeof service.takeStep !== 'function') {
    invalid('service', 'an AutonomyGuardrailService', service);
  }
  const planId = validatePlanId(o['planId']);
  // Without rules, retry options or prices a guard shares the defaults: most are made per run.
  const rules = o['tools'] === undefined ? NO_RULES : toolRulesOf(o['tools']);
  const ttl = approvalTtlOf(o['approvalTtlMs']);
  const retry = o['retry'] === undefined ? DEFAULT_RETRY : retryPolicy(o['retry']);
  const sleep = (o['sleep'] as Sleep | undefined) ?? wait;
  const timers = (o['timers'] as Timers | undefined) ?? realTimers;
  const prices = o['models'] === undefined ? NO_PRICES : priceTable(o['models'] as ModelPrices, 'models');
  const unpriced = o['unpricedModels'] ?? 'deny';
  if (unpriced !== 'deny' && unpriced !== 'allow') invalid('unpricedModels', 'deny or allow', unpriced);
  const record = o['recordCalls'] ?? false;
  if (typeof record !== 'boolean') invalid('recordCalls', 'a boolean', record);
  return {
    service,
    planId,
    rules,
    approvalTtlMs: ttl,
    retry,
    sleep,
    timers,
    prices,
    unpriced,
    recordCalls: record,
  };
}
