import { describe, expect, it } from 'vitest';
import { isWellFormed } from '../../src/json.js';
import { inputPreview, MAX_PREVIEW_LENGTH } from '../../src/service/preview.js';
import { fieldOf } from '../support/thrown.js';

/** `text` as a JSON string literal with each of its UTF-16 code units escaped as \uXXXX. */
function allEscaped(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) out += `\\u${text.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return `"${out}"`;
}

describe('inputPreview', () => {
  it('previews a value as canonical JSON: keys sorted, no white space', () => {
    expect(inputPreview({ b: 1, a: [true, null, 'x'] })).toBe('{"a":[true,null,"x"],"b":1}');
  });

  it('previews undefined as null', () => {
    expect(inputPreview(undefined)).toBe('null');
  });

  it('escapes DEL and the C1 control characters, which JSON leaves as they are', () => {
    expect(inputPreview('a\x7fb\x9bc')).toBe('"a\\u007fb\\u009bc"');
  });

  it('keeps the C0 control characters as the escapes JSON gives them', () => {
    expect(inputPreview('a\x1b[2J\nb')).toBe('"a\\u001b[2J\\nb"');
  });

  it('escapes the bidi embeddings, overrides and isolates', () => {
    const bidi = '\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069';
    expect(inputPreview(bidi)).toBe(allEscaped(bidi));
  });

  it('escapes zero-width characters, the byte order mark and the Hangul filler', () => {
    const hidden = '\u200b\u200c\u200d\u2060\ufeff\u3164';
    expect(inputPreview(hidden)).toBe(allEscaped(hidden));
  });

  it('escapes line and paragraph separators, keeping the preview on one line', () => {
    expect(inputPreview('a\u2028b\u2029c')).toBe('"a\\u2028b\\u2029c"');
  });

  it('escapes a private-use character beyond the BMP as its two code units', () => {
    expect(inputPreview('\u{f0000}')).toBe('"\\udb80\\udc00"');
  });

  it('escapes the characters of an object key as well', () => {
    expect(inputPreview({ 'a\u202eb': 1 })).toBe('{"a\\u202eb":1}');
  });

  it('keeps printable text in any script, and emoji, as it is', () => {
    expect(inputPreview('café 日本語 😀')).toBe('"café 日本語 😀"');
  });

  it('keeps a preview of exactly the longest length whole', () => {
    const text = 'x'.repeat(MAX_PREVIEW_LENGTH - 2);
    expect(inputPreview(text)).toBe(`"${text}"`);
  });

  it('cuts a longer preview to the longest length, ending in …', () => {
    const preview = inputPreview('x'.repeat(MAX_PREVIEW_LENGTH));
    expect([preview.length, preview.endsWith('x…')]).toEqual([MAX_PREVIEW_LENGTH, true]);
  });

  it('cuts before a surrogate pair rather than through it', () => {
    const preview = inputPreview(`${'x'.repeat(MAX_PREVIEW_LENGTH - 3)}😀😀`);
    expect([preview, isWellFormed(preview)]).toEqual([`"${'x'.repeat(MAX_PREVIEW_LENGTH - 3)}…`, true]);
  });

  it('cuts before an escape rather than through it', () => {
    const preview = inputPreview(`${'x'.repeat(MAX_PREVIEW_LENGTH - 4)}\u202e`);
    expect(preview).toBe(`"${'x'.repeat(MAX_PREVIEW_LENGTH - 4)}…`);
  });

  it('refuses a value that is not JSON, naming the field it came in', () => {
    expect(fieldOf(() => inputPreview({ at: new Date(0) }, 'preview'))).toBe('preview.at');
  });
});
