import { canonicalJson } from '../json.js';

/** Longest preview of an input an approval keeps, the trailing `…` of a cut one included. */
export const MAX_PREVIEW_LENGTH = 200;

// Characters that do not show as themselves, or change how the text around them shows: control (C0, DEL,
// C1), format (bidi overrides and isolates, zero-width), line and paragraph separators, private-use,
// unassigned and other default-ignorable ones (Hangul fillers). Escaped, a preview cannot rewrite a
// terminal, break its line, or read differently from what it holds.
const NOT_SHOWN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Default_Ignorable_Code_Point}]/u;

/** A character as `\uXXXX` escapes, one per UTF-16 code unit. */
function escaped(ch: string): string {
  let out = '';
  for (let i = 0; i < ch.length; i++) out += `\\u${ch.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}

/**
 * A one-line preview of a JSON value for the person asked to approve it: its canonical JSON (keys sorted,
 * no white space), every character that would not show as itself escaped as `\uXXXX`, cut to at most
 * {@link MAX_PREVIEW_LENGTH} characters with a trailing `…`. A cut falls between whole characters and
 * whole escapes, never inside a surrogate pair. `undefined` is previewed as `null`.
 * @throws GuardrailValidationError naming `field` for a value that is not JSON (see `canonicalJson`)
 */
export function inputPreview(value: unknown, field = 'preview'): string {
  const json = canonicalJson(value === undefined ? null : value, field);
  let out = '';
  let room = 0; // how much of `out` stays when it must be cut: it leaves space for the `…`
  for (const ch of json) {
    out += NOT_SHOWN.test(ch) ? escaped(ch) : ch;
    if (out.length > MAX_PREVIEW_LENGTH) return `${out.slice(0, room)}…`;
    if (out.length < MAX_PREVIEW_LENGTH) room = out.length;
  }
  return out;
}
