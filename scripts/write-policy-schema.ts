// Writes schema/policy.schema.json from the zod schema; test/policy/jsonSchema.test.ts fails when it is stale.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { policyJsonSchema } from '../src/policy/jsonSchema.js';

const target = fileURLToPath(new URL('../schema/policy.schema.json', import.meta.url));
// Formatted as `npm run lint` expects, so regenerating never leaves the tree unformatted.
const options = (await resolveConfig(target)) ?? {};
const text = await format(JSON.stringify(policyJsonSchema(), null, 2), { ...options, parser: 'json' });
writeFileSync(target, text.endsWith('\n') ? text : `${text}\n`);
console.log(`wrote ${target}`);
