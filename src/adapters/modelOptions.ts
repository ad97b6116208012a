import { z } from 'zod';
import { invalid } from '../errors.js';
import { GUARD_OPTION } from '../agent/guardOption.js';

// The options every adapter's model metering takes: the guard, the model's price key and the output a
// call may use when it sets none.

/** What a model call may use when it sets no limit of its own, in every adapter. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4096;

/** What `modelId` must be. */
export const MODEL_ID_RULE = 'the price key of the model, a non-empty string';

/**
 * The schema of an adapter's model options: `guard`, `modelId` and `maxOutputTokens` (an integer >=
 * `minOutput`, default 4096), and the adapter's `own`. Null, which the frameworks' own model settings
 * allow for these, is no value: the default applies.
 */
export function modelOptionsSchema<Own extends z.ZodRawShape>(minOutput: 0 | 1, own: Own) {
  const rule = `an integer >= ${minOutput}`;
  return z.object({
    ...GUARD_OPTION,
    modelId: z
      .string({ error: MODEL_ID_RULE })
      .min(1, { error: MODEL_ID_RULE })
      .nullish()
      .transform((id) => id ?? undefined),
    maxOutputTokens: z
      .int({ error: rule })
      .min(minOutput, { error: rule })
      .nullish()
      .transform((n) => n ?? DEFAULT_MAX_OUTPUT_TOKENS),
    ...own,
  });
}

/** The model options of an adapter that takes none of its own. */
export const MODEL_OPTIONS = modelOptionsSchema(1, {});

/** `modelId`, or the model's own id, checked as a price key. */
export function priceKey(given: string | undefined, fallback: unknown): string {
  const modelId = given ?? fallback;
  if (typeof modelId !== 'string' || modelId.length === 0) invalid('modelId', MODEL_ID_RULE, modelId);
  return modelId;
}
