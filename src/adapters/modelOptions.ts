import { z } from 'zod';
import { invalid } from '../errors.js';
import { guardOptions } from '../agent/guardOption.js';
import type { RunGuard } from '../agent/RunGuard.js';
import { validateWith } from '../policy/read.js';

// The options every adapter's model metering takes, checked once: the guard, the model's price key and
// the output a call may use when it sets none.

/** What a model call may use when it sets no limit of its own, in every adapter. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4096;

/** What `modelId` must be. */
export const MODEL_ID_RULE = 'the price key of the model, a non-empty string';

function schemaOf(minOutput: number) {
  const rule = `an integer >= ${minOutput}`;
  return z.object({
    modelId: z.string({ error: MODEL_ID_RULE }).min(1, { error: MODEL_ID_RULE }).optional(),
    maxOutputTokens: z
      .int({ error: rule })
      .min(minOutput, { error: rule })
      .default(DEFAULT_MAX_OUTPUT_TOKENS),
  });
}

const SCHEMAS = { 0: schemaOf(0), 1: schemaOf(1) } as const;

/** An adapter's model options, checked. */
export interface ModelOptions {
  readonly guard: RunGuard;
  /** The model's price key, when the options give one. */
  readonly modelId: string | undefined;
  readonly maxOutputTokens: number;
  /** The options object, its keys checked, for the adapter's own (`keys`). */
  readonly options: Readonly<Record<string, unknown>>;
}

/**
 * Checks `options`: no keys but `guard`, `modelId`, `maxOutputTokens` and the adapter's own `keys`; a
 * RunGuard; `modelId` and `maxOutputTokens` (an integer >= `minOutput`, default 4096; null or absent
 * for the default) against their schema. Throws GuardrailValidationError naming the field and the value.
 */
export function modelOptions(
  options: unknown,
  keys: readonly string[] = [],
  minOutput: 0 | 1 = 1,
): ModelOptions {
  const o = guardOptions(options, ['modelId', 'maxOutputTokens', ...keys]);
  // Null is no value, as it is for every leash option with a default: the default applies.
  const given: Record<string, unknown> = {};
  if (o['modelId'] != null) given['modelId'] = o['modelId'];
  if (o['maxOutputTokens'] != null) given['maxOutputTokens'] = o['maxOutputTokens'];
  const parsed = validateWith(SCHEMAS[minOutput], given, { root: 'options', prefix: '', at: [] });
  return {
    guard: o['guard'] as RunGuard,
    modelId: parsed.modelId,
    maxOutputTokens: parsed.maxOutputTokens,
    options: o,
  };
}

/** `modelId`, or the model's own id, checked as a price key. */
export function priceKey(given: string | undefined, fallback: unknown): string {
  const modelId = given ?? fallback;
  if (typeof modelId !== 'string' || modelId.length === 0) invalid('modelId', MODEL_ID_RULE, modelId);
  return modelId;
}
