// `leash serve`'s flags of signing in, in this process, with the dashboard's start injected: what it is
// given, and what is refused before it starts.
import { dirname } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ServeOptions } from '../../src/cli/io.js';
import { main } from '../../src/cli/main.js';
import { AutonomyGuardrailService } from '../../src/service/AutonomyGuardrailService.js';
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';
import { CLIENT_ID, startTokenIssuer } from '../dashboard/oidc-support.js';
import { tempFiles } from '../support/tempFiles.js';

const files = tempFiles('leash-serve-');
let db: string;

beforeEach(async () => {
  db = files.newFile();
  const store = new SqliteStore({ path: db });
  await store.migrate();
  await store.close();
});

/** `leash serve` with `flags`, stopped as soon as it started; what the dashboard was started with. */
async function serve(flags: string[], env: Record<string, string> = {}) {
  const given: ServeOptions[] = [];
  const stopped = new AbortController();
  stopped.abort();
  let err = '';
  let out = '';
  const code = await main(['serve', '--port', '0', '--db', db, ...flags], {
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: (text: string) => (err += text) },
    cwd: dirname(db),
    env,
    signal: stopped.signal,
    serve: async (options) => {
      given.push(options);
      return { url: 'http://127.0.0.1:4580', token: 't', close: async () => undefined };
    },
  });
  return { code, out, err, options: given[0] };
}

describe('leash serve, about signing in', () => {
  it('gives the dashboard the session length and the public address', async () => {
    const r = await serve(['--session-ttl', '3600', '--public-url', 'https://leash.example.com']);
    expect([r.code, r.options?.signIn, r.options?.publicUrl]).toEqual([
      0,
      { sessionTtlSeconds: 3600 },
      'https://leash.example.com',
    ]);
  });

  it('says where people sign in once the store has users', async () => {
    const store = new SqliteStore({ path: db });
    await store.migrate();
    await new AutonomyGuardrailService({ store }).addPrincipal({ id: 'ann', name: 'Ann Lee' });
    await store.close();
    const r = await serve([]);
    expect(r.out).toContain(
      'the store has users: each signs in at http://127.0.0.1:4580/login with a personal token',
    );
  });

  it('says nothing of signing in while the store has no users', async () => {
    expect((await serve([])).out).not.toContain('signs in');
  });

  it('refuses a session length that is not whole seconds from a minute to a week (exit 2)', async () => {
    for (const ttl of ['59', '604801', '1h', '-5'])
      expect((await serve(['--session-ttl', ttl])).code).toBe(2);
  });

  it('refuses a flag of a provider without --oidc-issuer (exit 2)', async () => {
    const r = await serve(['--oidc-client-id', 'leash']);
    expect([r.code, r.err]).toEqual([2, expect.stringContaining('--oidc-client-id needs --oidc-issuer')]);
    expect((await serve(['--oidc-role', 'a=b'])).err).toContain('--oidc-role needs --oidc-issuer');
  });

  it('refuses --oidc-issuer without --oidc-client-id (exit 2)', async () => {
    const r = await serve(['--oidc-issuer', 'https://idp.example.com']);
    expect([r.code, r.err]).toEqual([2, expect.stringContaining('--oidc-issuer needs --oidc-client-id')]);
  });

  it('refuses a role mapping that is not GROUP=ROLE, before asking the provider (exit 2)', async () => {
    const flags = [
      '--oidc-issuer',
      'https://idp.example.com',
      '--oidc-client-id',
      'leash',
      '--oidc-roles-claim',
      'g',
    ];
    const bare = await serve([...flags, '--oidc-role', 'staff']);
    expect([bare.code, bare.err]).toEqual([2, expect.stringContaining('--oidc-role must be GROUP=ROLE')]);
    const badRole = await serve([...flags, '--oidc-role', 'staff=Not A Role']);
    expect([badRole.code, badRole.err]).toEqual([2, expect.stringContaining('oidcRole must be GROUP=ROLE')]);
  });

  describe('with a provider', () => {
    let issuer: Awaited<ReturnType<typeof startTokenIssuer>>;

    beforeAll(async () => {
      issuer = await startTokenIssuer();
    });

    afterAll(async () => {
      await issuer?.close();
    });

    it('connects to it before starting, and gives the dashboard it and the mapping of claims', async () => {
      const r = await serve(
        [
          ...['--oidc-issuer', issuer.issuer, '--oidc-client-id', CLIENT_ID],
          ...[
            '--oidc-roles-claim',
            'groups',
            '--oidc-role',
            'release-team=release',
            '--oidc-role',
            'ops=ops',
          ],
        ],
        { LEASH_OIDC_CLIENT_SECRET: 'shh' },
      );
      expect(r.code).toBe(0);
      expect(r.options?.signIn?.oidc?.issuer).toBe(issuer.issuer);
      expect(r.options?.signIn?.mapping).toEqual({
        userClaim: 'email',
        rolesClaim: 'groups',
        roles: { 'release-team': 'release', ops: 'ops' },
      });
    });

    it('refuses one it cannot reach, naming it (exit 2)', async () => {
      const r = await serve(['--oidc-issuer', 'http://127.0.0.1:1', '--oidc-client-id', CLIENT_ID]);
      expect([r.code, r.err]).toEqual([
        2,
        expect.stringContaining('oidcIssuer http://127.0.0.1:1/ could not be read'),
      ]);
      expect(r.options).toBeUndefined();
    });
  });
});
