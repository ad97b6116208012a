// Principals and personal tokens kept in each store: added, changed, revoked and listed, and a token's
// text kept nowhere.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { GuardrailValidationError } from '../../src/errors.js';
import * as directory from '../../src/identity/directory.js';
import type { GuardrailStore } from '../../src/store/GuardrailStore.js';
import { rejection, storeWithoutPeople } from '../support/people.js';
import { LOCAL_STORES, T0, T0_ISO } from '../support/service.js';

const ANN = { id: 'ann', name: 'Ann Lee', roles: ['release'] };
const BOB = { id: 'bob', name: 'Bob', roles: [] };
const LATER_ISO = '2026-11-30T10:01:00.000Z';

describe.each(LOCAL_STORES)('the directory, in a %s', (_name, open) => {
  let store: GuardrailStore;
  let clock: ManualClock;

  beforeEach(async () => {
    store = await open();
    clock = new ManualClock(T0);
  });

  afterEach(() => store.close());

  describe('principals', () => {
    it('adds one, stamped with the time it was added', async () => {
      await directory.addPrincipal(store, clock, { ...ANN, email: 'ann@example.com' });
      expect(await directory.listPrincipals(store)).toEqual([
        { id: 'ann', name: 'Ann Lee', roles: ['release'], email: 'ann@example.com', createdAt: T0_ISO },
      ]);
    });

    it('changes the name and roles of one added again, keeping when it was added', async () => {
      await directory.addPrincipal(store, clock, ANN);
      clock.advance(60_000);
      await directory.addPrincipal(store, clock, { id: 'ann', name: 'Ann L.', roles: ['ops'] });
      expect(await directory.listPrincipals(store)).toEqual([
        { id: 'ann', name: 'Ann L.', roles: ['ops'], createdAt: T0_ISO },
      ]);
    });

    it('refuses to add again an id that was revoked, naming id', async () => {
      await directory.addPrincipal(store, clock, ANN);
      await directory.revokePrincipal(store, clock, 'ann');
      const e = await rejection(directory.addPrincipal(store, clock, ANN));
      expect([e instanceof GuardrailValidationError, (e as GuardrailValidationError).field]).toEqual([
        true,
        'id',
      ]);
    });

    it('stores nothing of a principal it refuses', async () => {
      await rejection(directory.addPrincipal(store, clock, { ...ANN, roles: ['Release'] }));
      expect(await directory.listPrincipals(store)).toEqual([]);
    });

    it('lists them in id order, revoked ones too', async () => {
      await directory.addPrincipal(store, clock, BOB);
      await directory.addPrincipal(store, clock, ANN);
      await directory.revokePrincipal(store, clock, 'bob');
      expect((await directory.listPrincipals(store)).map((p) => [p.id, p.revokedAt])).toEqual([
        ['ann', undefined],
        ['bob', T0_ISO],
      ]);
    });

    it('revokes one at the clock’s time', async () => {
      await directory.addPrincipal(store, clock, ANN);
      clock.advance(60_000);
      expect((await directory.revokePrincipal(store, clock, 'ann')).revokedAt).toBe(LATER_ISO);
    });

    it('keeps the first time when one is revoked twice', async () => {
      await directory.addPrincipal(store, clock, ANN);
      await directory.revokePrincipal(store, clock, 'ann');
      clock.advance(60_000);
      expect((await directory.revokePrincipal(store, clock, 'ann')).revokedAt).toBe(T0_ISO);
    });

    it('refuses to revoke an unknown one with PRINCIPAL_NOT_FOUND', async () => {
      expect((await rejection(directory.revokePrincipal(store, clock, 'ann'))).code).toBe(
        'PRINCIPAL_NOT_FOUND',
      );
    });

    it('are none in a new store', async () => {
      expect(await directory.hasPrincipals(store)).toBe(false);
    });

    it('are there once one is added', async () => {
      await directory.addPrincipal(store, clock, ANN);
      expect(await directory.hasPrincipals(store)).toBe(true);
    });

    it('are none once every one is revoked', async () => {
      await directory.addPrincipal(store, clock, ANN);
      await directory.revokePrincipal(store, clock, 'ann');
      expect(await directory.hasPrincipals(store)).toBe(false);
    });
  });

  describe('personal tokens', () => {
    beforeEach(async () => {
      await directory.addPrincipal(store, clock, ANN);
      await directory.addPrincipal(store, clock, BOB);
    });

    it('are stored as their hash: no stored token holds the text of any', async () => {
      const made = [
        await directory.createToken(store, clock, 'ann', { label: 'laptop' }),
        await directory.createToken(store, clock, 'ann', { expiresInSeconds: 3600 }),
        await directory.createToken(store, clock, 'bob'),
      ];
      const stored = JSON.stringify(await store.listTokens?.());
      const secrets = made.map((m) => m.token.slice('leash_pat_'.length));
      expect(secrets.filter((s) => stored.includes(s))).toEqual([]);
    });

    it('are stored as the record given back with the token', async () => {
      const { record } = await directory.createToken(store, clock, 'ann', { label: 'laptop' });
      expect(await directory.listTokens(store)).toEqual([record]);
    });

    it('are refused to an unknown principal with PRINCIPAL_NOT_FOUND', async () => {
      expect((await rejection(directory.createToken(store, clock, 'carol'))).code).toBe(
        'PRINCIPAL_NOT_FOUND',
      );
    });

    it('are refused to a revoked principal with PRINCIPAL_REVOKED', async () => {
      await directory.revokePrincipal(store, clock, 'bob');
      expect((await rejection(directory.createToken(store, clock, 'bob'))).code).toBe('PRINCIPAL_REVOKED');
    });

    it('are listed for one principal alone', async () => {
      await directory.createToken(store, clock, 'ann');
      const bobs = await directory.createToken(store, clock, 'bob');
      expect(await directory.listTokens(store, { principalId: 'bob' })).toEqual([bobs.record]);
    });

    it('are revoked by id at the clock’s time', async () => {
      const { record } = await directory.createToken(store, clock, 'ann');
      clock.advance(60_000);
      await directory.revokeToken(store, clock, record.id);
      expect((await directory.listTokens(store))[0]?.revokedAt).toBe(LATER_ISO);
    });

    it('keep the first time when one is revoked twice', async () => {
      const { record } = await directory.createToken(store, clock, 'ann');
      await directory.revokeToken(store, clock, record.id);
      clock.advance(60_000);
      expect((await directory.revokeToken(store, clock, record.id)).revokedAt).toBe(T0_ISO);
    });

    it('refuse to revoke an unknown id with TOKEN_NOT_FOUND', async () => {
      const e = await rejection(directory.revokeToken(store, clock, 'tok_0123456789ab'));
      expect(e.code).toBe('TOKEN_NOT_FOUND');
    });

    it('refuse to revoke by something that is not a token id, naming token_id', async () => {
      const e = await rejection(directory.revokeToken(store, clock, 'leash_pat_x'));
      expect((e as GuardrailValidationError).field).toBe('token_id');
    });
  });
});

describe('a store without the methods of principals', () => {
  it('has no principals', async () => {
    expect(await directory.hasPrincipals(storeWithoutPeople())).toBe(false);
  });

  it.each([
    ['addPrincipal', (s: GuardrailStore) => directory.addPrincipal(s, new ManualClock(T0), ANN)],
    ['listPrincipals', (s: GuardrailStore) => directory.listPrincipals(s)],
    ['createToken', (s: GuardrailStore) => directory.createToken(s, new ManualClock(T0), 'ann')],
    ['listTokens', (s: GuardrailStore) => directory.listTokens(s)],
  ])('refuses %s with STORE_UNSUPPORTED', async (_name, call) => {
    expect((await rejection(call(storeWithoutPeople()))).code).toBe('STORE_UNSUPPORTED');
  });
});
