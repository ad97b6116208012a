import { invalid } from '../errors.js';
import { intField, objectWithKeys } from '../guardrails/validate.js';
import { isPlainObject } from '../json.js';
import { fromMicros, MAX_AMOUNT, MICROS_PER_UNIT, toMicros } from '../money.js';

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

/**
 * A price table from a `models:` block (an object or a Map by model id), each price validated and held
 * in micro-units, rounded up as costs are. A table already held so (`modelPrices(policy)`) is taken as
 * it is, checked.
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
    const at = `${field}.${id}`;
    if (isPlainObject(price) && 'inputMicros' in price) {
      const r = objectWithKeys(price, at, ['inputMicros', 'outputMicros', 'cachedInputMicros']);
      table.set(
        id,
        Object.freeze({
          inputMicros: tokens(r['inputMicros'], `${at}.inputMicros`),
          outputMicros: tokens(r['outputMicros'], `${at}.outputMicros`),
          cachedInputMicros: tokens(r['cachedInputMicros'], `${at}.cachedInputMicros`),
        }),
      );
      continue;
    }
    const p = objectWithKeys(price ?? null, at, ['input', 'output', 'cached_input']);
    if (p['input'] === undefined) invalid(`${at}.input`, 'a finite number >= 0', undefined);
    if (p['output'] === undefined) invalid(`${at}.output`, 'a finite number >= 0', undefined);
    const inputMicros = toMicros(p['input'], `${at}.input`, 'up');
    table.set(
      id,
      Object.freeze({
        inputMicros,
        outputMicros: toMicros(p['output'], `${at}.output`, 'up'),
        cachedInputMicros:
          p['cached_input'] === undefined
            ? inputMicros
            : toMicros(p['cached_input'], `${at}.cached_input`, 'up'),
      }),
    );
  }
  return table;
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
