// A personal token authenticated into its principal's identity, on an injected clock, in each store; and
// each refusal, which names why and never the token.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { authenticate } from '../../src/identity/authenticate.js';
import * as directory from '../../src/identity/directory.js';
import { hashToken } from '../../src/identity/tokens.js';
import type { GuardrailStore } from '../../src/store/GuardrailStore.js';
import { rejection, storeWithoutPeople } from '../support/people.js';
import { LOCAL_STORES, T0, T0_ISO } from '../support/service.js';

const ANN = { id: 'ann', name: 'Ann Lee', roles: ['release', 'finance'] };
const UNKNOWN = `leash_pat_${'A'.repeat(43)}`;

describe.each(LOCAL_STORES)('authenticate, in a %s', (_name, open) => {
  let store: GuardrailStore;
  let clock: ManualClock;

  beforeEach(async () => {
    store = await open();
    clock = new ManualClock(T0);
    await directory.addPrincipal(store, clock, ANN);
  });

  afterEach(() => store.close());

  /** A token of Ann's, made now. */
  async function annsToken(options: { expiresInSeconds?: number } = {}) {
    return directory.createToken(store, clock, 'ann', options);
  }

  it("gives the identity of the token's principal, with its roles", async () => {
    const { token } = await annsToken();
    expect(await authenticate(store, clock, token)).toEqual({
      kind: 'token',
      subject: 'ann',
      name: 'Ann Lee',
      principal: 'ann',
      roles: ['finance', 'release'],
    });
  });

  it('gives the roles the principal holds now, not those it held when the token was made', async () => {
    const { token } = await annsToken();
    await directory.addPrincipal(store, clock, { ...ANN, roles: ['ops'] });
    expect((await authenticate(store, clock, token)).roles).toEqual(['ops']);
  });

  it('refuses text that is not a token with TOKEN_INVALID, without repeating it', async () => {
    const e = await rejection(authenticate(store, clock, 'hunter2-secret'));
    expect([e.code, e.message.includes('hunter2')]).toEqual(['TOKEN_INVALID', false]);
  });

  it('refuses a token the store does not know with TOKEN_INVALID, without repeating it', async () => {
    const e = await rejection(authenticate(store, clock, UNKNOWN));
    expect([e.code, e.message.includes('AAAA')]).toEqual(['TOKEN_INVALID', false]);
  });

  it('refuses a revoked token with TOKEN_REVOKED, naming its id and not the token', async () => {
    const { token, record } = await annsToken();
    await directory.revokeToken(store, clock, record.id);
    const e = await rejection(authenticate(store, clock, token));
    expect([e.code, e.message.includes(record.id), e.message.includes(token.slice(10))]).toEqual([
      'TOKEN_REVOKED',
      true,
      false,
    ]);
  });

  it('accepts a token until the last millisecond before it expires', async () => {
    const { token } = await annsToken({ expiresInSeconds: 60 });
    clock.advance(59_999);
    expect((await authenticate(store, clock, token)).subject).toBe('ann');
  });

  it('refuses a token from the moment it expires with TOKEN_EXPIRED', async () => {
    const { token } = await annsToken({ expiresInSeconds: 60 });
    clock.advance(60_000);
    const e = await rejection(authenticate(store, clock, token));
    expect([e.code, e.message.includes(token.slice(10))]).toEqual(['TOKEN_EXPIRED', false]);
  });

  it('refuses the token of a revoked principal with PRINCIPAL_REVOKED', async () => {
    const { token } = await annsToken();
    await directory.revokePrincipal(store, clock, 'ann');
    expect((await rejection(authenticate(store, clock, token))).code).toBe('PRINCIPAL_REVOKED');
  });

  it('refuses the token of a principal the store no longer has with PRINCIPAL_REVOKED', async () => {
    const token = `leash_pat_${'B'.repeat(43)}`;
    await store.putToken?.({
      id: 'tok_0123456789ab',
      principalId: 'gone',
      hash: hashToken(token),
      createdAt: T0_ISO,
    });
    expect((await rejection(authenticate(store, clock, token))).code).toBe('PRINCIPAL_REVOKED');
  });
});

it('refuses with STORE_UNSUPPORTED in a store that keeps no tokens', async () => {
  const e = await rejection(authenticate(storeWithoutPeople(), new ManualClock(T0), UNKNOWN));
  expect(e.code).toBe('STORE_UNSUPPORTED');
});
