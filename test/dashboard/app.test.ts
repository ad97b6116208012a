import { createHash, createHmac } from 'node:crypto';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { allowedHostsFor } from '../../src/dashboard/security.js';
import { GuardrailError } from '../../src/errors.js';
import { EXECUTION_KEY } from '../../src/executor/state.js';
import type { JsonObject } from '../../src/json.js';
import { RunGuard } from '../../src/agent/RunGuard.js';
import { MemoryStore } from '../../src/store/memory/MemoryStore.js';
import {
  COOKIE,
  dashboard,
  FREE_PLAN,
  fixture,
  ORIGIN,
  pausedPlan,
  SESSION,
  type Fixture,
  sqliteStore,
  startPlan,
  textOf,
  TOKEN,
} from './support.js';

describe('access token', () => {
  it('answers 401 without a token', async () => {
    const { app } = dashboard(fixture());
    const res = await app.request('/');
    expect(res.status).toBe(401);
    expect(await res.text()).toMatch(/401 Unauthorized/);
  });

  it('answers 401 with a wrong token, wherever it is given', async () => {
    const { app } = dashboard(fixture());
    expect((await app.request('/?token=nope')).status).toBe(401);
    expect((await app.request('/', { headers: { authorization: 'Bearer nope' } })).status).toBe(401);
    expect((await app.request('/', { headers: { cookie: 'leash_token=nope' } })).status).toBe(401);
    expect((await app.request('/', { headers: { cookie: `leash_token=${TOKEN}x` } })).status).toBe(401);
  });

  it('moves a token in the query into an HttpOnly SameSite=Strict cookie and redirects without it', async () => {
    const { app } = dashboard(fixture());
    const res = await app.request(`/approvals?status=pending&token=${TOKEN}`);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/approvals?status=pending');
    const cookie = res.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(new RegExp(`^leash_token=${SESSION};`));
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Strict/);
    expect(cookie).toMatch(/; Path=\//);
  });

  it('never redirects a token link to another host', async () => {
    const { app } = dashboard(fixture());
    const res = await app.request(`http://localhost//evil.example/?token=${TOKEN}`);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/evil.example/');
  });

  it('keeps in the cookie a value derived from the token, not the token', async () => {
    const { app } = dashboard(fixture());
    const res = await app.request(`/?token=${TOKEN}`);
    const value = /^leash_token=([^;]*);/.exec(res.headers.get('set-cookie') ?? '')?.[1];
    expect(value).toBe(SESSION);
    expect(value).not.toContain(TOKEN);
  });

  it('refuses the token itself as the cookie value (401)', async () => {
    const { app } = dashboard(fixture());
    const res = await app.request('/', { headers: { cookie: `leash_token=${TOKEN}` } });
    expect(res.status).toBe(401);
  });

  it('refuses a session value made under another secret (401)', async () => {
    const { app } = dashboard(fixture());
    const other = createHmac('sha256', Buffer.alloc(32, 8)).update(`session:${TOKEN}`).digest('base64url');
    const res = await app.request('/', { headers: { cookie: `leash_token=${other}` } });
    expect(res.status).toBe(401);
  });

  it('sets and reads the cookie under the name it is given', async () => {
    const { app } = dashboard(fixture(), { cookieName: 'leash_token_4580' });
    const set = await app.request(`/?token=${TOKEN}`);
    expect(set.headers.get('set-cookie')).toMatch(new RegExp(`^leash_token_4580=${SESSION};`));
    const named = await app.request('/', { headers: { cookie: `leash_token_4580=${SESSION}` } });
    expect(named.status).toBe(200);
    expect((await app.request('/', { headers: { cookie: COOKIE } })).status).toBe(401);
  });

  it('refuses a cookie name a Set-Cookie header cannot carry', () => {
    expect(() => dashboard(fixture(), { cookieName: 'leash token' })).toThrow(/cookieName/);
  });

  it('lets the cookie alone in', async () => {
    const { app } = dashboard(fixture());
    const res = await app.request('/', { headers: { cookie: COOKIE } });
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/<h1>Plans<\/h1>/);
  });

  it('lets a bearer token in', async () => {
    const { app } = dashboard(fixture());
    const res = await app.request('/', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
  });

  it('answers 421 to a Host it was not told to serve (DNS rebinding)', async () => {
    const { app } = dashboard(fixture(), { allowedHosts: ['127.0.0.1:4580'] });
    const res = await app.request('http://evil.example:4580/', { headers: { cookie: COOKIE } });
    expect(res.status).toBe(421);
    const ok = await app.request('http://127.0.0.1:4580/', { headers: { cookie: COOKIE } });
    expect(ok.status).toBe(200);
  });
});

