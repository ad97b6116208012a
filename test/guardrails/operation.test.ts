import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GuardrailValidationError } from '../../src/errors.js';
import { confirmationReason, normalizeOperation } from '../../src/guardrails/operation.js';
import { thrown } from '../support/thrown.js';

describe('normalizeOperation', () => {
  it('keeps a plain lower-case name', () => {
    expect(normalizeOperation('deploy')).toBe('deploy');
  });

  it('lower-cases', () => {
    expect(normalizeOperation('DePloY')).toBe('deploy');
  });

  it('trims spaces at both ends', () => {
    expect(normalizeOperation('  deploy  ')).toBe('deploy');
  });

  it('keeps spaces inside the name', () => {
    expect(normalizeOperation('drop table')).toBe('drop table');
  });

  it('folds fullwidth letters so ＤＥＰＬＯＹ matches deploy', () => {
    expect(normalizeOperation('ＤＥＰＬＯＹ')).toBe('deploy');
  });

  it('trims an ideographic space after folding it', () => {
    expect(normalizeOperation('\u3000deploy\u3000')).toBe('deploy');
  });

  it('folds a ligature', () => {
    expect(normalizeOperation('\ufb01le_delete')).toBe('file_delete');
  });

  it('composes a decomposed accent so both spellings match', () => {
    expect(normalizeOperation('re\u0301sume\u0301')).toBe(normalizeOperation('r\u00e9sum\u00e9'));
  });

  it('lower-cases non-Latin letters', () => {
    expect(normalizeOperation('ΔΙΑΓΡΑΦΗ')).toBe('διαγραφη');
  });

  it('is idempotent', () => {
    const once = normalizeOperation(' ＤＥＰＬＯＹ ');
    expect(normalizeOperation(once)).toBe(once);
  });

  it('refuses the empty string', () => {
    const e = thrown(() => normalizeOperation(''));
    expect(e.field).toBe('operation');
    expect(e.message).toBe('operation must not be empty, got ""');
  });

  it('refuses a name of only spaces', () => {
    expect(() => normalizeOperation('   ')).toThrow('operation must not be empty, got "   "');
  });

  it('refuses a name of only ideographic spaces', () => {
    expect(() => normalizeOperation('\u3000')).toThrow(GuardrailValidationError);
  });

  it('refuses a NUL character', () => {
    const e = thrown(() => normalizeOperation('deploy\u0000'));
    expect(e.field).toBe('operation');
    expect(e.message).toBe(
      'operation must not contain control or invisible format characters, got "deploy\\u0000"',
    );
  });

  it('refuses a zero-width space (U+200B)', () => {
    expect(() => normalizeOperation('de\u200bploy')).toThrow(GuardrailValidationError);
  });

  it('refuses a right-to-left override (U+202E)', () => {
    expect(() => normalizeOperation('\u202eyolped')).toThrow(GuardrailValidationError);
  });

  it('refuses a zero-width joiner (U+200D)', () => {
    expect(() => normalizeOperation('de\u200dploy')).toThrow(GuardrailValidationError);
  });

  it('refuses a byte-order mark (U+FEFF)', () => {
    expect(() => normalizeOperation('\ufeffdeploy')).toThrow(GuardrailValidationError);
  });

  it('refuses a soft hyphen (U+00AD)', () => {
    expect(() => normalizeOperation('de\u00adploy')).toThrow(GuardrailValidationError);
  });

  it('refuses a word joiner (U+2060)', () => {
    expect(() => normalizeOperation('deploy\u2060')).toThrow(GuardrailValidationError);
  });

  it('refuses a variation selector (U+FE0F)', () => {
    expect(() => normalizeOperation('deploy\ufe0f')).toThrow(GuardrailValidationError);
  });

  it('refuses a combining grapheme joiner (U+034F)', () => {
    expect(() => normalizeOperation('de\u034fploy')).toThrow(GuardrailValidationError);
  });

  it('refuses a Hangul filler (U+3164)', () => {
    expect(() => normalizeOperation('deploy\u3164')).toThrow(GuardrailValidationError);
  });

  it('refuses a tag character (U+E0041)', () => {
    expect(() => normalizeOperation('deploy\u{e0041}')).toThrow(GuardrailValidationError);
  });

  it('refuses a tab, even at an end where trimming would remove it', () => {
    expect(() => normalizeOperation('deploy\t')).toThrow(GuardrailValidationError);
  });

  it('refuses a newline', () => {
    expect(() => normalizeOperation('deploy\n')).toThrow(GuardrailValidationError);
  });

  it('refuses DEL (U+007F)', () => {
    expect(() => normalizeOperation('deploy\u007f')).toThrow(GuardrailValidationError);
  });

  it('refuses a C1 control character (U+0085)', () => {
    expect(() => normalizeOperation('deploy\u0085')).toThrow(GuardrailValidationError);
  });

  it('refuses a lone low surrogate, naming the field and showing it escaped', () => {
    const e = thrown(() => normalizeOperation('dep\udc00loy', 'required_confirmations[0]'));
    expect(e.field).toBe('required_confirmations[0]');
    expect(e.message).toBe(
      'required_confirmations[0] must be well-formed Unicode, but holds a lone surrogate (\\udc00 at index 3), got "dep\\udc00loy"',
    );
  });

  it('refuses a lone high surrogate at the end of a name', () => {
    expect(() => normalizeOperation('deploy\ud83d')).toThrow('lone surrogate (\\ud83d at index 6)');
  });

  it('refuses a lone surrogate in a name NFKC would fold, showing the name as it was given', () => {
    expect(() => normalizeOperation('ＤＥＰ\udc00')).toThrow('got "ＤＥＰ\\udc00"');
  });

  it('accepts a character outside the BMP, written as a surrogate pair', () => {
    expect(normalizeOperation('deploy \ud83d\ude80')).toBe('deploy 🚀');
  });

  it('refuses a non-string, naming the field and the value', () => {
    const e = thrown(() => normalizeOperation(42));
    expect(e.field).toBe('operation');
    expect(e.message).toBe('operation must be a string, got 42');
  });

  it('refuses null', () => {
    expect(() => normalizeOperation(null)).toThrow('operation must be a string, got null');
  });

  it('names the given field in its errors', () => {
    const e = thrown(() => normalizeOperation('', 'required_confirmations[2]'));
    expect(e.field).toBe('required_confirmations[2]');
    expect(e.message).toBe('required_confirmations[2] must not be empty, got ""');
  });

  it('accepts a name exactly at the maximum length', () => {
    expect(normalizeOperation('a'.repeat(8), 'operation', 8)).toBe('aaaaaaaa');
  });

  it('refuses a name over the maximum length', () => {
    const e = thrown(() => normalizeOperation('a'.repeat(9), 'operation', 8));
    expect(e.message).toBe('operation must be at most 8 characters, got "aaaaaaaaa"');
  });

  it('measures the maximum length after trimming', () => {
    expect(normalizeOperation('  abcd  ', 'operation', 4)).toBe('abcd');
  });

  it('measures the maximum length after NFKC folding', () => {
    expect(() => normalizeOperation('\u33af', 'operation', 3)).toThrow(GuardrailValidationError);
  });
});

