// What a principal may be: each field checked, a refusal naming the field and the value.
import { describe, expect, it } from 'vitest';
import { describeValue } from '../../src/errors.js';
import {
  validEmail,
  validPrincipalId,
  validPrincipalInit,
  validPrincipalName,
  validRoles,
} from '../../src/identity/principals.js';
import { thrown } from '../support/thrown.js';

describe('a principal id', () => {
  it.each(['ann', 'ann@example.com', 'a.b_c-d', '7', 'x'.repeat(128)])('accepts %s', (id) => {
    expect(validPrincipalId(id)).toBe(id);
  });

  it.each(['', 'Ann', 'ann lee', 'ann/lee', 'änn', 'x'.repeat(129)])('refuses %j, naming id', (id) => {
    const e = thrown(() => validPrincipalId(id));
    expect([e.field, e.message]).toEqual(['id', expect.stringContaining(describeValue(id))]);
  });

  it('refuses a value that is not a string', () => {
    expect(thrown(() => validPrincipalId(42)).message).toMatch(/^id must be .*, got 42$/);
  });
});

describe('a principal name', () => {
  it('keeps it trimmed', () => {
    expect(validPrincipalName('  Ann Lee ')).toBe('Ann Lee');
  });

  it('accepts letters of any script', () => {
    expect(validPrincipalName('Zoë Åström 李')).toBe('Zoë Åström 李');
  });

  it.each([
    ['empty', ''],
    ['blank', '   '],
    ['too long', 'a'.repeat(257)],
    ['with a control character', 'Ann\u001b[2J'],
    ['with an invisible character', 'Ann\u200bLee'],
  ])('refuses one %s, naming name', (_what, name) => {
    expect(thrown(() => validPrincipalName(name)).field).toBe('name');
  });

  it('refuses a lone surrogate', () => {
    expect(thrown(() => validPrincipalName('Ann\ud800')).field).toBe('name');
  });
});

describe('roles', () => {
  it('are sorted, without repeats', () => {
    expect(validRoles(['release', 'finance', 'release'])).toEqual(['finance', 'release']);
  });

  it('are none when not given', () => {
    expect(validRoles(undefined)).toEqual([]);
  });

  it.each(['Release', '1st', '', 'a'.repeat(65), 'on call', 'ops.team'])(
    'refuses the role %j, naming its place',
    (role) => {
      const e = thrown(() => validRoles(['ops', role]));
      expect([e.field, e.message]).toEqual(['roles[1]', expect.stringContaining(describeValue(role))]);
    },
  );

  it('refuses more than 32', () => {
    const roles = Array.from({ length: 33 }, (_, i) => `r${i}`);
    expect(thrown(() => validRoles(roles)).field).toBe('roles');
  });

  it('accepts 32, counted without repeats', () => {
    const roles = Array.from({ length: 32 }, (_, i) => `r${i}`);
    expect(validRoles([...roles, 'r0'])).toHaveLength(32);
  });

  it('refuses a value that is not an array', () => {
    expect(thrown(() => validRoles('release')).field).toBe('roles');
  });
});

describe('an e-mail address', () => {
  it('accepts one', () => {
    expect(validEmail('ann@example.com')).toBe('ann@example.com');
  });

  it.each(['ann', 'ann@example', 'ann lee@example.com', '@example.com', 'ann@@example.com'])(
    'refuses %j, naming email',
    (email) => {
      expect(thrown(() => validEmail(email)).field).toBe('email');
    },
  );

  it('refuses one with an invisible character', () => {
    expect(thrown(() => validEmail('ann\u200b@example.com')).field).toBe('email');
  });
});

describe('a principal as described', () => {
  it('comes back checked, its roles sorted', () => {
    expect(validPrincipalInit({ id: 'ann', name: ' Ann ', roles: ['ops', 'dev'], email: 'a@b.io' })).toEqual({
      id: 'ann',
      name: 'Ann',
      roles: ['dev', 'ops'],
      email: 'a@b.io',
    });
  });

  it('has no e-mail address when none is given', () => {
    expect(validPrincipalInit({ id: 'ann', name: 'Ann' })).toEqual({ id: 'ann', name: 'Ann', roles: [] });
  });

  it('refuses a value that is not an object, naming principal', () => {
    expect(thrown(() => validPrincipalInit('ann')).field).toBe('principal');
  });
});
