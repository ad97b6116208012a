import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { connectOidc, type OidcSignIn } from '../../src/dashboard/oidc.js';
import { PlanRunner } from '../../src/runner/runner.js';
import { MemoryStore } from '../../src/store/memory/MemoryStore.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  signInAtProvider,
  startProvider,
  startTokenIssuer,
  strangerKey,
} from './oidc-support.js';
import { Browser, setCookies } from './signin-support.js';
import { dashboard, fixture, ORIGIN, T0, textOf, type Fixture } from './support.js';

const CALLBACK = `${ORIGIN}/login/callback`;
const GROUPS = { rolesClaim: 'groups', roles: { 'release-team': 'release' } };

/** A store where Ann (ann@example.com) is a principal of role `release`; its clock at `now`. */
async function withAnn(now = Date.now()): Promise<Fixture> {
  const clock = new ManualClock(now);
  const store = new MemoryStore();
  const f = { clock, store, runner: new PlanRunner({ store, clock }) };
  await f.runner.service.addPrincipal({
    id: 'ann',
    name: 'Ann Lee',
    roles: ['release'],
    email: 'ann@example.com',
  });
  return f;
}

describe('signing in at an OpenID Connect provider (oidc-provider)', { timeout: 30_000 }, () => {
  let provider: Awaited<ReturnType<typeof startProvider>>;
  let oidc: OidcSignIn;

  beforeAll(async () => {
    provider = await startProvider(CALLBACK, {
      'ann-at-idp': { email: 'Ann@Example.com', name: 'Ann at the provider' },
      carol: { email: 'carol@example.com', name: 'Carol Poe', groups: ['release-team', 'staff'] },
      dave: { email: 'dave@example.com', groups: ['visitors'] },
    });
    oidc = await connectOidc({
      issuer: provider.issuer,
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      scope: 'openid email profile groups',
    });
  }, 30_000);

  afterAll(async () => {
    await provider?.close();
  });

  /** A browser on a dashboard signing in with the provider; the address the provider sends it back to. */
  async function atProvider(f: Fixture, login: string, next = '/approvals') {
    const browser = new Browser(dashboard(f, { signIn: { oidc, mapping: GROUPS } }).app);
    const start = await browser.get(`/login/oidc?next=${encodeURIComponent(next)}`);
    const authorization = start.headers.get('location') ?? '';
    return { browser, start, authorization, callback: await signInAtProvider(authorization, login) };
  }

  it('offers the provider on the sign-in page', async () => {
    const browser = new Browser(dashboard(await withAnn(), { signIn: { oidc } }).app);
    const page = await (await browser.get('/login?next=%2Fbudgets')).text();
    const host = new URL(provider.issuer).host;
    expect(page).toContain(`<a href="/login/oidc?next=%2Fbudgets">Sign in with ${host}</a>`);
  });

  it('sends the browser to the provider with PKCE, state and nonce, and the callback as redirect URI', async () => {
    const { start, authorization } = await atProvider(await withAnn(), 'ann-at-idp');
    expect(start.status).toBe(303);
    const params = new URL(authorization).searchParams;
    expect(authorization.startsWith(`${provider.issuer}/`)).toBe(true);
    expect(params.get('redirect_uri')).toBe(CALLBACK);
    expect(params.get('code_challenge_method')).toBe('S256');
    expect(params.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(params.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(params.get('nonce')).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('keeps the sign-in under way in a short-lived, SameSite=Lax cookie: it must come back from the provider', async () => {
    const { start } = await atProvider(await withAnn(), 'ann-at-idp');
    const header = setCookies(start).get('leash_token_oidc')?.header ?? '';
    expect(header.split('; ').slice(1).sort()).toEqual([
      'HttpOnly',
      'Max-Age=600',
      'Path=/login',
      'SameSite=Lax',
    ]);
  });

  it('signs in the principal whose e-mail the provider names, in a Strict session, through a page of its own', async () => {
    const f = await withAnn();
    const { browser, callback } = await atProvider(f, 'ann-at-idp');
    expect(callback.startsWith(`${CALLBACK}?`)).toBe(true);
    const res = await browser.get(callback);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('<meta http-equiv="refresh" content="0;url=/approvals" />');
    expect(setCookies(res).get('leash_token_session')?.header).toMatch(/; SameSite=Strict/);
    const inbox = textOf(await (await browser.get('/approvals')).text());
    expect(inbox).toContain('Signed in as Ann Lee ann · roles release');
  });

  it('gives someone who is no principal the roles their groups map to, and no others', async () => {
    const { browser, callback } = await atProvider(await withAnn(), 'carol');
    expect((await browser.get(callback)).status).toBe(200);
    expect(textOf(await (await browser.get('/')).text())).toContain(
      'Signed in as Carol Poe carol · roles release',
    );
  });

  it('refuses someone who is no principal and holds no role, saying why (403)', async () => {
    const { browser, callback } = await atProvider(await withAnn(), 'dave');
    const res = await browser.get(callback);
    expect(res.status).toBe(403);
    expect(textOf(await res.text())).toContain(
      'dave@example.com: no leash user has this name or e-mail, and you hold no role here.',
    );
    expect(setCookies(res).has('leash_token_session')).toBe(false);
  });

  it('refuses a callback whose state is not the one it sent (401)', async () => {
    const { browser, callback } = await atProvider(await withAnn(), 'ann-at-idp');
    const tampered = new URL(callback);
    tampered.searchParams.set('state', 'x'.repeat(43));
    const res = await browser.get(tampered.href);
    expect(res.status).toBe(401);
    expect(setCookies(res).has('leash_token_session')).toBe(false);
  });

  it('refuses a callback in a browser that did not start the sign-in (400)', async () => {
    const f = await withAnn();
    const { callback } = await atProvider(f, 'ann-at-idp');
    const res = await new Browser(dashboard(f, { signIn: { oidc } }).app).get(callback);
    expect(res.status).toBe(400);
    expect(textOf(await res.text())).toContain('began in another browser');
  });

  it('takes a callback once', async () => {
    const { browser, callback } = await atProvider(await withAnn(), 'ann-at-idp');
    await browser.get(callback);
    browser.jar.delete('leash_token_session');
    expect((await browser.get(callback)).status).toBe(400);
  });
});

describe('the ID tokens a sign-in refuses', () => {
  let issuer: Awaited<ReturnType<typeof startTokenIssuer>>;
  let f: Fixture;
  let oidc: OidcSignIn;

  beforeAll(async () => {
    issuer = await startTokenIssuer();
    f = await withAnn(T0);
    oidc = await connectOidc({
      issuer: issuer.issuer,
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      clock: f.clock,
    });
  });

  afterAll(async () => {
    await issuer?.close();
  });

  /** Ann's claims, issued at T0 for 5 minutes. */
  const claims = () => ({
    iss: issuer.issuer,
    aud: CLIENT_ID,
    sub: 'ann-sub',
    email: 'ann@example.com',
    iat: T0 / 1000,
    exp: T0 / 1000 + 300,
  });

  /** Starts a sign-in, has the token endpoint answer with the ID token `make` gives, and comes back. */
  async function signInWith(make: (nonce: string) => Promise<string>): Promise<Response> {
    const browser = new Browser(dashboard(f, { signIn: { oidc } }).app);
    const start = await browser.get('/login/oidc');
    const { code, state } = issuer.authorized(start.headers.get('location') ?? '');
    issuer.answerWith(make);
    return browser.get(`/login/callback?code=${code}&state=${state}`);
  }

  it('accepts one signed by the issuer, for this client, in time', async () => {
    const res = await signInWith((nonce) => issuer.sign({ ...claims(), nonce }));
    expect(res.status).toBe(200);
    expect(setCookies(res).has('leash_token_session')).toBe(true);
  });

  it('refuses one signed with a key the issuer does not publish (401)', async () => {
    const key = await strangerKey();
    const res = await signInWith((nonce) => issuer.sign({ ...claims(), nonce }, key));
    expect(res.status).toBe(401);
    const text = textOf(await res.text());
    expect(text).toContain('Sign-in refused');
    expect(text).toMatch(/signature verification failed/);
    expect(setCookies(res).has('leash_token_session')).toBe(false);
  });

  it('refuses one made for another client (401)', async () => {
    const res = await signInWith((nonce) => issuer.sign({ ...claims(), aud: 'another-client', nonce }));
    expect(res.status).toBe(401);
    expect(textOf(await res.text())).toMatch(/unexpected JWT "aud"/);
  });

  it('refuses one past its expiry on the clock, beyond 30 seconds of tolerance (401)', async () => {
    f.clock.set(T0 + 331_000);
    try {
      const res = await signInWith((nonce) => issuer.sign({ ...claims(), nonce }));
      expect(res.status).toBe(401);
      expect(textOf(await res.text())).toContain('expiration is past current timestamp');
    } finally {
      f.clock.set(T0);
    }
  });

  it('refuses one whose nonce is not the one this sign-in sent (401)', async () => {
    const res = await signInWith(() => issuer.sign({ ...claims(), nonce: 'another-nonce' }));
    expect(res.status).toBe(401);
  });

  it('refuses one from another issuer (401)', async () => {
    const res = await signInWith((nonce) =>
      issuer.sign({ ...claims(), iss: 'https://elsewhere.example', nonce }),
    );
    expect(res.status).toBe(401);
  });
});

describe('connecting to a provider', () => {
  it('refuses an http issuer other than on this machine, naming the option', async () => {
    await expect(connectOidc({ issuer: 'http://idp.example.com', clientId: 'x' })).rejects.toThrow(
      /^oidcIssuer must be an https URL/,
    );
  });

  it('says which issuer could not be read', async () => {
    await expect(connectOidc({ issuer: 'http://127.0.0.1:1', clientId: 'x' })).rejects.toThrow(
      /^oidcIssuer http:\/\/127\.0\.0\.1:1\/ could not be read as an OpenID Connect provider/,
    );
  });

  it('is not needed by a dashboard without one: its sign-in pages offer tokens only', async () => {
    const f = fixture();
    await f.runner.service.addPrincipal({ id: 'ann', name: 'Ann Lee' });
    const browser = new Browser(dashboard(f).app);
    expect(await (await browser.get('/login')).text()).not.toContain('/login/oidc');
    expect((await browser.get('/login/oidc')).status).toBe(404);
  });
});
