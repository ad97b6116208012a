import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Browser, person, setCookies } from './signin-support.js';
import { dashboard, fixture, ORIGIN, pausedPlan, SECRET, textOf, TOKEN, type Fixture } from './support.js';

const SESSION = 'leash_token_session';
const LOGIN = 'leash_token_login';
const EIGHT_HOURS_MS = 8 * 3600 * 1000;

/** A dashboard over a store with Ann (release) and Bob (finance); their tokens. */
async function team(f: Fixture = fixture()) {
  const ann = await person(f, { id: 'ann', name: 'Ann Lee', roles: ['release'] });
  const bob = await person(f, { id: 'bob', name: 'Bob Roe', roles: ['finance'] });
  return { f, ann, bob };
}

describe('with no principals in the store', () => {
  it('sends the sign-in page back to the plans: the access token is how one gets in', async () => {
    const { app } = dashboard(fixture());
    const res = await app.request(`${ORIGIN}/login?token=${TOKEN}`);
    expect(res.status).toBe(303);
    const again = await app.request(`${ORIGIN}/login`, { headers: { cookie: setCookieHeader(res) } });
    expect([again.status, again.headers.get('location')]).toEqual([303, '/']);
  });
});

describe('once the store has principals', () => {
  it('no longer opens to the access token, and sends it to sign in without the token', async () => {
    const { f } = await team();
    const { app } = dashboard(f);
    const res = await app.request(`${ORIGIN}/approvals?token=${TOKEN}`);
    expect([res.status, res.headers.get('location')]).toEqual([303, '/login?next=%2Fapprovals']);
    const bearer = await app.request(`${ORIGIN}/`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect([bearer.status, bearer.headers.get('location')]).toEqual([303, '/login?next=%2F']);
  });

  it('sends a page opened from another site through a page of its own, so the session cookie comes along', async () => {
    const { f } = await team();
    const res = await new Browser(dashboard(f).app).get('/approvals?status=pending', {
      'sec-fetch-site': 'cross-site',
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain(
      '<meta http-equiv="refresh" content="0;url=/approvals?status=pending" />',
    );
  });

  it('refuses a form from someone not signed in (401)', async () => {
    const { f } = await team();
    const approvalId = await pausedPlan(f);
    const res = await new Browser(dashboard(f).app).post(`/approvals/${approvalId}/approve`, { csrf: 'x' });
    expect(res.status).toBe(401);
    expect((await f.runner.service.getApproval(approvalId))?.status).toBe('pending');
  });

  it('shows a sign-in form with a CSRF token tied to an HttpOnly cookie of the sign-in pages', async () => {
    const { f } = await team();
    const res = await new Browser(dashboard(f).app).get('/login');
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/<form class="signin card" method="post" action="\/login">/);
    const header = setCookies(res).get(LOGIN)?.header ?? '';
    expect(header).toMatch(/; HttpOnly/);
    expect(header).toMatch(/; SameSite=Strict/);
    expect(header).toMatch(/; Path=\/login/);
  });
});

describe('signing in with a personal token', () => {
  it('opens a session in an HttpOnly, SameSite=Strict cookie for the whole site, lasting 8 hours', async () => {
    const { f, ann } = await team();
    const res = await new Browser(dashboard(f).app).signIn(ann, '/approvals');
    expect([res.status, res.headers.get('location')]).toEqual([303, '/approvals']);
    const { value, header } = setCookies(res).get(SESSION) ?? { value: '', header: '' };
    expect(value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(value).not.toContain(ann);
    expect(header.split('; ').slice(1).sort()).toEqual([
      'HttpOnly',
      'Max-Age=28800',
      'Path=/',
      'SameSite=Strict',
    ]);
  });

  it('marks the session cookie Secure when the dashboard is reached over https', async () => {
    const { f, ann } = await team();
    const { app } = dashboard(f, {
      publicUrl: 'https://leash.example.com',
      base: 'https://leash.example.com',
    });
    const res = await new Browser(app, 'https://leash.example.com').signIn(ann);
    expect(setCookies(res).get(SESSION)?.header).toMatch(/; Secure/);
  });

  it('lets the session in, and every page says who is signed in', async () => {
    const { f, ann } = await team();
    const browser = await new Browser(dashboard(f).app).signedIn(ann);
    for (const path of ['/', '/approvals', '/budgets']) {
      const res = await browser.get(path);
      expect(res.status).toBe(200);
      expect(textOf(await res.text())).toContain('Signed in as Ann Lee ann · roles release Sign out');
    }
  });

  it('refuses a token the store does not know (401), saying so, and opens no session', async () => {
    const { f, ann } = await team();
    const res = await new Browser(dashboard(f).app).signIn(`${ann.slice(0, -4)}AAAA`);
    expect(res.status).toBe(401);
    expect(textOf(await res.text())).toContain(
      'Not signed in: this personal token is not one this store knows.',
    );
    expect(setCookies(res).has(SESSION)).toBe(false);
  });

  it('refuses a revoked token (401)', async () => {
    const { f, ann } = await team();
    const [record] = await f.runner.service.listTokens({ principalId: 'ann' });
    await f.runner.service.revokeToken(record?.id ?? '');
    const res = await new Browser(dashboard(f).app).signIn(ann);
    expect(res.status).toBe(401);
    expect(textOf(await res.text())).toMatch(/Not signed in: personal token tok_[0-9a-f]{12} was revoked/);
  });

  it('goes on to the page it was sent from, and never to another site', async () => {
    const { f, ann } = await team();
    const res = await new Browser(dashboard(f).app).signIn(ann, '/budgets?x=1');
    expect(res.headers.get('location')).toBe('/budgets?x=1');
    for (const next of ['//evil.example/', 'https://evil.example/', '/\\evil.example', '/logout']) {
      const elsewhere = await new Browser(dashboard(f).app).signIn(ann, next);
      expect(elsewhere.headers.get('location')).toBe('/');
    }
  });

  it('replaces a session id planted in the browser before signing in', async () => {
    const { f, ann } = await team();
    const browser = new Browser(dashboard(f).app);
    browser.jar.set(SESSION, 'A'.repeat(43));
    await browser.signedIn(ann);
    expect(browser.jar.get(SESSION)).not.toBe('A'.repeat(43));
    expect((await browser.get('/', { cookie: `${SESSION}=${'A'.repeat(43)}` })).status).toBe(303);
  });
});

describe('the forms of a signed-in person', () => {
  it('refuses the sign-in form without its CSRF token (403)', async () => {
    const { f, ann } = await team();
    const browser = new Browser(dashboard(f).app);
    await browser.get('/login');
    const res = await browser.post('/login', { token: ann });
    expect(res.status).toBe(403);
    expect(setCookies(res).has(SESSION)).toBe(false);
  });

  it('refuses the sign-in form with the CSRF token of another browser (403)', async () => {
    const { f, ann } = await team();
    const { app } = dashboard(f);
    const csrf = await new Browser(app).csrf('/login');
    const other = new Browser(app);
    await other.get('/login');
    expect((await other.post('/login', { csrf, token: ann })).status).toBe(403);
  });

  it('refuses the sign-in form sent from another origin (403)', async () => {
    const { f, ann } = await team();
    const browser = new Browser(dashboard(f).app);
    const csrf = await browser.csrf('/login');
    const res = await browser.post('/login', { csrf, token: ann }, { origin: 'http://evil.example' });
    expect(res.status).toBe(403);
  });

  it("refuses an approval carrying the access token's CSRF token rather than the session's (403)", async () => {
    const { f, ann } = await team();
    const approvalId = await pausedPlan(f);
    const tokenCsrf = createHmac('sha256', SECRET).update(TOKEN, 'utf8').digest('base64url');
    const browser = await new Browser(dashboard(f).app).signedIn(ann);
    const res = await browser.post(`/approvals/${approvalId}/approve`, { csrf: tokenCsrf });
    expect(res.status).toBe(403);
  });

  it('refuses an approval sent from another site (403), session cookie or not', async () => {
    const { f, ann } = await team();
    const approvalId = await pausedPlan(f);
    const browser = await new Browser(dashboard(f).app).signedIn(ann);
    const csrf = await browser.csrf('/approvals');
    const res = await browser.post(
      `/approvals/${approvalId}/approve`,
      { csrf },
      { 'sec-fetch-site': 'same-site' },
    );
    expect(res.status).toBe(403);
    expect((await f.runner.service.getApproval(approvalId))?.status).toBe('pending');
  });

  it('records an approval as the signed-in person, whatever name the form gives', async () => {
    const { f, ann } = await team();
    const approvalId = await pausedPlan(f);
    const d = dashboard(f);
    const browser = await new Browser(d.app).signedIn(ann);
    const csrf = await browser.csrf('/approvals');
    const res = await browser.post(`/approvals/${approvalId}/approve`, { csrf, by: 'mallory' });
    expect(res.status).toBe(303);
    await d.settle();
    expect((await f.runner.service.getApproval(approvalId))?.decidedBy).toBe('Ann Lee');
  });

  it('asks for no name in the approval form', async () => {
    const { f, ann } = await team();
    await pausedPlan(f);
    const browser = await new Browser(dashboard(f).app).signedIn(ann);
    const page = await (await browser.get('/approvals')).text();
    expect(page).toMatch(/<form class="decide"/);
    expect(page).not.toMatch(/name="by"/);
  });
});

describe('the options of signing in', () => {
  it('refuses a session length that is not a whole number of seconds, naming it', () => {
    for (const sessionTtlSeconds of [0, 1.5, -60]) {
      expect(() => dashboard(fixture(), { signIn: { sessionTtlSeconds } })).toThrow(
        /^sessionTtlSeconds must be/,
      );
    }
  });

  it('refuses a public address with a path, naming it', () => {
    expect(() => dashboard(fixture(), { publicUrl: 'https://leash.example.com/dash' })).toThrow(
      /^publicUrl must be/,
    );
  });
});

describe('the end of a session', () => {
  it('signs out: the cookie is cleared and its id lets nobody in again', async () => {
    const { f, ann } = await team();
    const browser = await new Browser(dashboard(f).app).signedIn(ann);
    const id = browser.jar.get(SESSION) ?? '';
    const res = await browser.post('/logout', { csrf: await browser.csrf('/') });
    expect([res.status, res.headers.get('location')]).toEqual([303, '/login']);
    expect(setCookies(res).get(SESSION)?.header).toMatch(/Max-Age=0/);
    const replayed = await browser.get('/', { cookie: `${SESSION}=${id}` });
    expect(replayed.status).toBe(303);
  });

  it('refuses to sign out without the CSRF token (403): another site cannot sign one out', async () => {
    const { f, ann } = await team();
    const browser = await new Browser(dashboard(f).app).signedIn(ann);
    expect((await browser.post('/logout', {})).status).toBe(403);
    expect((await browser.get('/')).status).toBe(200);
  });

  it('comes 8 hours after signing in', async () => {
    const { f, ann } = await team();
    const browser = await new Browser(dashboard(f).app).signedIn(ann);
    f.clock.advance(EIGHT_HOURS_MS - 1);
    expect((await browser.get('/')).status).toBe(200);
    f.clock.advance(1);
    const res = await browser.get('/');
    expect([res.status, res.headers.get('location')]).toEqual([303, '/login?next=%2F']);
  });

  it('comes after the time it is given', async () => {
    const { f, ann } = await team();
    const browser = await new Browser(dashboard(f, { signIn: { sessionTtlSeconds: 60 } }).app).signedIn(ann);
    f.clock.advance(60_000);
    expect((await browser.get('/')).status).toBe(303);
  });

  it('comes when the token signed in with is revoked', async () => {
    const { f, ann } = await team();
    const browser = await new Browser(dashboard(f).app).signedIn(ann);
    const [record] = await f.runner.service.listTokens({ principalId: 'ann' });
    await f.runner.service.revokeToken(record?.id ?? '');
    expect((await browser.get('/')).status).toBe(303);
  });

  it('comes when the person is revoked', async () => {
    const { f, ann } = await team();
    const browser = await new Browser(dashboard(f).app).signedIn(ann);
    await f.runner.service.revokePrincipal('ann');
    expect((await browser.get('/')).status).toBe(303);
  });
});

/** The cookie a response sets, as a request's Cookie header. */
function setCookieHeader(res: Response): string {
  return [...setCookies(res)].map(([n, { value }]) => `${n}=${value}`).join('; ');
}