describe('allowed hosts', () => {
  const LAN = 'http://10.0.0.5:4580';
  /** The app as `startDashboard` makes it when bound to 10.0.0.5:4580. */
  const lan = (f = fixture()) => dashboard(f, { allowedHosts: allowedHostsFor('10.0.0.5', 4580), base: LAN });

  it('answers on the bound non-loopback address', async () => {
    const { get } = lan();
    expect((await get('/')).status).toBe(200);
  });

  it('answers 421 to a loopback name when bound to a non-loopback address', async () => {
    const { app } = lan();
    const res = await app.request('http://localhost:4580/', { headers: { cookie: COOKIE } });
    expect(res.status).toBe(421);
  });

  it('answers 421 to a rebinding Host header, even when the request target names an allowed host', async () => {
    const { app } = lan();
    const res = await app.request(`${LAN}/`, { headers: { cookie: COOKIE, host: 'evil.example:4580' } });
    expect(res.status).toBe(421);
  });

  it('accepts a form whose Origin is an allowed host', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { post, csrf, settle } = lan(f);
    const res = await post(`/approvals/${approvalId}/approve`, { by: 'alice', csrf: await csrf() });
    expect(res.status).toBe(303);
    await settle();
  });

  it('refuses a form whose Origin is an allowed host on another port or scheme (403)', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { post, csrf } = lan(f);
    const form = { by: 'alice', csrf: await csrf() };
    for (const origin of ['http://10.0.0.5:4581', 'https://10.0.0.5:4580', 'http://evil.example:4580']) {
      expect((await post(`/approvals/${approvalId}/approve`, form, { origin })).status).toBe(403);
    }
    expect((await f.runner.service.getApproval(approvalId))?.status).toBe('pending');
  });
});

