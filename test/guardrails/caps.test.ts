import { describe, expect, it } from 'vitest';
import {
  CAP_WINDOWS,
  capScope,
  isSpendCap,
  MAX_SPEND_CAPS,
  scopeText,
  spendCap,
  spendCapFromJson,
  spendCaps,
  spendCapsFromJson,
  spendCapToJson,
  type SpendCapInit,
} from '../../src/guardrails/caps.js';
import { thrown } from '../support/thrown.js';

const TEAM_MONTHLY: SpendCapInit = {
  id: 'team-monthly',
  match: { team: 'ml' },
  limit: 500,
  window: 'month',
  timezone: 'Europe/Berlin',
  alertAt: [0.8, 1],
};
const cap = (over: Record<string, unknown> = {}) => spendCap({ ...TEAM_MONTHLY, ...over });
const json = (over: Record<string, unknown> = {}) => ({
  id: 'user-daily',
  match: { user: '*' },
  limit: 5,
  window: 'day',
  ...over,
});

/** The field and message of the GuardrailValidationError that `fn` throws. */
function refusal(fn: () => unknown): [string | undefined, string] {
  const e = thrown(fn);
  return [e.field, e.message];
}

describe('spendCap', () => {
  it('lists the windows a cap counts over', () => {
    expect(CAP_WINDOWS).toEqual(['day', 'week', 'month', 'lifetime']);
  });

  it('builds a cap from its code form', () => {
    expect(cap()).toEqual({
      id: 'team-monthly',
      match: { team: 'ml' },
      limitMicros: 500_000_000,
      limit: 500,
      window: 'month',
      timezone: 'Europe/Berlin',
      alertAt: [0.8, 1],
    });
  });

  it('defaults to UTC and no alerts', () => {
    const c = spendCap({ id: 'all', match: {}, limit: 1, window: 'lifetime' });
    expect([c.timezone, c.alertAt]).toEqual(['UTC', []]);
  });

  it('holds the limit exactly in micro-units', () => {
    expect([cap({ limit: 0.1 + 0.2 }).limitMicros, cap({ limit: 0.1 + 0.2 }).limit]).toEqual([300_000, 0.3]);
  });

  it('rounds a limit finer than a micro-unit down', () => {
    expect(cap({ limit: 1.0000009 }).limitMicros).toBe(1_000_000);
  });

  it('accepts a limit of zero', () => {
    expect(cap({ limit: 0 }).limitMicros).toBe(0);
  });

  it('puts the match’s label names in ascending order', () => {
    expect(Object.keys(cap({ match: { user: '*', team: 'ml' } }).match)).toEqual(['team', 'user']);
  });

  it('keeps the time zone as spelled', () => {
    expect(cap({ timezone: 'europe/berlin' }).timezone).toBe('europe/berlin');
  });

  it('is frozen, its match and alerts too', () => {
    const c = cap();
    expect([Object.isFrozen(c), Object.isFrozen(c.match), Object.isFrozen(c.alertAt)]).toEqual([
      true,
      true,
      true,
    ]);
  });

  it('shares nothing with its init', () => {
    const init = { ...TEAM_MONTHLY, match: { team: 'ml' }, alertAt: [0.5] };
    const c = spendCap(init);
    init.match.team = 'ops';
    init.alertAt.push(0.9);
    expect([c.match, c.alertAt]).toEqual([{ team: 'ml' }, [0.5]]);
  });

  it('takes a cap it built back as it is', () => {
    const c = cap();
    expect(spendCap(c)).toBe(c);
  });

  it('recognises the caps it built, and not a copy', () => {
    expect([isSpendCap(cap()), isSpendCap({ ...cap() })]).toEqual([true, false]);
  });
});

