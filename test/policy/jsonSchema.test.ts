import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { POLICY_SCHEMA_ID, policyJsonSchema } from '../../src/policy/index.js';

const CHECKED_IN = new URL('../../schema/policy.schema.json', import.meta.url);

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

describe('policyJsonSchema', () => {
  it('matches schema/policy.schema.json', () => {
    const checkedIn: unknown = JSON.parse(readFileSync(CHECKED_IN, 'utf8'));
    expect(checkedIn, 'schema/policy.schema.json is stale: run `npm run schema`').toEqual(policyJsonSchema());
  });

  it('is draft 2020-12 with an id and a title', () => {
    expect(policyJsonSchema()).toMatchObject({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: POLICY_SCHEMA_ID,
      title: 'leash policy',
    });
  });

  it('requires the version', () => {
    expect(policyJsonSchema()['required']).toEqual(['version']);
  });

  it('refuses unknown keys in every object except the maps of approval rules, tools, models, matched labels and notification targets', () => {
    const open = objectSchemas(policyJsonSchema()).filter((s) => s['additionalProperties'] !== false);
    expect(open.map((s) => s['description'])).toEqual([
      expect.stringMatching(/^How confirmation requests behave/),
      expect.stringMatching(/^Per-tool rules/),
      expect.stringMatching(/^Model prices/),
      expect.stringMatching(/^Labels a plan must have/),
      expect.stringMatching(/^Notification targets/),
    ]);
  });

  it('offers the limits and not the runtime state', () => {
    const guardrails = (policyJsonSchema()['properties'] as Record<string, Schema>)['guardrails'];
    expect(Object.keys(guardrails?.['properties'] as Schema)).toEqual([
      'max_steps',
      'tool_budget',
      'required_confirmations',
      'max_wall_clock_seconds',
      'actor_limits',
    ]);
  });

  it('describes the approval rules beside the TTL', () => {
    const approvals = (policyJsonSchema()['properties'] as Record<string, Schema>)['approvals'];
    const rule = approvals?.['additionalProperties'] as Schema;
    expect([rule['required'], rule['additionalProperties']]).toEqual([['approvers'], false]);
  });

  it('gives the approval TTL its default', () => {
    const approvals = (policyJsonSchema()['properties'] as Record<string, Schema>)['approvals'];
    expect((approvals?.['properties'] as Record<string, Schema>)['ttl_seconds']?.['default']).toBe(86_400);
  });
});