describe('response headers', () => {
  it('sends the security headers on pages, redirects and refusals alike', async () => {
    const { app } = dashboard(fixture());
    for (const res of [
      await app.request('/', { headers: { cookie: COOKIE } }),
      await app.request(`/?token=${TOKEN}`),
      await app.request('/'),
      await app.request('/approvals/x/approve', { method: 'POST', headers: { cookie: COOKIE } }),
    ]) {
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).toMatch(/default-src 'none'/);
      expect(csp).toMatch(/style-src 'sha256-[A-Za-z0-9+/]+=*'/);
      expect(csp).toMatch(/img-src 'self' data:/);
      expect(csp).toMatch(/form-action 'self'/);
      expect(csp).toMatch(/frame-ancestors 'none'/);
      expect(csp).toMatch(/base-uri 'none'/);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
  });

  it('allows exactly the page stylesheet by its hash', async () => {
    const { get } = dashboard(fixture());
    const { text, res } = await get('/');
    const css = /<style>([\s\S]*?)<\/style>/.exec(text)?.[1] ?? '';
    const hash = createHash('sha256').update(css, 'utf8').digest('base64');
    expect(res.headers.get('content-security-policy')).toContain(`style-src 'sha256-${hash}'`);
    expect(text).not.toMatch(/ style="/);
    expect(text).not.toMatch(/<script/);
  });
});

describe('state changes', () => {
  it('refuses an approval without a CSRF token (403) and leaves it pending', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { post } = dashboard(f);
    const res = await post(`/approvals/${approvalId}/approve`, { by: 'alice', reason: 'ok' });
    expect(res.status).toBe(403);
    expect((await f.runner.service.getApproval(approvalId))?.status).toBe('pending');
  });

  it('refuses an approval with a wrong CSRF token (403)', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { post } = dashboard(f);
    const res = await post(`/approvals/${approvalId}/approve`, { by: 'alice', csrf: 'forged' });
    expect(res.status).toBe(403);
    expect((await f.runner.service.getApproval(approvalId))?.status).toBe('pending');
  });

  it('refuses a form sent from another origin (403), CSRF token or not', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { post, csrf } = dashboard(f);
    const res = await post(
      `/approvals/${approvalId}/approve`,
      { by: 'alice', csrf: await csrf() },
      { origin: 'https://evil.example' },
    );
    expect(res.status).toBe(403);
    expect((await f.runner.service.getApproval(approvalId))?.status).toBe('pending');
  });

  it('refuses a form whose Origin is "null" (403)', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { post, csrf } = dashboard(f);
    const res = await post(
      `/approvals/${approvalId}/approve`,
      { by: 'alice', csrf: await csrf() },
      { origin: 'null' },
    );
    expect(res.status).toBe(403);
  });

  it('refuses a form that the browser says came from another origin of the same site (403)', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { post, csrf } = dashboard(f);
    const res = await post(
      `/approvals/${approvalId}/approve`,
      { by: 'alice', csrf: await csrf() },
      { 'sec-fetch-site': 'same-site' },
    );
    expect(res.status).toBe(403);
  });

  it('answers 405 to methods other than GET, HEAD and POST', async () => {
    const { app } = dashboard(fixture());
    const res = await app.request('/approvals', { method: 'PUT', headers: { cookie: COOKIE } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD, POST');
  });

  it('refuses GET on an action (no state change without POST)', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { get } = dashboard(f);
    expect((await get(`/approvals/${approvalId}/approve?by=alice`)).status).toBe(404);
    expect((await f.runner.service.getApproval(approvalId))?.status).toBe('pending');
  });

  it('approves with name and reason, redirects to the plan, and the plan resumes to completed', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { post, csrf, settle, get } = dashboard(f);
    const res = await post(`/approvals/${approvalId}/approve`, {
      by: 'alice',
      reason: 'change window open',
      csrf: await csrf(),
    });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/plans/release');
    const approval = await f.runner.service.getApproval(approvalId);
    expect(approval?.decidedBy).toBe('alice');
    expect(approval?.reason).toBe('change window open');
    await settle();
    expect((await f.runner.status('release'))?.phase).toBe('completed');
    expect(textOf((await get('/plans/release')).text)).toMatch(/Phase completed/);
  });

  it('denies with a reason, and the plan ends failed', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { post, csrf, settle } = dashboard(f);
    const res = await post(`/approvals/${approvalId}/deny`, {
      by: 'bob',
      reason: 'freeze week',
      csrf: await csrf(),
    });
    expect(res.status).toBe(303);
    expect((await f.runner.service.getApproval(approvalId))?.status).toBe('denied');
    await settle();
    const status = await f.runner.status('release');
    expect(status?.phase).toBe('failed');
    expect(status?.record?.outcome?.guard).toBe('confirmation');
  });

  it('logs that a decided plan was not resumed when it is no longer paused', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    await resave(f, 'release', { phase: 'execute' });
    const { post, csrf, settle, logged } = dashboard(f);
    await post(`/approvals/${approvalId}/approve`, { by: 'alice', csrf: await csrf() });
    expect(await settle()).toEqual([null]);
    expect(logged).toEqual([
      expect.stringMatching(/^plan "release" not resumed: it is not awaiting confirmation/),
    ]);
  });

  it('logs a resume that fails, and its background run still resolves', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    await resave(f, 'release', { body: (b) => ({ ...b, version: 99 }) });
    const { post, csrf, settle, logged } = dashboard(f);
    const res = await post(`/approvals/${approvalId}/approve`, { by: 'alice', csrf: await csrf() });
    expect(res.status).toBe(303);
    expect(await settle()).toEqual([null]);
    expect(logged).toEqual([
      expect.stringMatching(/^plan "release" could not be resumed: .*not started by the leash runner/),
    ]);
  });

  it("approves an agent's request with name and reason, redirects to its plan and resumes nothing", async () => {
    const f = fixture();
    const approvalId = await agentAsked(f);
    const { post, csrf, settle, get, logged } = dashboard(f);
    const res = await post(`/approvals/${approvalId}/approve`, {
      by: 'alice',
      reason: 'ok',
      csrf: await csrf(),
    });
    expect([res.status, res.headers.get('location')]).toEqual([303, '/plans/agent']);
    expect(await f.runner.service.getApproval(approvalId)).toMatchObject({
      status: 'approved',
      decidedBy: 'alice',
      reason: 'ok',
    });
    expect([await settle(), logged]).toEqual([[], []]);
    expect(textOf((await get('/plans/agent')).text)).toMatch(/application running it resumes it/);
  });

  it("denies an agent's request with name and reason, and resumes nothing", async () => {
    const f = fixture();
    const approvalId = await agentAsked(f);
    const { post, csrf, settle } = dashboard(f);
    const res = await post(`/approvals/${approvalId}/deny`, { by: 'bob', reason: 'no', csrf: await csrf() });
    expect(res.status).toBe(303);
    expect(await f.runner.service.getApproval(approvalId)).toMatchObject({
      status: 'denied',
      decidedBy: 'bob',
      reason: 'no',
    });
    expect(await settle()).toEqual([]);
  });

  it('audits the decision with who and why, on the audit page', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { post, csrf, settle, get } = dashboard(f);
    await post(`/approvals/${approvalId}/approve`, {
      by: 'alice',
      reason: 'notes checked',
      csrf: await csrf(),
    });
    await settle();
    const { text } = await get('/plans/release/audit?guard=confirmation&result=allowed');
    expect(text).toMatch(/confirmation_approved/);
    const row = textOf(/<tr>(?:(?!<\/tr>)[\s\S])*confirmation_approved[\s\S]*?<\/tr>/.exec(text)?.[0] ?? '');
    expect(row).toMatch(/\bby alice\b/);
    expect(row).toMatch(/\breason notes checked\b/);
  });

  it('refuses a denial without a reason: the inbox again, with the message, 400', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { post, csrf } = dashboard(f);
    const res = await post(`/approvals/${approvalId}/deny`, { by: 'bob', reason: '  ', csrf: await csrf() });
    expect(res.status).toBe(400);
    const text = textOf(await res.text());
    expect(text).toMatch(/Approvals/);
    expect(text).toMatch(/Give a reason to deny: the plan stops, and its log says why\./);
    expect((await f.runner.service.getApproval(approvalId))?.status).toBe('pending');
  });

  it('answers a denial whose form has no reason field with the same plain message', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { post, csrf } = dashboard(f);
    const res = await post(`/approvals/${approvalId}/deny`, { by: 'bob', csrf: await csrf() });
    expect(res.status).toBe(400);
    const text = textOf(await res.text());
    expect(text).toMatch(/Give a reason to deny/);
    expect(text).not.toMatch(/undefined/);
  });

  it('marks the reason required in the form, and lets Approve past the check', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { get } = dashboard(f);
    const { text } = await get('/approvals');
    const form = /<form\s+class="decide"[\s\S]*?<\/form>/.exec(text)?.[0] ?? '';
    expect(form).toMatch(/<input[^>]*name="reason"[^>]*\srequired\s/);
    expect(form).toMatch(/<button class="approve" type="submit" formnovalidate>Approve<\/button>/);
    expect(form).toMatch(/<button class="deny" type="submit" formaction="\/approvals\/[^"]+\/deny">/);
    expect(form).toContain(`/approvals/${approvalId}/deny`);
  });

  it('refuses an empty name with 400 and keeps the reason typed', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { post, csrf } = dashboard(f);
    const res = await post(`/approvals/${approvalId}/approve`, {
      by: '',
      reason: 'typed once',
      csrf: await csrf(),
    });
    expect(res.status).toBe(400);
    const page = await res.text();
    expect(textOf(page)).toMatch(/Give your name: a decision is recorded with who made it\./);
    expect(page).toContain('value="typed once"');
  });

  it('refuses a second decision with 409', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { post, csrf, settle } = dashboard(f);
    const token = await csrf();
    await post(`/approvals/${approvalId}/approve`, { by: 'alice', csrf: token });
    await settle();
    const res = await post(`/approvals/${approvalId}/deny`, { by: 'bob', reason: 'late', csrf: token });
    expect(res.status).toBe(409);
    expect(textOf(await res.text())).toMatch(/is already (approved|used)/);
  });

  it('refuses an expired approval with 409', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { post, csrf } = dashboard(f);
    f.clock.advance(2 * 86_400_000);
    const res = await post(`/approvals/${approvalId}/approve`, { by: 'alice', csrf: await csrf() });
    expect(res.status).toBe(409);
    expect(textOf(await res.text())).toMatch(/expired/);
  });

  it('answers 404 in the inbox for an unknown approval', async () => {
    const f = fixture();
    await pausedPlan(f);
    const { post, csrf } = dashboard(f);
    const res = await post('/approvals/no-such-approval/approve', { by: 'alice', csrf: await csrf() });
    expect(res.status).toBe(404);
    expect(textOf(await res.text())).toMatch(/no approval "no-such-approval"/);
  });
});

