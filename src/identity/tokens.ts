// Personal tokens: made of 32 random bytes, shown to their owner once, kept by the store only as a hash.
import { createHash, randomBytes } from 'node:crypto';
import { invalid } from '../errors.js';
import { formatIso } from '../iso.js';
import { isPlainObject, isWellFormed, notWellFormed } from '../json.js';
import type { PersonalToken } from '../store/people.js';
import { hasHiddenCharacters } from '../unicode.js';

/** How every personal token starts: a secret scanner can tell one from other text. */
export const TOKEN_PREFIX = 'leash_pat_';
/** The longest a token may be asked to last: ten years. */
export const MAX_TOKEN_LIFETIME_SECONDS = 10 * 365 * 24 * 3600;
export const MAX_TOKEN_LABEL_LENGTH = 128;

// 32 bytes in base64url are 43 characters, without padding.
const TOKEN = /^leash_pat_[A-Za-z0-9_-]{43}$/;
const TOKEN_ID = /^tok_[0-9a-f]{12}$/;

/** What `createToken` is given besides whose token it is. */
export interface TokenOptions {
  /** What it is for (`laptop`, `ci`): 1 to 128 characters, none control or invisible. */
  readonly label?: string;
  /** How long it lasts from now; without it, until revoked. */
  readonly expiresInSeconds?: number;
}

/** A new token and the record the store keeps of it: the token itself is nowhere in the record. */
export interface NewToken {
  readonly token: string;
  readonly record: PersonalToken;
}

/** True when `text` has the form of a personal token (whether any store knows it or not). */
export function isTokenShaped(text: unknown): text is string {
  return typeof text === 'string' && TOKEN.test(text);
}

/** SHA-256 (hex) of a token: what the store keeps and looks it up by. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** A token's public id: `tok_` and 12 hexadecimal digits. */
export function validTokenId(value: unknown, field = 'token_id'): string {
  if (typeof value !== 'string' || !TOKEN_ID.test(value)) {
    invalid(field, 'a token id: "tok_" and 12 hexadecimal digits (see the token listing)', value);
  }
  return value;
}

/** Checks a token's label and lifetime. */
export function validTokenOptions(value: unknown): { label?: string; expiresInSeconds?: number } {
  if (value !== undefined && !isPlainObject(value)) invalid('options', 'an object', value);
  const o: Record<string, unknown> = value ?? {};
  const label = o['label'];
  const seconds = o['expiresInSeconds'];
  if (
    label !== undefined &&
    (typeof label !== 'string' ||
      label.trim().length === 0 ||
      label.length > MAX_TOKEN_LABEL_LENGTH ||
      hasHiddenCharacters(label))
  ) {
    invalid('label', `1 to ${MAX_TOKEN_LABEL_LENGTH} characters, none of them control or invisible`, label);
  }
  if (typeof label === 'string' && !isWellFormed(label)) notWellFormed(label, 'label');
  if (
    seconds !== undefined &&
    (!Number.isSafeInteger(seconds) ||
      (seconds as number) < 1 ||
      (seconds as number) > MAX_TOKEN_LIFETIME_SECONDS)
  ) {
    invalid(
      'expiresInSeconds',
      `a whole number of seconds from 1 to ${MAX_TOKEN_LIFETIME_SECONDS} (ten years)`,
      seconds,
    );
  }
  return {
    ...(label === undefined ? {} : { label: (label as string).trim() }),
    ...(seconds === undefined ? {} : { expiresInSeconds: seconds as number }),
  };
}

/**
 * Makes a token for `principalId` at `nowMs`: `leash_pat_` and 32 random bytes in base64url, with its
 * record (id `tok_` and 12 random hexadecimal digits, the token's SHA-256). Options are checked first.
 */
export function newToken(principalId: string, options: TokenOptions, nowMs: number): NewToken {
  const { label, expiresInSeconds } = validTokenOptions(options);
  const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  const record: PersonalToken = {
    id: `tok_${randomBytes(6).toString('hex')}`,
    principalId,
    hash: hashToken(token),
    ...(label === undefined ? {} : { label }),
    createdAt: formatIso(nowMs),
    ...(expiresInSeconds === undefined ? {} : { expiresAt: formatIso(nowMs + expiresInSeconds * 1000) }),
  };
  return { token, record };
}
