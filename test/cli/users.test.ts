// `leash users add`, `users list` and `users revoke` in this process, on a SQLite file.
import { describe, expect, it } from 'vitest';
import { cliOnSqlite } from '../support/cliStore.js';
import { T0_ISO } from '../support/service.js';

const { leash, withService, clock } = cliOnSqlite('leash-users-');

const ADD_ANN = ['users', 'add', 'ann', '--name', 'Ann Lee', '--role', 'release', '--role', 'ops'];

describe('leash users add', () => {
  it('adds a user to a new store, with its roles sorted', async () => {
    const { code, out } = await leash(ADD_ANN);
    expect([code, out]).toEqual([0, expect.stringContaining('added user ann (Ann Lee; roles ops, release)')]);
  });

  it('keeps the user in the store', async () => {
    await leash([...ADD_ANN, '--email', 'ann@example.com']);
    expect(await withService((s) => s.listPrincipals())).toEqual([
      { id: 'ann', name: 'Ann Lee', roles: ['ops', 'release'], email: 'ann@example.com', createdAt: T0_ISO },
    ]);
  });

  it('says it updated a user added before', async () => {
    await leash(ADD_ANN);
    const { code, out } = await leash(['users', 'add', 'ann', '--name', 'Ann L.']);
    expect([code, out]).toEqual([0, expect.stringContaining('updated user ann (Ann L.; no roles)')]);
  });

  it('prints the user under --json', async () => {
    const { out } = await leash([...ADD_ANN, '--json']);
    expect(JSON.parse(out)).toEqual({
      id: 'ann',
      name: 'Ann Lee',
      roles: ['ops', 'release'],
      createdAt: T0_ISO,
    });
  });

  it('exits 2 on a bad id, naming the field and the value', async () => {
    const { code, err } = await leash(['users', 'add', 'Ann', '--name', 'Ann']);
    expect([code, err]).toEqual([2, expect.stringMatching(/^leash: id must be .*, got "Ann"\n$/)]);
  });

  it('exits 2 without --name', async () => {
    expect((await leash(['users', 'add', 'ann'])).code).toBe(2);
  });
});

describe('leash users list', () => {
  it('lists the users with their roles and when they were revoked', async () => {
    await leash(ADD_ANN);
    await leash(['users', 'add', 'bob', '--name', 'Bob']);
    clock().advance(60_000);
    await leash(['users', 'revoke', 'bob']);
    const { code, out } = await leash(['users', 'list']);
    expect([code, out.split('\n').map((l) => l.split(/ {2,}/))]).toEqual([
      0,
      [
        ['ID', 'NAME', 'ROLES', 'EMAIL', 'CREATED', 'REVOKED'],
        ['ann', 'Ann Lee', 'ops,release', '-', T0_ISO, '-'],
        ['bob', 'Bob', '-', '-', T0_ISO, '2026-11-30T10:01:00.000Z'],
        [''],
      ],
    ]);
  });

  it('prints the users under --json', async () => {
    await leash(ADD_ANN);
    const { out } = await leash(['users', 'list', '--json']);
    expect((JSON.parse(out) as { id: string }[]).map((p) => p.id)).toEqual(['ann']);
  });

  it('says how to add one when there are none', async () => {
    await withService(async () => undefined);
    const { code, out } = await leash(['users', 'list']);
    expect([code, out]).toEqual([0, expect.stringContaining('no users; add one with:')]);
  });
});

describe('leash users revoke', () => {
  it('revokes a user', async () => {
    await leash(ADD_ANN);
    const { code, out } = await leash(['users', 'revoke', 'ann']);
    expect([code, out, await withService((s) => s.hasPrincipals())]).toEqual([
      0,
      `revoked user ann at ${T0_ISO}\n`,
      false,
    ]);
  });

  it('exits 2 for an unknown user, naming the database searched', async () => {
    await leash(ADD_ANN);
    const { code, err } = await leash(['users', 'revoke', 'carol']);
    expect([code, err]).toEqual([2, expect.stringMatching(/no principal "carol" \(searched .*\.db\)/)]);
  });
});