describe('an unavailable store', () => {
  /** A fixture whose store's calls all reject with STORE_UNAVAILABLE once `down` is set. */
  function flakyFixture() {
    const state = { down: false };
    const memory = new MemoryStore();
    const store = new Proxy(memory, {
      get(target, name, receiver) {
        const value: unknown = Reflect.get(target, name, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) =>
          state.down
            ? Promise.reject(new GuardrailError('STORE_UNAVAILABLE', 'connection refused'))
            : (value as (...a: unknown[]) => unknown).apply(target, args);
      },
    });
    return { f: fixture(store), state };
  }

  it('answers every page with 503 and a plain message', async () => {
    const { f, state } = flakyFixture();
    await pausedPlan(f);
    const { get } = dashboard(f);
    state.down = true;
    for (const path of ['/', '/plans/release', '/plans/release/audit', '/approvals', '/nope']) {
      const { status, text, res } = await get(path);
      expect({ path, status, type: res.headers.get('content-type'), text }).toEqual({
        path,
        status: 503,
        type: expect.stringMatching(/^text\/plain/),
        text: '503 Service Unavailable: the store cannot be reached, try again later: connection refused\n',
      });
    }
  });

  it('answers an approval with 503 and a plain message, and records nothing', async () => {
    const { f, state } = flakyFixture();
    const approvalId = await pausedPlan(f);
    const { post, csrf, settle } = dashboard(f);
    const token = await csrf();
    state.down = true;
    const res = await post(`/approvals/${approvalId}/approve`, { by: 'alice', csrf: token });
    expect(res.status).toBe(503);
    expect(await res.text()).toMatch(/^503 Service Unavailable: the store cannot be reached/);
    state.down = false;
    expect(await settle()).toEqual([]);
    expect((await f.runner.service.getApproval(approvalId))?.status).toBe('pending');
  });
});

