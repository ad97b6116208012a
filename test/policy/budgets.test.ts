import { describe, expect, it } from 'vitest';
import { parsePolicy, policyBudgets, validatePolicy } from '../../src/policy/index.js';
import { thrown } from '../support/thrown.js';

/** The field and message of the GuardrailValidationError that `fn` throws. */
function refusal(fn: () => unknown): [string | undefined, string] {
  const e = thrown(fn);
  return [e.field, e.message];
}

const YAML = `version: 1
budgets:
  - id: team-monthly
    match: { team: ml }
    limit: 500.00
    window: month
    timezone: Europe/Berlin
    alert_at: [0.8, 1.0]
  - id: user-daily
    match: { user: '*' }
    limit: 5.00
    window: day
`;

const cap = (over: Record<string, unknown> = {}) => ({
  id: 'user-daily',
  match: { user: '*' },
  limit: 5,
  window: 'day',
  ...over,
});
const withBudgets = (budgets: unknown) => ({ version: 1, budgets });

describe('policy budgets', () => {
  it('keeps the budgets block as written', () => {
    expect(parsePolicy(YAML).budgets).toEqual([
      {
        id: 'team-monthly',
        match: { team: 'ml' },
        limit: 500,
        window: 'month',
        timezone: 'Europe/Berlin',
        alert_at: [0.8, 1],
      },
      { id: 'user-daily', match: { user: '*' }, limit: 5, window: 'day' },
    ]);
  });

  it('freezes the budgets block', () => {
    const budgets = parsePolicy(YAML).budgets ?? [];
    expect([
      Object.isFrozen(budgets),
      Object.isFrozen(budgets[0]),
      Object.isFrozen(budgets[0]?.match),
    ]).toEqual([true, true, true]);
  });

  it('gives the caps validated, limits in micro-units and time zones defaulted', () => {
    expect(policyBudgets(parsePolicy(YAML)).map((c) => [c.id, c.limitMicros, c.timezone, c.alertAt])).toEqual(
      [
        ['team-monthly', 500_000_000, 'Europe/Berlin', [0.8, 1]],
        ['user-daily', 5_000_000, 'UTC', []],
      ],
    );
  });

  it('gives no caps for a policy without budgets', () => {
    expect(policyBudgets(validatePolicy({ version: 1 }))).toEqual([]);
  });

  it('accepts an empty budgets block', () => {
    expect(validatePolicy(withBudgets([])).budgets).toEqual([]);
  });

  it('accepts its own output', () => {
    const first = parsePolicy(YAML);
    expect(validatePolicy(first)).toEqual(first);
  });

  it('names the path of a bad limit', () => {
    expect(refusal(() => validatePolicy(withBudgets([cap({ limit: -5 })])))).toEqual([
      'budgets[0].limit',
      'budgets[0].limit must be a finite number >= 0, got -5',
    ]);
  });

  it('names the path of an unknown time zone', () => {
    expect(
      refusal(() => validatePolicy(withBudgets([cap(), cap({ id: 'b', timezone: 'Mars/Base' })]))),
    ).toEqual(['budgets[1].timezone', 'budgets[1].timezone must be an IANA time zone, got "Mars/Base"']);
  });

  it('names a repeated id', () => {
    expect(refusal(() => validatePolicy(withBudgets([cap(), cap({ id: 'b' }), cap()])))).toEqual([
      'budgets[2].id',
      'budgets[2].id must be an id no other cap in the list has, got "user-daily"',
    ]);
  });

  it('calls a bad match key a label name', () => {
    expect(refusal(() => validatePolicy(withBudgets([cap({ match: { User: '*' } })])))).toEqual([
      'budgets[0].match',
      'budgets[0].match key must be a label name: a lowercase letter, then up to 62 lowercase letters, digits or underscores, got "User"',
    ]);
  });

  it('refuses the code form’s camelCase key', () => {
    expect(thrown(() => validatePolicy(withBudgets([cap({ alertAt: [0.5] })]))).field).toBe(
      'budgets[0].alertAt',
    );
  });

  it('names the file in the message of a file’s bad budget', () => {
    const text = 'version: 1\nbudgets:\n  - { id: a, match: {}, limit: 1, window: year }\n';
    expect(refusal(() => parsePolicy(text, { source: 'leash.yaml' }))).toEqual([
      'budgets[0].window',
      'leash.yaml: budgets[0].window must be day, week, month or lifetime, got "year"',
    ]);
  });
});