describe('normalizeOperation is stable', () => {
  it('gives the same name when applied to its own output', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 12 }), (raw) => {
        let once: string;
        try {
          once = normalizeOperation(raw);
        } catch {
          return; // refused names are covered elsewhere
        }
        expect(normalizeOperation(once)).toBe(once);
      }),
      { numRuns: 3000 },
    );
  });

  it('folds a capital with a combining mark the same way however often it is applied', () => {
    const once = normalizeOperation('PUSH\u0331');
    expect(once).toBe('pusẖ');
    expect(normalizeOperation(once)).toBe(once);
    expect(normalizeOperation('pusẖ')).toBe(once);
  });
});

describe('confirmationReason', () => {
  it('says one operation requires confirmation', () => {
    expect(confirmationReason(['deploy'], true)).toBe('operation "deploy" requires confirmation');
  });

  it('says one operation does not require confirmation', () => {
    expect(confirmationReason(['read'], false)).toBe('operation "read" does not require confirmation');
  });

  it('lists several operations that require confirmation, the last after "and"', () => {
    expect(confirmationReason(['a', 'b', 'c'], true)).toBe(
      'operations "a", "b" and "c" require confirmation',
    );
  });

  it('lists several operations that do not require confirmation', () => {
    expect(confirmationReason(['a', 'b'], false)).toBe('operations "a" and "b" do not require confirmation');
  });
});