describe('spendCap refusals', () => {
  it('refuses an id that is not lowercase letters, digits, _ . or -', () => {
    expect(refusal(() => cap({ id: 'Team Monthly' }))).toEqual([
      'cap.id',
      'cap.id must be a cap id: a lowercase letter or digit, then up to 63 lowercase letters, digits, _ . or -, got "Team Monthly"',
    ]);
  });

  it('refuses an id longer than 64 characters', () => {
    expect(thrown(() => cap({ id: 'a'.repeat(65) })).field).toBe('cap.id');
  });

  it('refuses a label name that is not lowercase', () => {
    expect(refusal(() => cap({ match: { Team: 'ml' } }))).toEqual([
      'cap.match',
      'cap.match key must be a label name: a lowercase letter, then up to 62 lowercase letters, digits or underscores, got "Team"',
    ]);
  });

  it('refuses an empty label value', () => {
    expect(thrown(() => cap({ match: { team: '' } })).field).toBe('cap.match.team');
  });

  it('refuses a label value longer than 200 characters', () => {
    expect(thrown(() => cap({ match: { team: 'x'.repeat(201) } })).field).toBe('cap.match.team');
  });

  it('refuses a label value holding a control character', () => {
    expect(thrown(() => cap({ match: { team: 'ml\n' } })).field).toBe('cap.match.team');
  });

  it('refuses a match on more than 16 labels', () => {
    const match = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`l${i}`, 'x']));
    expect(refusal(() => cap({ match }))).toEqual([
      'cap.match',
      'cap.match must be an object of at most 16 labels, got an object',
    ]);
  });

  it('refuses a negative limit', () => {
    expect(refusal(() => cap({ limit: -1 }))).toEqual([
      'cap.limit',
      'cap.limit must be a finite number >= 0, got -1',
    ]);
  });

  it('refuses a limit that is not finite', () => {
    expect(thrown(() => cap({ limit: Number.POSITIVE_INFINITY })).field).toBe('cap.limit');
  });

  it('refuses an unknown window', () => {
    expect(refusal(() => cap({ window: 'year' }))).toEqual([
      'cap.window',
      'cap.window must be day, week, month or lifetime, got "year"',
    ]);
  });

  it('refuses a time zone that is not an IANA zone', () => {
    expect(refusal(() => cap({ timezone: 'Mars/Base' }))).toEqual([
      'cap.timezone',
      'cap.timezone must be an IANA time zone, got "Mars/Base"',
    ]);
  });

  it('refuses an alert at zero', () => {
    expect(refusal(() => cap({ alertAt: [0] }))).toEqual([
      'cap.alertAt[0]',
      'cap.alertAt[0] must be a fraction of the limit, > 0 and <= 1, got 0',
    ]);
  });

  it('refuses an alert beyond the limit', () => {
    expect(thrown(() => cap({ alertAt: [1.5] })).field).toBe('cap.alertAt[0]');
  });

  it('refuses alerts out of order', () => {
    expect(refusal(() => cap({ alertAt: [0.9, 0.5] }))).toEqual([
      'cap.alertAt[1]',
      'cap.alertAt[1] must be greater than the fraction before it (ascending, without repeats), got 0.5',
    ]);
  });

  it('refuses an alert given twice', () => {
    expect(thrown(() => cap({ alertAt: [0.5, 0.5] })).field).toBe('cap.alertAt[1]');
  });

  it('refuses more than 8 alerts', () => {
    const alertAt = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];
    expect(thrown(() => cap({ alertAt })).field).toBe('cap.alertAt');
  });

  it('refuses an unknown key, naming the known ones', () => {
    expect(refusal(() => cap({ alert_at: [0.5] }))).toEqual([
      'cap.alert_at',
      'cap.alert_at is not a known field (known: id, match, limit, window, timezone, alertAt)',
    ]);
  });

  it('refuses a cap without a match', () => {
    expect(refusal(() => spendCap({ id: 'a', limit: 1, window: 'day' }))).toEqual([
      'cap.match',
      'cap.match is missing',
    ]);
  });

  it('refuses a value that is not an object', () => {
    expect(refusal(() => spendCap('team-monthly'))).toEqual([
      'cap',
      'cap must be an object, got "team-monthly"',
    ]);
  });

  it('names fields below the field it is given', () => {
    expect(thrown(() => spendCap({ ...TEAM_MONTHLY, limit: -1 }, 'options.budgets[3]')).field).toBe(
      'options.budgets[3].limit',
    );
  });
});

describe('spendCapFromJson and spendCapToJson', () => {
  it('reads the wire form', () => {
    const c = spendCapFromJson(json({ timezone: 'Asia/Tokyo', alert_at: [0.5, 1] }));
    expect([c.id, c.match, c.limitMicros, c.window, c.timezone, c.alertAt]).toEqual([
      'user-daily',
      { user: '*' },
      5_000_000,
      'day',
      'Asia/Tokyo',
      [0.5, 1],
    ]);
  });

  it('refuses the code form’s camelCase key in the wire form', () => {
    expect(thrown(() => spendCapFromJson(json({ alertAt: [0.5] }))).field).toBe('cap.alertAt');
  });

  it('writes every key of the wire form', () => {
    expect(spendCapToJson(spendCapFromJson(json()))).toEqual({
      id: 'user-daily',
      match: { user: '*' },
      limit: 5,
      window: 'day',
      timezone: 'UTC',
      alert_at: [],
    });
  });

  it('reads back what it writes', () => {
    expect(spendCapFromJson(spendCapToJson(cap()))).toEqual(cap());
  });

  it('writes plain JSON', () => {
    expect(JSON.parse(JSON.stringify(spendCapToJson(cap())))).toEqual(spendCapToJson(cap()));
  });
});

