import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PLAN_SCHEMA_ID, planFileJsonSchema } from '../../src/runner/planFile.js';
import { policyJsonSchema } from '../../src/policy/index.js';

const CHECKED_IN = new URL('../../schema/plan.schema.json', import.meta.url);

type Schema = { [key: string]: unknown };

/** Every subschema of `schema` that describes an object, however deep. */
function objectSchemas(schema: unknown, out: Schema[] = []): Schema[] {
  if (Array.isArray(schema)) {
    for (const item of schema) objectSchemas(item, out);
  } else if (typeof schema === 'object' && schema !== null) {
    const s = schema as Schema;
    if (s['type'] === 'object') out.push(s);
    for (const value of Object.values(s)) objectSchemas(value, out);
  }
  return out;
}

function propertiesOf(schema: unknown): Record<string, Schema> {
  return (schema as Schema)['properties'] as Record<string, Schema>;
}

/** The schema of each kind of decision, by tool name. */
function decisionSchemas(): Record<string, Schema> {
  const decisions = propertiesOf(planFileJsonSchema())['decisions'] as Schema;
  const options = (decisions['items'] as Schema)['oneOf'] as Schema[];
  return Object.fromEntries(options.map((o) => [propertiesOf(o)['tool']?.['const'] as string, o]));
}

describe('planFileJsonSchema', () => {
  it('matches schema/plan.schema.json', () => {
    const checkedIn: unknown = JSON.parse(readFileSync(CHECKED_IN, 'utf8'));
    expect(checkedIn, 'schema/plan.schema.json is stale: run `npm run schema`').toEqual(planFileJsonSchema());
  });

  it('is draft 2020-12 with an id and a title', () => {
    expect(planFileJsonSchema()).toMatchObject({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: PLAN_SCHEMA_ID,
      title: 'leash plan',
    });
  });

  it('requires the version and the decisions', () => {
    expect(planFileJsonSchema()['required']).toEqual(['version', 'decisions']);
  });

  it('refuses unknown keys in every object except maps of names and JSON values', () => {
    const open = objectSchemas(planFileJsonSchema()).filter((s) => s['additionalProperties'] !== false);
    expect(open.map((s) => s['description'])).toEqual([
      expect.stringMatching(/^Who or what the plan runs for/),
      expect.stringMatching(/^Environment variables/),
      'Request headers.',
      undefined, // an object inside any JSON value
    ]);
  });

  it('offers one kind of decision per built-in tool', () => {
    expect(Object.keys(decisionSchemas())).toEqual(['shell', 'http', 'sleep', 'echo']);
  });

  it('requires an input for every tool but echo', () => {
    const required = Object.entries(decisionSchemas()).map(([tool, s]) => [tool, s['required']]);
    expect(required).toEqual([
      ['shell', ['id', 'tool', 'input']],
      ['http', ['id', 'tool', 'input']],
      ['sleep', ['id', 'tool', 'input']],
      ['echo', ['id', 'tool']],
    ]);
  });

  it('describes the guardrails as the policy schema does', () => {
    expect(propertiesOf(planFileJsonSchema())['guardrails']).toEqual(
      propertiesOf(policyJsonSchema())['guardrails'],
    );
  });

  it('defines any JSON value once', () => {
    expect(Object.keys(planFileJsonSchema()['$defs'] as Schema)).toEqual(['json_value']);
  });
});
