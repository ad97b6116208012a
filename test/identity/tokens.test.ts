// Personal tokens as made: their form, their record, their hash and their expiry.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  hashToken,
  isTokenShaped,
  MAX_TOKEN_LIFETIME_SECONDS,
  newToken,
  validTokenId,
  validTokenOptions,
} from '../../src/identity/tokens.js';
import { T0, T0_ISO } from '../support/service.js';
import { thrown } from '../support/thrown.js';

describe('a new token', () => {
  it('is leash_pat_ and 32 bytes in base64url', () => {
    const { token } = newToken('ann', {}, T0);
    expect([token.startsWith('leash_pat_'), Buffer.from(token.slice(10), 'base64url').length]).toEqual([
      true,
      32,
    ]);
  });

  it('has the form authenticate accepts', () => {
    expect(isTokenShaped(newToken('ann', {}, T0).token)).toBe(true);
  });

  it('differs from the one made before', () => {
    expect(newToken('ann', {}, T0).token).not.toBe(newToken('ann', {}, T0).token);
  });

  it('has a record with an id of tok_ and 12 hexadecimal digits', () => {
    expect(newToken('ann', {}, T0).record.id).toMatch(/^tok_[0-9a-f]{12}$/);
  });

  it("keeps in its record the token's SHA-256 in hex, and never the token", () => {
    const { token, record } = newToken('ann', { label: 'laptop' }, T0);
    const sha256 = createHash('sha256').update(token).digest('hex');
    expect([record.hash, JSON.stringify(record).includes(token.slice(10))]).toEqual([sha256, false]);
  });

  it('is recorded for its principal, at the time given, with its label', () => {
    const { record } = newToken('ann', { label: ' laptop ' }, T0);
    expect([record.principalId, record.createdAt, record.label]).toEqual(['ann', T0_ISO, 'laptop']);
  });

  it('expires the number of seconds asked after it was made', () => {
    const { record } = newToken('ann', { expiresInSeconds: 3600 }, T0);
    expect(record.expiresAt).toBe('2026-11-30T11:00:00.000Z');
  });

  it('never expires when no lifetime is asked', () => {
    expect(newToken('ann', {}, T0).record).not.toHaveProperty('expiresAt');
  });
});

describe('a token hash', () => {
  it('is the SHA-256 of the whole token in lower-case hex', () => {
    expect(hashToken('leash_pat_x')).toBe(createHash('sha256').update('leash_pat_x').digest('hex'));
  });
});

describe('the form of a token', () => {
  it.each([
    ['without the prefix', 'A'.repeat(53)],
    ['too short', `leash_pat_${'A'.repeat(42)}`],
    ['too long', `leash_pat_${'A'.repeat(44)}`],
    ['with a character outside base64url', `leash_pat_${'A'.repeat(42)}+`],
    ['not a string', 42],
  ])('is refused %s', (_what, token) => {
    expect(isTokenShaped(token)).toBe(false);
  });
});

describe('token options', () => {
  it.each([0, -1, 1.5, MAX_TOKEN_LIFETIME_SECONDS + 1, '3600'])(
    'refuse a lifetime of %j, naming expiresInSeconds',
    (seconds) => {
      expect(thrown(() => validTokenOptions({ expiresInSeconds: seconds })).field).toBe('expiresInSeconds');
    },
  );

  it('accept a lifetime of ten years', () => {
    expect(validTokenOptions({ expiresInSeconds: MAX_TOKEN_LIFETIME_SECONDS })).toEqual({
      expiresInSeconds: MAX_TOKEN_LIFETIME_SECONDS,
    });
  });

  it.each(['', ' ', 'x'.repeat(129), 'ci\u0007'])('refuse the label %j, naming label', (label) => {
    expect(thrown(() => validTokenOptions({ label })).field).toBe('label');
  });

  it('refuse a value that is not an object, naming options', () => {
    expect(thrown(() => validTokenOptions('laptop')).field).toBe('options');
  });
});

describe('a token id', () => {
  it('is accepted as tok_ and 12 hexadecimal digits', () => {
    expect(validTokenId('tok_0123456789ab')).toBe('tok_0123456789ab');
  });

  it.each(['tok_0123456789AB', 'tok_0123', '0123456789ab', 'leash_pat_x'])('is refused as %j', (id) => {
    const e = thrown(() => validTokenId(id));
    expect([e.field, e.message]).toEqual(['token_id', expect.stringContaining(JSON.stringify(id))]);
  });
});
