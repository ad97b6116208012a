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
