import { z } from 'zod';
import {
  LABEL_NAME,
  LABEL_NAME_RULE,
  LABEL_VALUE_RULE,
  MAX_LABELS,
  MAX_LABEL_VALUE_LENGTH,
} from '../guardrails/labels.js';
import { isPlainText } from '../unicode.js';

// The `labels:` of a plan file: the rules of validateLabels, as zod states them, so that the plan file's
// JSON Schema states those it can (every one but lone surrogates).

// eslint-disable-next-line no-control-regex -- finding control characters is the point
const NO_CONTROL = /^[^\u0000-\u001f\u007f-\u009f]*$/;

/** A plan's labels, as `validateLabels` checks them; JSON Schema cannot see lone surrogates. */
export const labelsSchema = z
  .record(
    z.string().regex(LABEL_NAME, { error: LABEL_NAME_RULE }),
    z
      .string({ error: LABEL_VALUE_RULE })
      .min(1, { error: LABEL_VALUE_RULE })
      .max(MAX_LABEL_VALUE_LENGTH, { error: LABEL_VALUE_RULE })
      .regex(NO_CONTROL, { error: LABEL_VALUE_RULE })
      .refine(isPlainText, { error: LABEL_VALUE_RULE }),
    { error: 'an object of label names to string values' },
  )
  .refine((labels) => Object.keys(labels).length <= MAX_LABELS, {
    error: `an object of at most ${MAX_LABELS} labels`,
  })
  .meta({
    maxProperties: MAX_LABELS,
    description:
      'Who or what the plan runs for (team: ml, user: ann), for limits shared by several plans. `leash run --label name=value` adds to them.',
  });