describe('spendCaps and spendCapsFromJson', () => {
  it('builds a list of caps from their code forms', () => {
    expect(spendCaps([TEAM_MONTHLY, { ...TEAM_MONTHLY, id: 'other' }]).map((c) => c.id)).toEqual([
      'team-monthly',
      'other',
    ]);
  });

  it('takes caps it built in the list', () => {
    const c = cap();
    expect(spendCaps([c])[0]).toBe(c);
  });

  it('refuses a repeated id, naming the repeat', () => {
    const list = [TEAM_MONTHLY, { ...TEAM_MONTHLY, id: 'b' }, TEAM_MONTHLY];
    expect(refusal(() => spendCaps(list))).toEqual([
      'budgets[2].id',
      'budgets[2].id must be an id no other cap in the list has, got "team-monthly"',
    ]);
  });

  it('names an entry’s field by its index', () => {
    expect(thrown(() => spendCaps([TEAM_MONTHLY, { ...TEAM_MONTHLY, timezone: 'Mars/Base' }])).field).toBe(
      'budgets[1].timezone',
    );
  });

  it('refuses a list that is not an array', () => {
    expect(refusal(() => spendCaps({}))).toEqual([
      'budgets',
      'budgets must be an array of spend caps, got an object',
    ]);
  });

  it(`refuses more than ${MAX_SPEND_CAPS} caps`, () => {
    const list = Array.from({ length: MAX_SPEND_CAPS + 1 }, (_, i) => ({ ...TEAM_MONTHLY, id: `c${i}` }));
    expect(thrown(() => spendCaps(list)).field).toBe('budgets');
  });

  it('reads a list in wire form', () => {
    expect(spendCapsFromJson([json(), json({ id: 'b' })]).map((c) => c.id)).toEqual(['user-daily', 'b']);
  });

  it('refuses a repeated id in wire form, naming the repeat', () => {
    const list = [json(), json({ id: 'b' }), json()];
    expect(refusal(() => spendCapsFromJson(list))).toEqual([
      'budgets[2].id',
      'budgets[2].id must be an id no other cap in the list has, got "user-daily"',
    ]);
  });

  it('names a wire entry’s field by its index', () => {
    expect(refusal(() => spendCapsFromJson([json(), json({ id: 'b', timezone: 'Mars/Base' })]))).toEqual([
      'budgets[1].timezone',
      'budgets[1].timezone must be an IANA time zone, got "Mars/Base"',
    ]);
  });

  it('returns a frozen list', () => {
    expect(Object.isFrozen(spendCapsFromJson([json()]))).toBe(true);
  });
});

describe('capScope', () => {
  const teamUser = spendCap({ id: 'tu', match: { user: '*', team: 'ml' }, limit: 1, window: 'day' });

  it('scopes a plan by the labels the cap matches, keys sorted', () => {
    expect(capScope(teamUser, { user: 'ann', team: 'ml' })).toBe('{"team":"ml","user":"ann"}');
  });

  it('leaves out labels the cap does not match on', () => {
    expect(capScope(cap(), { team: 'ml', user: 'ann' })).toBe('{"team":"ml"}');
  });

  it('does not apply to a plan whose label has another value', () => {
    expect(capScope(cap(), { team: 'ops' })).toBeNull();
  });

  it('does not apply to a plan without the label', () => {
    expect(capScope(cap(), { user: 'ann' })).toBeNull();
  });

  it('needs a label matched by "*" to be there', () => {
    expect(capScope(teamUser, { team: 'ml' })).toBeNull();
  });

  it('gives each value of a label matched by "*" a scope of its own', () => {
    const scopes = ['ann', 'bob'].map((user) => capScope(teamUser, { team: 'ml', user }));
    expect(scopes).toEqual(['{"team":"ml","user":"ann"}', '{"team":"ml","user":"bob"}']);
  });

  it('scopes every plan under {} when the match is empty', () => {
    const all = spendCap({ id: 'all', match: {}, limit: 1, window: 'day' });
    expect([capScope(all, {}), capScope(all, { team: 'ml' })]).toEqual(['{}', '{}']);
  });

  it('ignores inherited labels', () => {
    expect(capScope(cap(), Object.create({ team: 'ml' }) as Record<string, string>)).toBeNull();
  });

  it('escapes a value as JSON does', () => {
    expect(capScope(teamUser, { team: 'ml', user: 'a"b' })).toBe('{"team":"ml","user":"a\\"b"}');
  });
});

describe('scopeText', () => {
  it('shows a scope as name=value pairs', () => {
    expect(scopeText('{"team":"ml","user":"ann"}')).toBe('team=ml, user=ann');
  });

  it('shows the empty scope as all plans', () => {
    expect(scopeText('{}')).toBe('(all plans)');
  });

  it('quotes a value holding a comma or space', () => {
    expect(scopeText('{"team":"a, b"}')).toBe('team="a, b"');
  });

  it('refuses text that is not a scope', () => {
    expect(refusal(() => scopeText('[1]'))).toEqual([
      'scope',
      'scope must be a cap scope (a JSON object of labels), got "[1]"',
    ]);
  });

  it('refuses a scope whose value is not a string', () => {
    expect(thrown(() => scopeText('{"team":1}')).field).toBe('scope');
  });
});
