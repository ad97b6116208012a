// String.prototype.isWellFormed and toWellFormed (Node >= 20) are native; TypeScript's ES2022 library
// does not declare them. They live here, importing nothing, so that errors.ts and json.ts can both use
// them without importing each other.
type MaybeWellFormed = string & { isWellFormed(): boolean; toWellFormed(): string };

/**
 * True when `text` holds no lone surrogate: every UTF-16 code unit in D800-DFFF is half of a pair. A lone
 * one has no UTF-8 form, RFC 8785 makes it an error, and a database stores it as U+FFFD.
 */
export function isWellFormed(text: string): boolean {
  return (text as MaybeWellFormed).isWellFormed();
}

/**
 * `text` with each lone surrogate replaced by U+FFFD, for text shown to people that may have been cut in
 * the middle of a pair (`text.slice(0, 500)`): stored or hashed, a lone surrogate is refused.
 */
export function toWellFormed(text: string): string {
  return (text as MaybeWellFormed).toWellFormed();
}

/**
 * True when `text` holds no control character (Unicode category Cc) and no lone surrogate. Ids and names
 * end up in database columns, which store a lone surrogate as U+FFFD, so two different ids would meet in
 * one row. A loop, not a regex: every check validates its plan id, and this is several times cheaper.
 */
export function isPlainText(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return false;
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = text.charCodeAt(i + 1);
      if (c > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) return false;
      i++; // a whole pair
    }
  }
  return true;
}

// Control (Cc), format (Cf) and other default-ignorable characters (variation selectors, Hangul fillers)
// are invisible, so they let two names that look the same compare different.
const HIDDEN = /[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]/u;

/** True when `text` holds a control or invisible character: a name shown to people must not. */
export function hasHiddenCharacters(text: string): boolean {
  return HIDDEN.test(text);
}
