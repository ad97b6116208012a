// Writes schema/policy.schema.json and schema/plan.schema.json from the zod schemas;
// test/policy/jsonSchema.test.ts and test/cli/planSchema.test.ts fail when either is stale.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { planFileJsonSchema } from '../src/runner/planSchema.js';
import { policyJsonSchema } from '../src/policy/jsonSchema.js';

const schemas: readonly [string, Record<string, unknown>][] = [
  ['../schema/policy.schema.json', policyJsonSchema()],
  ['../schema/plan.schema.json', planFileJsonSchema()],
];

for (const [path, schema] of schemas) {
  const target = fileURLToPath(new URL(path, import.meta.url));
  // Formatted as `npm run lint` expects, so regenerating never leaves the tree unformatted.
  const options = (await resolveConfig(target)) ?? {};
  const text = await format(JSON.stringify(schema, null, 2), { ...options, parser: 'json' });
  writeFileSync(target, text.endsWith('\n') ? text : `${text}\n`);
  console.log(`wrote ${target}`);
}
