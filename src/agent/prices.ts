import { invalid } from '../errors.js';
import { intField, objectWithKeys } from '../guardrails/validate.js';
import { isPlainObject } from '../json.js';
import { fromMicros, MAX_AMOUNT, MICROS_PER_UNIT, toMicros } from '../money.js';
import { amount, integer, optionField, strict, validateEntry } from '../validation.js';

/** A model's prices per million tokens, in budget units, as a policy's `models:` block writes them. */
export interface ModelPrice {
  readonly input: number;
  readonly output: number;
  /** The price of input tokens read from the provider's cache; default the `input` price. */
  readonly cached_input?: number;
}

/** A model's prices held exactly: micro-units per million tokens. */
export interface ModelRates {
  readonly inputMicros: number;
  readonly outputMicros: number;
  readonly cachedInputMicros: number;
}

/** The rates of a model that costs nothing: an unpriced one, run unmetered. */
export const FREE_RATES: ModelRates = Object.freeze({
  inputMicros: 0,
  outputMicros: 0,
  cachedInputMicros: 0,
});

/** Prices by model id. */
export type ModelPrices = ReadonlyMap<string, ModelRates>;

/** Tokens estimated for text of `bytes` UTF-8 bytes: one for every 3 (English averages about 4). */
export function bytesToTokens(bytes: number): number {
  return Math.ceil(bytes / 3);
}

/** What a model call used. `inputTokens` includes the cached ones, which are priced at the cached rate. */
export interface TokenUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedInputTokens?: number;
}

/** What a model call may use at most: its prompt and the most output it is allowed. */
export interface TokenEstimate {
  readonly inputTokens: number;
  readonly maxOutputTokens: number;
}

const MILLION = 1_000_000n;
const MAX_MICROS = BigInt(MAX_AMOUNT) * BigInt(MICROS_PER_UNIT);

/** A model's prices as a policy's `models:` block writes them (see {@link ModelPrice}). */
export const modelPriceSchema = strict({
  input: amount().describe('Money one million input tokens cost, exact to one millionth.'),
  output: amount().describe('Money one million output tokens cost, exact to one millionth.'),
  cached_input: amount()
    .optional()
    .describe('Money one million input tokens read from the provider’s cache cost. Default the input price.'),
}).describe('Prices of one model, per million tokens.');

/** A model's prices as a table already holds them (see {@link ModelRates}). */
const modelRatesSchema = strict({
  inputMicros: integer(0),
  outputMicros: integer(0),
  cachedInputMicros: integer(0),
});

/** The price tables made from a policy's `models:` block: a missing price is named as the policy's. */
const FROM_POLICY = new WeakSet<ModelPrices>();

/** Marks a table as a policy's (see {@link pricesFrom}); returns it. */
export function policyPrices(table: ModelPrices): ModelPrices {
  FROM_POLICY.add(table);
  return table;
}

/** Where a table's prices were given: a policy file, or the application's options. */
export function pricesFrom(table: ModelPrices): 'policy' | 'options' {
  return FROM_POLICY.has(table) ? 'policy' : 'options';
}

/**
 * A price table from a `models:` block (an object or a Map by model id), each price validated and held
 * in micro-units, rounded up as costs are. A table already held so (`modelPrices(policy)`) is taken as
 * it is, checked, and stays a policy's.
 */
export function priceTable(
  models: Readonly<Record<string, ModelPrice>> | ReadonlyMap<string, ModelPrice | ModelRates>,
  field = 'models',
): ModelPrices {
  const entries: [string, unknown][] =
    models instanceof Map
      ? [...(models as ReadonlyMap<string, unknown>)]
      : isPlainObject(models)
        ? Object.entries(models)
        : invalid(field, 'an object of model prices', models);
  const table = new Map<string, ModelRates>();
  for (const [id, price] of entries) {
    const at = [field, id];
    if (isPlainObject(price) && 'inputMicros' in price) {
      table.set(id, Object.freeze(validateEntry(modelRatesSchema, price, at)));
      continue;
    }
    const p = validateEntry(modelPriceSchema, price, at);
    const micros = (value: number, key: string) => toMicros(value, optionField([field, id, key]), 'up');
    const inputMicros = micros(p.input, 'input');
    table.set(
      id,
      Object.freeze({
        inputMicros,
        outputMicros: micros(p.output, 'output'),
        cachedInputMicros:
          p.cached_input === undefined ? inputMicros : micros(p.cached_input, 'cached_input'),
      }),
    );
  }
  return models instanceof Map && FROM_POLICY.has(models as ModelPrices) ? policyPrices(table) : table;
}

/** What `usage` costs at `rates`, in micro-units: exact, and rounded up to a whole micro-unit. */
export function usageCostMicros(rates: ModelRates, usage: TokenUsage, field = 'usage'): number {
  const u = objectWithKeys(usage, field, ['inputTokens', 'outputTokens', 'cachedInputTokens']);
  const input = tokens(u['inputTokens'], `${field}.inputTokens`);
  const output = tokens(u['outputTokens'], `${field}.outputTokens`);
  const cached =
    u['cachedInputTokens'] === undefined ? 0 : tokens(u['cachedInputTokens'], `${field}.cachedInputTokens`);
  if (cached > input) invalid(`${field}.cachedInputTokens`, `at most inputTokens (${input})`, cached);
  return costMicros(rates, input - cached, cached, output, field);
}

/**
 * The most a call within `estimate` can cost, in micro-units: each input token at the higher of the input
 * and cached input prices (a table may price cached input above uncached), plus its most output.
 */
export function estimateCostMicros(rates: ModelRates, estimate: TokenEstimate, field = 'estimate'): number {
  const e = objectWithKeys(estimate, field, ['inputTokens', 'maxOutputTokens']);
  const input = tokens(e['inputTokens'], `${field}.inputTokens`);
  const output = tokens(e['maxOutputTokens'], `${field}.maxOutputTokens`);
  const dearest = { ...rates, inputMicros: Math.max(rates.inputMicros, rates.cachedInputMicros) };
  return costMicros(dearest, input, 0, output, field);
}

function costMicros(
  rates: ModelRates,
  uncached: number,
  cached: number,
  output: number,
  field: string,
): number {
  const scaled =
    BigInt(uncached) * BigInt(rates.inputMicros) +
    BigInt(cached) * BigInt(rates.cachedInputMicros) +
    BigInt(output) * BigInt(rates.outputMicros);
  const micros = (scaled + MILLION - 1n) / MILLION;
  if (micros > MAX_MICROS) invalid(field, `tokens costing at most ${MAX_AMOUNT}`, fromMicros(Number(micros)));
  return Number(micros);
}

/** A count of tokens, or of micro-units: an integer >= 0. */
function tokens(value: unknown, field: string): number {
  return intField(value, field, 0, false) as number;
}