describe('pages', () => {
  it('lists plans with gauges of steps, budget and wall clock, and the pending count', async () => {
    const f = fixture();
    await pausedPlan(f);
    const { get } = dashboard(f);
    const { text } = await get('/');
    expect(text).toContain('href="/plans/release"');
    expect(text.match(/<svg\s+class="gauge"/g)?.length).toBe(3);
    const words = textOf(text);
    expect(words).toMatch(/2 \/ 10/); // steps: build, and deploy counted before it paused
    expect(words).toMatch(/0\.20 \/ 1\.00/);
    expect(words).toMatch(/0s \/ 1h00m/);
    expect(words).toMatch(/1 approval pending/);
    expect(text).toContain('href="/approvals"');
  });

  it('says "no limit" for a plan without limits', async () => {
    const f = fixture();
    await startPlan(f, 'free', FREE_PLAN);
    const { get } = dashboard(f);
    const words = textOf((await get('/')).text);
    expect(words.match(/no limit/g)?.length).toBe(3);
  });

  it('shows the inbox with pending approvals first, each with the approve/deny form', async () => {
    const f = fixture();
    const first = await pausedPlan(f, 'one');
    const second = await pausedPlan(f, 'two');
    const { get, post, csrf, settle } = dashboard(f);
    await post(`/approvals/${first}/deny`, { by: 'bob', reason: 'no', csrf: await csrf() });
    await settle();
    const { text } = await get('/approvals');
    expect(text.indexOf('href="/plans/two"')).toBeLessThan(text.indexOf('href="/plans/one"'));
    expect(text.match(/<form\s+class="decide"/g)?.length).toBe(1);
    expect(text).toContain(`action="/approvals/${second}/approve"`);
    expect(text).toContain(`formaction="/approvals/${second}/deny"`);
    const denied = await get('/approvals?status=denied');
    expect(denied.text).not.toContain(second);
    expect(textOf(denied.text)).toMatch(/bob/);
  });

  it('shows the plan page: outcome, source, burn-down chart, decision timeline and the pending form', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { get } = dashboard(f);
    const { text } = await get('/plans/release');
    const words = textOf(text);
    expect(words).toMatch(/Phase awaiting_confirmation 1 of 3 decisions done/);
    expect(words).toMatch(/Source \/work\/plans\/release\.plan\.yaml/);
    expect(text).toMatch(/aria-label="budget left of 1\.00"/);
    // One point per change of the money spent, with what was left after it.
    expect(text).toMatch(
      /<circle[^>]*>\s*<title>\s*2026-11-30 10:00:00Z budget_committed: spent 0\.20, left 0\.80\s*<\/title>/,
    );
    expect(words).toMatch(/build echo done/);
    expect(words).toMatch(/deploy echo waiting for confirmation/);
    expect(words).toMatch(/notify echo not reached/);
    expect(text).toContain(`action="/approvals/${approvalId}/approve"`);
    expect(text).toContain('href="/plans/release/audit"');
    expect(text).not.toMatch(/http-equiv="refresh"/);
  });

  it('shows the phase and the outcome of a plan once', async () => {
    const f = fixture();
    await pausedPlan(f);
    const words = textOf((await dashboard(f).get('/plans/release')).text);
    expect(words.match(/awaiting_confirmation/g)?.length).toBe(1);
    expect(words).toMatch(/Phase awaiting_confirmation 1 of 3 decisions done Source/);
  });

  it('ends the budget chart of a plan paused for a person where it paused, not at the time the page is seen', async () => {
    const f = fixture();
    await pausedPlan(f);
    f.clock.advance(3 * 3_600_000);
    const chart = /<svg class="chart"[\s\S]*<\/svg>/.exec(
      (await dashboard(f).get('/plans/release')).text,
    )?.[0];
    expect(textOf(chart ?? '')).toMatch(/2026-11-30 10:00:00Z 2026-11-30 10:00:01Z$/);
  });

  it('times a decision approved after a pause by when it ran, not by when it paused', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    f.clock.advance(5 * 60_000);
    await f.runner.approve(approvalId, { by: 'alice' }, { resume: true });
    const { get } = dashboard(f);
    const words = textOf((await get('/plans/release')).text);
    expect(words).toMatch(/build echo done 2026-11-30 10:00:00Z/);
    expect(words).toMatch(/deploy echo done 2026-11-30 10:05:00Z/);
  });

  it('marks a failed decision on the timeline and names the guard and the reason', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    await f.runner.deny(approvalId, { by: 'bob', reason: 'freeze week' }, { resume: true });
    const { get } = dashboard(f);
    const words = textOf((await get('/plans/release')).text);
    expect(words).toMatch(/Phase failed 1 of 3 decisions done/);
    expect(words).toMatch(/Guard confirmation/);
    expect(words).toMatch(/freeze week/);
    expect(words).toMatch(/deploy echo failed/);
  });

  const FAILING_PLAN = `
version: 1
decisions:
  - { id: build, tool: echo, input: { message: "<b>built</b>" } }
  - { id: tests, tool: shell, input: { argv: [node, -v] } }
`;

  it('shows on the row of a decision done what it produced, escaped', async () => {
    const f = fixture();
    await startPlan(f, 'failing', FAILING_PLAN);
    const { text } = await dashboard(f).get('/plans/failing');
    expect(text).toContain('&quot;&lt;b&gt;built&lt;/b&gt;&quot;');
    expect(text).not.toContain('<b>built');
  });

  it('shows on the row of the decision that failed its tool’s last error', async () => {
    const f = fixture();
    await startPlan(f, 'failing', FAILING_PLAN);
    const words = textOf((await dashboard(f).get('/plans/failing')).text);
    expect(words).toMatch(/tests shell failed[\s\S]*cwd "\/work\/plans" does not exist/);
  });

  /** A step that prints four lines, then one whose command fails with four lines of stderr. */
  const NOISY_PLAN = `
version: 1
decisions:
  - id: report
    tool: shell
    input: { cwd: /tmp, argv: [node, -e, "for (const w of ['one', 'two', 'three', 'four']) console.log(w)"] }
  - id: tests
    tool: shell
    input:
      cwd: /tmp
      argv: [node, -e, "for (const w of ['<b>e1</b>', 'e2', 'e3', 'e4']) console.error(w); process.exit(3)"]
`;

  /** The visible output text under decision `id` on the timeline, unescaped. */
  const detailOf = (page: string, id: string) =>
    textOf(
      new RegExp(`<span class="id">${id}</span>[\\s\\S]*?<span class="detail">([^<]*)</span>`).exec(
        page,
      )?.[1] ?? '',
    );

  it('shows on the row of a decision done the last three lines it printed, not only the last', async () => {
    const f = fixture();
    await startPlan(f, 'noisy', NOISY_PLAN);
    const { text } = await dashboard(f).get('/plans/noisy');
    expect(detailOf(text, 'report')).toBe('two three four');
  });

  it('shows on the row of the decision that failed the last three lines of its tool’s error', async () => {
    const f = fixture();
    await startPlan(f, 'noisy', NOISY_PLAN);
    const { text } = await dashboard(f).get('/plans/noisy');
    expect(detailOf(text, 'tests')).toBe('e2 e3 e4');
  });

  it('shows the error that ended a run whole, escaped, in the outcome', async () => {
    const f = fixture();
    await startPlan(f, 'noisy', NOISY_PLAN);
    const { text } = await dashboard(f).get('/plans/noisy');
    const error = /<dt>Error<\/dt>\s*<dd><pre class="error">([^<]*)<\/pre>/.exec(text)?.[1] ?? '';
    expect(error).toBe('command &quot;node&quot; exited with code 3: &lt;b&gt;e1&lt;/b&gt;\ne2\ne3\ne4');
  });

  it('shows the code of the error that ended a run beside the reason', async () => {
    const f = fixture();
    await pausedPlan(f);
    await resave(f, 'release', {
      phase: 'failed',
      body: (b) => ({
        ...b,
        outcome: {
          ...(b['outcome'] as JsonObject),
          status: 'failed',
          reason: 'the database is unreachable',
          code: 'STORE_UNAVAILABLE',
        },
      }),
    });
    const words = textOf((await dashboard(f).get('/plans/release')).text);
    expect(words).toMatch(/Reason the database is unreachable STORE_UNAVAILABLE/);
  });

  it("shows a running plan's decisions from the executor's saved progress", async () => {
    const f = fixture();
    await pausedPlan(f);
    await resave(f, 'release', { phase: 'execute', body: (b) => ({ ...b, outcome: null }) });
    const { get } = dashboard(f);
    const words = textOf((await get('/plans/release')).text);
    expect(words).toMatch(/build echo done/);
    expect(words).toMatch(/deploy echo running/);
    expect(words).toMatch(/notify echo not reached/);
  });

  it("shows unknown progress when the executor's saved progress cannot be read", async () => {
    const f = fixture();
    await pausedPlan(f);
    await resave(f, 'release', {
      phase: 'execute',
      body: (b) => ({
        ...b,
        outcome: null,
        metadata: { ...(b['metadata'] as JsonObject), [EXECUTION_KEY]: { version: 2 } },
      }),
    });
    const { get } = dashboard(f);
    const { status, text } = await get('/plans/release');
    expect(status).toBe(200);
    expect(textOf(text).match(/echo unknown progress/g)?.length).toBe(3);
  });

  it('refreshes the plan page every 2 s while the plan executes', async () => {
    const f = fixture();
    await pausedPlan(f);
    const doc = await f.store.getPlanDocument('release');
    if (doc === null) throw new Error('the plan has no document');
    await f.store.savePlanDocument({
      planId: doc.planId,
      body: doc.body,
      updatedAt: doc.updatedAt,
      phase: 'execute',
    });
    const { get } = dashboard(f);
    const { text } = await get('/plans/release');
    expect(text).toMatch(/<meta http-equiv="refresh" content="2"\s*\/?>/);
  });

  it('answers 404 for an unknown plan', async () => {
    const { get } = dashboard(fixture());
    expect((await get('/plans/nope')).status).toBe(404);
    expect((await get('/plans/nope/audit')).status).toBe(404);
  });

  it('shows a plan configured through the library, without a run record', async () => {
    const f = fixture();
    await f.runner.service.configureGuardrails('library-plan', { maxSteps: 3 });
    await f.runner.service.takeStep('library-plan');
    const { get } = dashboard(f);
    expect(textOf((await get('/')).text)).toMatch(/library-plan — 1 \/ 3/);
    const plan = await get('/plans/library-plan');
    expect(plan.status).toBe(200);
    expect(textOf(plan.text)).toMatch(/not started by the leash runner/);
    expect(textOf((await get('/plans/library-plan/audit')).text)).toMatch(/step_allowed/);
  });

  it('names the problem of a plan whose document the runner cannot read, and still lists the others', async () => {
    const f = fixture();
    await pausedPlan(f);
    await f.store.savePlanDocument({
      planId: 'broken',
      phase: 'execute',
      body: { format: 'leash.run', version: 1, source: 'x.yaml', file: { version: 1 } },
      updatedAt: '2026-11-30T10:00:00.000Z',
    });
    const { get } = dashboard(f);
    const list = textOf((await get('/')).text);
    expect(list).toMatch(/broken .*decisions/);
    expect(list).toMatch(/release/);
    const plan = await get('/plans/broken');
    expect(plan.status).toBe(500);
    expect(textOf(plan.text)).toMatch(/Cannot show this plan/);
  });

  it('lists a plan whose document another program saved, with its phase', async () => {
    const f = fixture();
    await f.store.savePlanDocument({
      planId: 'foreign',
      phase: 'running-elsewhere',
      body: { format: 'someone.else' },
      updatedAt: '2026-11-30T10:00:00.000Z',
    });
    const { get } = dashboard(f);
    expect(textOf((await get('/')).text)).toMatch(/foreign .*running-elsewhere/);
  });

  it('answers 404 for a plan id no plan can have', async () => {
    const { get } = dashboard(fixture());
    expect((await get(`/plans/${'x'.repeat(300)}`)).status).toBe(404);
    expect((await get('/plans/%00/audit')).status).toBe(404);
  });

  it('filters the audit log by guard and by result', async () => {
    const f = fixture();
    await pausedPlan(f);
    const { get } = dashboard(f);
    const events = (text: string) => [
      ...text.matchAll(/<td><code>([a-z_]+)<\/code><\/td>\s*<td><code>([a-z_]+)<\/code>/g),
    ];
    const all = events((await get('/plans/release/audit')).text);
    const guards = new Set(all.map((m) => m[2]));
    expect(guards.size).toBeGreaterThan(2);
    const budget = events((await get('/plans/release/audit?guard=tool_budget')).text);
    expect(budget.length).toBeGreaterThan(0);
    expect(budget.every((m) => m[2] === 'tool_budget')).toBe(true);
    const allowed = (await get('/plans/release/audit?result=allowed')).text;
    expect(events(allowed).length).toBe(all.length - 1);
    expect(allowed).toMatch(/<option value="allowed"\s+selected>/);
  });

  it('lists the check that paused a plan under the result "waiting", as its badge says', async () => {
    const f = fixture();
    await pausedPlan(f);
    const { text } = await dashboard(f).get('/plans/release/audit?result=waiting');
    expect(auditEvents(text)).toEqual(['confirmation_required']);
    expect(text).toMatch(/<option value="waiting"\s+selected>/);
  });

  it('leaves the check that paused a plan out of the result "denied"', async () => {
    const f = fixture();
    await pausedPlan(f);
    const { text } = await dashboard(f).get('/plans/release/audit?result=denied');
    expect(auditEvents(text)).toEqual([]);
  });

  it('shows the confirmation that paused a plan as waiting (amber) on the audit page, not as denied', async () => {
    const f = fixture();
    await pausedPlan(f);
    const { get } = dashboard(f);
    const { text } = await get('/plans/release/audit');
    const row = /<tr>(?:(?!<\/tr>)[\s\S])*confirmation_required[\s\S]*?<\/tr>/.exec(text)?.[0] ?? '';
    expect(row).toMatch(/<span class="badge b-waiting">waiting<\/span>/);
    expect(row).not.toMatch(/b-denied|>denied</);
  });

  it('numbers a step check’s step from 1 against its limit on the audit page, as leash audit does', async () => {
    const f = fixture();
    await pausedPlan(f);
    const { text } = await dashboard(f).get('/plans/release/audit');
    const row = /<tr>(?:(?!<\/tr>)[\s\S])*step_allowed[\s\S]*?<\/tr>/.exec(text)?.[0] ?? '';
    expect(textOf(row)).toMatch(/step_allowed step_limit allowed step 1\/10$/);
  });

  it('shows "chain verified" on the audit page', async () => {
    const f = fixture();
    await pausedPlan(f);
    const { get } = dashboard(f);
    expect(textOf((await get('/plans/release/audit')).text)).toMatch(
      /✓ chain verified \d+ entries · head [0-9a-f]{16}…/,
    );
  });

  it('shows a finding on the audit page when an entry was tampered with', async () => {
    const { store, path, cleanup } = await sqliteStore();
    try {
      const f = fixture(store);
      await pausedPlan(f);
      const db = new Database(path);
      try {
        const changed = db
          .prepare('UPDATE leash_audit_entries SET details = ? WHERE plan_id = ? AND seq = ?')
          .run(JSON.stringify({ step: 0, limit: 99 }), 'release', 2).changes;
        expect(changed).toBe(1);
      } finally {
        db.close();
      }
      const { get } = dashboard(f);
      const words = textOf((await get('/plans/release/audit')).text);
      expect(words).toMatch(/✗ chain verification failed/);
      expect(words).toMatch(/HASH_MISMATCH at seq 2/);
    } finally {
      await cleanup();
    }
  });

  it('escapes a plan id holding markup, in the list, the plan page and the audit page', async () => {
    const f = fixture();
    const id = '<script>alert(1)</script>';
    await pausedPlan(f, id);
    const { get } = dashboard(f);
    for (const path of [
      '/',
      `/plans/${encodeURIComponent(id)}`,
      `/plans/${encodeURIComponent(id)}/audit`,
      '/approvals',
    ]) {
      const { status, text } = await get(path);
      expect(status).toBe(200);
      expect(text).not.toContain('<script>');
      expect(text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    }
  });

  it("shows the tool and the preview of an agent's request in the inbox and on its plan page", async () => {
    const f = fixture();
    await agentAsked(f, { to: 'prod' });
    const { get } = dashboard(f);
    for (const path of ['/approvals', '/plans/agent']) {
      expect(textOf((await get(path)).text)).toContain('deploy tool deploy {"to":"prod"}');
    }
  });

  it("shows the preview of a plan decision's input in the inbox and on its plan page, as for an agent's", async () => {
    const f = fixture();
    await pausedPlan(f);
    const { get } = dashboard(f);
    for (const path of ['/approvals', '/plans/release']) {
      expect((await get(path)).text).toMatch(
        /<code class="preview">\{&quot;message&quot;:&quot;deployed&quot;\}<\/code>/,
      );
    }
  });

  it('labels each field of an approval, for the card a row becomes on a phone', async () => {
    const f = fixture();
    const first = await pausedPlan(f, 'one');
    await pausedPlan(f, 'two');
    const { post, csrf, settle, get } = dashboard(f);
    await post(`/approvals/${first}/approve`, { by: 'bob', csrf: await csrf() });
    await settle();
    const rows = (await get('/approvals')).text.match(/<tr>[\s\S]*?<\/tr>/g)?.slice(1) ?? [];
    const labels = rows.map((row) => [...row.matchAll(/<td[^>]*data-label="([^"]+)"/g)].map((m) => m[1]));
    expect(labels).toEqual([
      ['Plan', 'Decision', 'Operation', 'Requested', 'Status', 'Decide'],
      ['Plan', 'Decision', 'Operation', 'Requested', 'Status', 'Decided by'],
    ]);
  });

  it("escapes markup and hidden characters in the preview of an agent's request", async () => {
    const f = fixture();
    await agentAsked(f, { to: '</code><script>alert(1)</script>\u202e' });
    const { text } = await dashboard(f).get('/approvals');
    expect([text.includes('<script>'), text.includes('\u202e')]).toEqual([false, false]);
    expect(text).toContain('&lt;/code&gt;&lt;script&gt;alert(1)&lt;/script&gt;\\u202e');
  });

  it('escapes a reason holding markup, in the inbox and the audit page', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { post, csrf, settle, get } = dashboard(f);
    const reason = '"><script>alert(1)</script>';
    await post(`/approvals/${approvalId}/deny`, { by: '<b>bob</b>', reason, csrf: await csrf() });
    await settle();
    for (const path of ['/approvals', '/plans/release', '/plans/release/audit']) {
      const { text } = await get(path);
      expect(text).not.toContain('<script>');
      expect(text).not.toContain('<b>bob</b>');
      expect(text).toMatch(/&lt;script&gt;/);
    }
  });

  it('accepts a form whose Origin is its own', async () => {
    const f = fixture();
    const approvalId = await pausedPlan(f);
    const { post, csrf, settle } = dashboard(f);
    const res = await post(
      `/approvals/${approvalId}/approve`,
      { by: 'alice', csrf: await csrf() },
      { origin: ORIGIN },
    );
    expect(res.status).toBe(303);
    await settle();
  });
});

