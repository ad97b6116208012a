// `leash tokens create`, `tokens list` and `tokens revoke` in this process, on a SQLite file.
import { beforeEach, describe, expect, it } from 'vitest';
import { cliOnSqlite } from '../support/cliStore.js';
import { rejection } from '../support/people.js';
import { T0_ISO } from '../support/service.js';

const { leash, withService, clock } = cliOnSqlite('leash-tokens-');

const TOKEN = /^leash_pat_[A-Za-z0-9_-]{43}$/m;

beforeEach(async () => {
  await withService(async (s) => {
    await s.addPrincipal({ id: 'ann', name: 'Ann Lee', roles: ['release'] });
    await s.addPrincipal({ id: 'bob', name: 'Bob', roles: [] });
  });
});

/** Makes a token of `user` with `leash tokens create --json`: the token and its record. */
async function created(user: string, ...options: string[]) {
  const { out } = await leash(['tokens', 'create', user, ...options, '--json']);
  return JSON.parse(out) as { token: string; record: Record<string, unknown> & { id: string } };
}

describe('leash tokens create', () => {
  it('prints the token once, saying it will not be shown again', async () => {
    const { code, out } = await leash(['tokens', 'create', 'ann', '--label', 'laptop']);
    expect([code, out.match(new RegExp(TOKEN, 'gm'))?.length, out]).toEqual([
      0,
      1,
      expect.stringContaining('It will not be shown again'),
    ]);
  });

  it('makes a token that authenticates as its user', async () => {
    const { out } = await leash(['tokens', 'create', 'ann']);
    const token = TOKEN.exec(out)?.[0] ?? '';
    expect((await withService((s) => s.authenticate(token))).subject).toBe('ann');
  });

  it('gives the token and its record without the hash under --json', async () => {
    const { token, record } = await created('ann', '--label', 'ci', '--expires-in', '12h');
    expect([TOKEN.test(token), record]).toEqual([
      true,
      {
        id: expect.stringMatching(/^tok_[0-9a-f]{12}$/),
        principalId: 'ann',
        label: 'ci',
        createdAt: T0_ISO,
        expiresAt: '2026-11-30T22:00:00.000Z',
      },
    ]);
  });

  it.each([
    ['90d', '2027-02-28T10:00:00.000Z'],
    ['30m', '2026-11-30T10:30:00.000Z'],
    ['3600s', '2026-11-30T11:00:00.000Z'],
  ])('reads --expires-in %s', async (lifetime, expiresAt) => {
    expect((await created('ann', '--expires-in', lifetime)).record['expiresAt']).toBe(expiresAt);
  });

  it('exits 2 on a lifetime it cannot read, naming --expires-in', async () => {
    const { code, err } = await leash(['tokens', 'create', 'ann', '--expires-in', '90 days']);
    expect([code, err]).toEqual([2, expect.stringContaining('--expires-in must be')]);
  });

  it('exits 2 for an unknown user', async () => {
    const { code, err } = await leash(['tokens', 'create', 'carol']);
    expect([code, err]).toEqual([2, expect.stringContaining('no principal "carol"')]);
  });

  it('exits 2 for a revoked user', async () => {
    await leash(['users', 'revoke', 'bob']);
    expect((await leash(['tokens', 'create', 'bob'])).code).toBe(2);
  });
});

describe('leash tokens list', () => {
  it('lists the tokens, marking one past its expiry, and never a token or a hash', async () => {
    const one = await created('ann', '--label', 'laptop', '--expires-in', '1h');
    clock().advance(1_000);
    const two = await created('bob');
    clock().advance(3_600_000);
    const { code, out } = await leash(['tokens', 'list']);
    const hashes = await withService(async (s) => (await s.listTokens()).map((t) => t.hash));
    expect([code, out.split('\n').map((l) => l.split(/ {2,}/))]).toEqual([
      0,
      [
        ['ID', 'USER', 'LABEL', 'CREATED', 'EXPIRES', 'REVOKED'],
        [one.record.id, 'ann', 'laptop', T0_ISO, '2026-11-30T11:00:00.000Z (expired)', '-'],
        [two.record.id, 'bob', '-', '2026-11-30T10:00:01.000Z', 'never', '-'],
        [''],
      ],
    ]);
    expect([...hashes, one.token, two.token].filter((secret) => out.includes(secret))).toEqual([]);
  });

  it("lists one user's tokens under --json, without their hashes", async () => {
    await created('ann');
    const bobs = await created('bob');
    const { out } = await leash(['tokens', 'list', 'bob', '--json']);
    expect(JSON.parse(out)).toEqual([bobs.record]);
  });
});

describe('leash tokens revoke', () => {
  it('revokes a token, which is refused from then on', async () => {
    const { token, record } = await created('ann');
    const { code, out } = await leash(['tokens', 'revoke', record.id]);
    const refused = await withService((s) => rejection(s.authenticate(token)));
    expect([code, out, refused.code]).toEqual([
      0,
      `revoked personal token ${record.id} of ann at ${T0_ISO}\n`,
      'TOKEN_REVOKED',
    ]);
  });

  it('exits 2 for an unknown token id, naming the database searched', async () => {
    const { code, err } = await leash(['tokens', 'revoke', 'tok_0123456789ab']);
    expect([code, err]).toEqual([
      2,
      expect.stringMatching(/no personal token "tok_0123456789ab" \(searched /),
    ]);
  });

  it('exits 2 for something that is not a token id', async () => {
    const { code, err } = await leash(['tokens', 'revoke', 'ann']);
    expect([code, err]).toEqual([2, expect.stringContaining('token_id must be')]);
  });
});
