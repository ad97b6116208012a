import { describe, expect, it } from 'vitest';
import {
  EMPTY_LABELS,
  labelsText,
  MAX_LABELS,
  MAX_LABEL_VALUE_LENGTH,
  parseLabelArgument,
  validateLabels,
} from '../../src/guardrails/labels.js';
import { thrown } from '../support/thrown.js';

/** The field and message of the error `fn` throws. */
function refusal(fn: () => unknown): { field: string | undefined; message: string } {
  const e = thrown(fn);
  return { field: e.field, message: e.message };
}

/** `count` labels l0, l1, … all valued `x`. */
function manyLabels(count: number): Record<string, string> {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [`l${i}`, 'x']));
}

describe('validateLabels', () => {
  it('returns the labels with their names sorted', () => {
    expect(Object.keys(validateLabels({ user: 'ann', team: 'ml' }))).toEqual(['team', 'user']);
  });

  it('returns a frozen copy that later changes to the input do not reach', () => {
    const given = { team: 'ml' };
    const labels = validateLabels(given);
    given.team = 'ops';
    expect(Object.isFrozen(labels)).toBe(true);
    expect(labels).toEqual({ team: 'ml' });
  });

  it('reads undefined as no labels', () => {
    expect(validateLabels(undefined)).toBe(EMPTY_LABELS);
  });

  it('reads an empty object as no labels', () => {
    expect(validateLabels({})).toBe(EMPTY_LABELS);
  });

  it('keeps EMPTY_LABELS frozen and empty', () => {
    expect(Object.isFrozen(EMPTY_LABELS)).toBe(true);
    expect(Object.keys(EMPTY_LABELS)).toEqual([]);
  });

  it('accepts names of a letter then letters, digits and underscores up to 63 characters', () => {
    const name = `a${'b_9'.repeat(20)}z1`;
    expect(name.length).toBe(63);
    expect(validateLabels({ [name]: 'x' })[name]).toBe('x');
  });

  it('refuses a name of 64 characters', () => {
    const name = 'a'.repeat(64);
    expect(refusal(() => validateLabels({ [name]: 'x' })).field).toBe(`labels.${name}`);
  });

  it('refuses an upper-case name, naming the label and the name', () => {
    expect(refusal(() => validateLabels({ Team: 'ml' }))).toEqual({
      field: 'labels.Team',
      message:
        'labels.Team: a label name must be a lower-case identifier (a letter, then letters, digits or _, at most 63 characters), got "Team"',
    });
  });

  it('refuses a name starting with a digit or an underscore', () => {
    expect(refusal(() => validateLabels({ '1team': 'ml' })).field).toBe('labels.1team');
    expect(refusal(() => validateLabels({ _team: 'ml' })).field).toBe('labels._team');
  });

  it('refuses a __proto__ key as a name rather than setting a prototype', () => {
    const given = JSON.parse('{"__proto__": "x"}') as unknown;
    expect(refusal(() => validateLabels(given)).field).toBe('labels.__proto__');
  });

  it('accepts a value of 200 characters', () => {
    const value = 'v'.repeat(MAX_LABEL_VALUE_LENGTH);
    expect(validateLabels({ team: value }).team).toBe(value);
  });

  it('refuses a value of 201 characters, naming the label', () => {
    expect(refusal(() => validateLabels({ team: 'v'.repeat(201) })).field).toBe('labels.team');
  });

  it('refuses an empty value, naming the label and the value', () => {
    expect(refusal(() => validateLabels({ team: '' }))).toEqual({
      field: 'labels.team',
      message:
        'labels.team must be a non-empty string of at most 200 characters without control characters or lone surrogates, got ""',
    });
  });

  it('refuses a value that is not a string', () => {
    expect(refusal(() => validateLabels({ team: 7 })).message).toMatch(/^labels\.team must be .*, got 7$/);
  });

  it('refuses a value holding a control character', () => {
    expect(refusal(() => validateLabels({ team: 'ml\nops' })).field).toBe('labels.team');
  });

  it('refuses a value holding a lone surrogate', () => {
    expect(refusal(() => validateLabels({ team: 'ml\ud800' })).field).toBe('labels.team');
  });

  it('accepts a value of any script and emoji', () => {
    expect(validateLabels({ user: 'Zoë 🚀 名前' }).user).toBe('Zoë 🚀 名前');
  });

  it('accepts 16 labels', () => {
    expect(Object.keys(validateLabels(manyLabels(MAX_LABELS)))).toHaveLength(16);
  });

  it('refuses 17 labels', () => {
    expect(refusal(() => validateLabels(manyLabels(MAX_LABELS + 1)))).toEqual({
      field: 'labels',
      message: 'labels must hold at most 16 labels, got 17',
    });
  });

  it('refuses what is not a plain object', () => {
    for (const bad of [null, 'team=ml', ['ml'], new Map([['team', 'ml']])]) {
      expect(refusal(() => validateLabels(bad)).field).toBe('labels');
    }
  });

  it('names the field it is given', () => {
    expect(refusal(() => validateLabels({ team: '' }, 'x.labels')).field).toBe('x.labels.team');
  });
});

describe('parseLabelArgument', () => {
  it('splits name=value', () => {
    expect(parseLabelArgument('team=ml', '--label')).toEqual(['team', 'ml']);
  });

  it('splits at the first = so a value may hold =', () => {
    expect(parseLabelArgument('key=a=b', '--label')).toEqual(['key', 'a=b']);
  });

  it('refuses text without =, naming the flag and the text', () => {
    expect(refusal(() => parseLabelArgument('team', '--label'))).toEqual({
      field: '--label',
      message: '--label must be name=value (team=ml), got "team"',
    });
  });

  it('refuses an empty value', () => {
    expect(refusal(() => parseLabelArgument('team=', '--label')).message).toMatch(
      /^--label must be name=value, the value a non-empty string .*, got "team="$/,
    );
  });

  it('refuses a name that is not a lower-case identifier', () => {
    expect(refusal(() => parseLabelArgument('Team=ml', '--label')).message).toMatch(
      /^--label must be name=value, the name a lower-case identifier .*, got "Team=ml"$/,
    );
  });

  it('refuses an empty name', () => {
    expect(refusal(() => parseLabelArgument('=ml', '--label')).field).toBe('--label');
  });
});

describe('labelsText', () => {
  it('writes name=value pairs in name order', () => {
    expect(labelsText(validateLabels({ user: 'ann', team: 'ml' }))).toBe('team=ml user=ann');
  });

  it('quotes a value holding a space', () => {
    expect(labelsText(validateLabels({ team: 'ml ops' }))).toBe('team="ml ops"');
  });

  it('writes nothing for no labels', () => {
    expect(labelsText(EMPTY_LABELS)).toBe('');
  });
});
