import { z } from 'zod';
import { policySchema } from './schema.js';

/** The `$id` of the policy file's JSON Schema. */
export const POLICY_SCHEMA_ID = 'leash-policy.schema.json';

/**
 * The policy file format as JSON Schema (draft 2020-12), generated from the zod schema that
 * {@link validatePolicy} applies, so the two cannot drift. Editors use it for completion and checking;
 * it cannot express every rule (operation names are normalized, invisible characters refused), so a file
 * it accepts can still be refused by {@link parsePolicy}, never the other way round.
 *
 * `schema/policy.schema.json` holds a copy: `npm run schema` rewrites it.
 */
export function policyJsonSchema(): Record<string, unknown> {
  const { $schema, ...rest } = z.toJSONSchema(policySchema, { target: 'draft-2020-12', io: 'input' });
  return {
    $schema,
    $id: POLICY_SCHEMA_ID,
    title: 'leash policy',
    description:
      'Guardrails for autonomous plan executors: step, budget, wall-clock, tool-call and retry limits, confirmations, per-tool rules, and spend caps across plans. Unknown keys are errors.',
    ...rest,
  };
}