/** The event types of the rows of an audit page. */
function auditEvents(page: string): string[] {
  return [...page.matchAll(/<td><code>([a-z_]+)<\/code><\/td>\s*<td><code>[a-z_]+<\/code>/g)].map(
    (m) => m[1] ?? '',
  );
}

/** Saves plan `planId`'s document again, with another phase or body: what another writer might leave. */
/** Plan `agent`, configured through the service, whose agent's call of `deploy` waits for a person. */
async function agentAsked(f: Fixture, input: unknown = { to: 'prod' }): Promise<string> {
  const service = f.runner.service;
  await service.configureGuardrails('agent', { requiredConfirmations: ['deploy'] });
  const guard = new RunGuard({ service, planId: 'agent' });
  const out = await guard.toolCall({ toolCallId: 'call-1', toolName: 'deploy', input, run: () => 'done' });
  if (out.allowed || out.approval === undefined) throw new Error('the call should wait for a person');
  return out.approval.id;
}

async function resave(
  f: Fixture,
  planId: string,
  change: { phase?: string; body?: (body: JsonObject) => JsonObject },
): Promise<void> {
  const doc = await f.store.getPlanDocument(planId);
  if (doc === null) throw new Error(`plan "${planId}" has no document`);
  await f.store.savePlanDocument({
    planId,
    phase: change.phase ?? doc.phase,
    body: change.body?.(doc.body) ?? doc.body,
    updatedAt: doc.updatedAt,
  });
}
