// The GuardrailStore contract: principals and their personal tokens, kept as hashes.
import type { GuardrailStore, PersonalToken, Principal } from '../../store/GuardrailStore.js';
import type { ContractContext } from './context.js';
import { LATER, START } from './fixtures.js';

const ANN: Principal = {
  id: 'ann',
  name: 'Ann Lee',
  roles: ['finance', 'release'],
  email: 'ann@example.com',
  createdAt: START,
};
const BOB: Principal = { id: 'bob', name: 'Bob', roles: [], createdAt: START };

/** A token of `principalId` whose hash is `digit` 64 times, made `minute` minutes after START. */
function token(id: string, digit: string, principalId = 'ann', minute = 0): PersonalToken {
  return {
    id,
    principalId,
    hash: digit.repeat(64),
    label: 'laptop',
    createdAt: new Date(Date.parse(START) + minute * 60_000).toISOString(),
    expiresAt: LATER,
  };
}

export function people(c: ContractContext): void {
  const { describe, it, expect } = c.test;
  describe('principals and personal tokens', () => {
    let store!: GuardrailStore;
    c.eachStore((s) => (store = s));
    const tokenIds = async (filter?: { principalId?: string }) =>
      (await store.listTokens(filter)).map((t) => t.id);

    it('reads a principal back as it was stored', async () => {
      await store.putPrincipal(ANN);
      expect(await store.getPrincipal('ann')).toStrictEqual(ANN);
    });

    it('reads a principal stored without its optional fields back without them', async () => {
      await store.putPrincipal(BOB);
      expect(await store.getPrincipal('bob')).toStrictEqual(BOB);
    });

    it('returns null for a principal never stored', async () => {
      expect(await store.getPrincipal('nobody')).toBeNull();
    });

    it('replaces a principal stored again under its id', async () => {
      await store.putPrincipal(ANN);
      const revoked = { ...ANN, roles: ['finance'], revokedAt: LATER };
      await store.putPrincipal(revoked);
      expect(await store.getPrincipal('ann')).toStrictEqual(revoked);
    });

    it('lists every principal, revoked ones too, in id order', async () => {
      await store.putPrincipal(BOB);
      await store.putPrincipal({ ...ANN, revokedAt: LATER });
      expect((await store.listPrincipals()).map((p) => p.id)).toEqual(['ann', 'bob']);
    });

    it('keeps a principal as stored when the caller changes its roles afterwards', async () => {
      const roles = ['release'];
      await store.putPrincipal({ ...BOB, roles });
      roles.push('admin');
      expect((await store.getPrincipal('bob'))?.roles).toEqual(['release']);
    });

    it('refuses a principal whose roles are not names, naming the field', async () => {
      const bad = { ...ANN, roles: ['release', ''] };
      await expect(store.putPrincipal(bad)).rejects.toMatchObject({ field: 'principal.roles[1]' });
      expect(await store.listPrincipals()).toHaveLength(0);
    });

    it('finds a token by its hash, as it was stored', async () => {
      await store.putToken(token('tok_1', 'a'));
      expect(await store.findToken('a'.repeat(64))).toStrictEqual(token('tok_1', 'a'));
    });

    it('finds no token for a hash none has', async () => {
      await store.putToken(token('tok_1', 'a'));
      expect(await store.findToken('b'.repeat(64))).toBeNull();
    });

    it('replaces a token stored again under its id, as a revocation does', async () => {
      await store.putToken(token('tok_1', 'a'));
      const revoked = { ...token('tok_1', 'a'), revokedAt: LATER };
      await store.putToken(revoked);
      expect([await store.findToken('a'.repeat(64)), await tokenIds()]).toStrictEqual([revoked, ['tok_1']]);
    });

    it('refuses, with TOKEN_HASH_TAKEN, a token with the hash of another, keeping the other', async () => {
      await store.putToken(token('tok_1', 'a'));
      await expect(store.putToken(token('tok_2', 'a', 'bob'))).rejects.toMatchObject({
        code: 'TOKEN_HASH_TAKEN',
      });
      expect([(await store.findToken('a'.repeat(64)))?.id, await tokenIds()]).toEqual(['tok_1', ['tok_1']]);
    });

    it('refuses a token whose hash is not a SHA-256 in lower-case hex, naming the field', async () => {
      const plain = { ...token('tok_1', 'a'), hash: 'leash_pat_secret' };
      await expect(store.putToken(plain)).rejects.toMatchObject({ field: 'token.hash' });
      expect(await tokenIds()).toEqual([]);
    });

    it('lists tokens oldest first, and those of one principal', async () => {
      await store.putToken(token('tok_3', 'c', 'ann', 2));
      await store.putToken(token('tok_1', 'a', 'bob', 1));
      await store.putToken(token('tok_2', 'b', 'ann', 0));
      expect([await tokenIds(), await tokenIds({ principalId: 'ann' })]).toEqual([
        ['tok_2', 'tok_1', 'tok_3'],
        ['tok_2', 'tok_3'],
      ]);
    });
  });
}
