import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { startDashboard, type RunningDashboard } from '../../src/dashboard/server.js';
import { PlanRunner } from '../../src/runner/runner.js';
import type { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';
import { CHROMIUM_ARGS } from '../support/chromium.js';
import { connectOidc } from '../../src/dashboard/oidc.js';
import { CLIENT_ID, CLIENT_SECRET, freePort, startProvider } from './oidc-support.js';
import { person, requestUnder } from './signin-support.js';
import { browserSkipReason, CHROMIUM, sqliteStore } from './support.js';

const skipped = browserSkipReason(existsSync(CHROMIUM), process.env);
// Named in the test summary, where a skip is seen, rather than printed among the logs.
if (skipped !== null) it.skip(`signing in to the dashboard in a real browser: ${skipped}`, () => {});

describe.skipIf(skipped !== null)(
  'signing in to the dashboard in a real browser',
  { timeout: 60_000 },
  () => {
    let store: SqliteStore;
    let cleanup: () => Promise<void>;
    let runner: PlanRunner;
    let server: RunningDashboard;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    /** A deploy two people of release must approve; a payment finance decides. */
    let deploy: string;
    let payment: string;
    const tokens: Record<string, string> = {};
    const logged: string[] = [];

    beforeAll(async () => {
      if (!existsSync(CHROMIUM))
        throw new Error(`${CHROMIUM} is missing: the dashboard's browser tests cannot run`);
      ({ store, cleanup } = await sqliteStore());
      runner = new PlanRunner({ store });
      tokens['ann'] = await person({ runner }, { id: 'ann', name: 'Ann Lee', roles: ['release'] });
      tokens['bob'] = await person({ runner }, { id: 'bob', name: 'Bob Roe', roles: ['release'] });
      const f = { store, clock: systemClock };
      deploy = await requestUnder(f, { deploy: { approvers: ['role:release'], quorum: 2 } });
      payment = await requestUnder(
        f,
        { pay: { approvers: ['role:finance'] } },
        { planId: 'books', operation: 'pay' },
      );
      server = await startDashboard({ runner, host: '127.0.0.1', port: 0, log: (line) => logged.push(line) });
      browser = await chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS] });
    }, 60_000);

    beforeEach(async () => {
      context = await browser.newContext();
      page = await context.newPage();
    });

    afterEach(async () => {
      await context?.close();
    });

    afterAll(async () => {
      await browser?.close();
      await server?.close();
      await cleanup?.();
    }, 60_000);

    /** Opens the inbox, is sent to sign in, signs in with `who`'s personal token, and is back at the inbox. */
    async function signInAs(who: string): Promise<void> {
      await page.goto(`${server.url}/approvals`);
      expect(new URL(page.url()).pathname).toBe('/login');
      await page.getByLabel('Personal token').fill(tokens[who] ?? '');
      await Promise.all([
        page.waitForURL(`${server.url}/approvals`),
        page.getByRole('button', { name: 'Sign in' }).click(),
      ]);
    }

    /** The inbox row holding the form of `approvalId`. */
    function rowOf(approvalId: string) {
      return page.locator('tr', { has: page.locator(`form[action="/approvals/${approvalId}/approve"]`) });
    }

    it('sends a person to sign in, then keeps the session in an HttpOnly, SameSite=Strict cookie', async () => {
      await signInAs('ann');
      expect(await page.locator('header .who').textContent()).toMatch(/Signed in as\s+Ann Lee/);
      const port = new URL(server.url).port;
      expect((await context.cookies()).find((c) => c.name === `leash_token_${port}_session`)).toMatchObject({
        httpOnly: true,
        sameSite: 'Strict',
        path: '/',
        secure: false,
      });
    });

    it('shows a person only what they may approve', async () => {
      await signInAs('ann');
      expect(await rowOf(deploy).count()).toBe(1);
      expect(await page.locator(`form[action="/approvals/${payment}/approve"]`).count()).toBe(0);
      expect(await page.content()).not.toContain(payment);
    });

    it('approves with a quorum of two: the first approval counts, the second grants', async () => {
      await signInAs('ann');
      await rowOf(deploy).getByLabel('reason').fill('change window open');
      await Promise.all([
        page.waitForURL(`${server.url}/plans/agent`),
        rowOf(deploy).getByRole('button', { name: 'Approve' }).click(),
      ]);
      expect((await runner.service.getApproval(deploy))?.status).toBe('pending');
      await page.goto(`${server.url}/approvals`);
      expect(await rowOf(deploy).count()).toBe(0);

      await context.clearCookies();
      await signInAs('bob');
      expect(await rowOf(deploy).textContent()).toContain('1 of 2 approvals: Ann Lee');
      await Promise.all([
        page.waitForURL(`${server.url}/plans/agent`),
        rowOf(deploy).getByRole('button', { name: 'Approve' }).click(),
      ]);
      const approval = await runner.service.getApproval(deploy);
      expect([approval?.status, approval?.votes?.map((v) => v.by.principal)]).toEqual([
        'approved',
        ['ann', 'bob'],
      ]);
      const decided = page.locator('tr', { hasText: 'ship' }).first();
      expect(await decided.textContent()).toMatch(/Bob Roe\s+with a personal token/);
    });

    it('signs out: the inbox sends the person to sign in again', async () => {
      await signInAs('bob');
      await Promise.all([
        page.waitForURL(`${server.url}/login`),
        page.getByRole('button', { name: 'Sign out' }).click(),
      ]);
      await page.goto(`${server.url}/approvals`);
      expect(new URL(page.url()).pathname).toBe('/login');
      expect(logged).toEqual([]);
    });
  },
);

describe.skipIf(skipped !== null)(
  'signing in at a provider of another site, in a real browser',
  { timeout: 60_000 },
  () => {
    let store: SqliteStore;
    let cleanup: () => Promise<void>;
    let provider: Awaited<ReturnType<typeof startProvider>>;
    let server: RunningDashboard;
    let browser: Browser;

    beforeAll(async () => {
      if (!existsSync(CHROMIUM))
        throw new Error(`${CHROMIUM} is missing: the dashboard's browser tests cannot run`);
      ({ store, cleanup } = await sqliteStore());
      const runner = new PlanRunner({ store });
      await runner.service.addPrincipal({
        id: 'ann',
        name: 'Ann Lee',
        roles: ['release'],
        email: 'ann@example.com',
      });
      // The provider is at localhost, the dashboard at 127.0.0.1: two sites, as a browser counts them.
      const port = await freePort();
      const accounts = { 'ann-at-idp': { email: 'ann@example.com' } };
      provider = await startProvider(`http://127.0.0.1:${port}/login/callback`, accounts, 'localhost');
      const oidc = await connectOidc({
        issuer: provider.issuer,
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
      });
      server = await startDashboard({ runner, host: '127.0.0.1', port, log: () => {}, signIn: { oidc } });
      browser = await chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS] });
    }, 60_000);

    afterAll(async () => {
      await browser?.close();
      await server?.close();
      await provider?.close();
      await cleanup?.();
    }, 60_000);

    /** Signs Ann in at the provider from the inbox, in a new browser context; the page, back at the inbox. */
    async function signedInAtProvider(): Promise<Page> {
      const page = await (await browser.newContext()).newPage();
      await page.goto(`${server.url}/approvals`);
      await page.getByRole('link', { name: /^Sign in with localhost:/ }).click();
      await page.locator('input[name="login"]').fill('ann-at-idp');
      await page.locator('input[name="password"]').fill('any');
      await page.locator('button[type="submit"]').click();
      await page.locator('button[type="submit"]', { hasText: /continue/i }).click();
      await page.waitForURL(`${server.url}/approvals`);
      return page;
    }

    it('comes back from the provider signed in, the SameSite=Strict session cookie sent from then on', async () => {
      const page = await signedInAtProvider();
      expect(await page.locator('header .who').textContent()).toMatch(/Signed in as\s+Ann Lee/);
      await page.reload();
      expect(await page.locator('h1').textContent()).toBe('Approvals');
      await page.context().close();
    });

    it('opens a link from another site signed in, though the browser withholds the cookie from it', async () => {
      const page = await signedInAtProvider();
      await page.goto(`${provider.issuer}/.well-known/openid-configuration`);
      await Promise.all([
        page.waitForURL(`${server.url}/budgets`),
        page.evaluate(
          (to) => ((globalThis as unknown as { location: { href: string } }).location.href = to),
          `${server.url}/budgets`,
        ),
      ]);
      await page.waitForSelector('header .who');
      expect(await page.locator('h1').textContent()).toBe('Budgets');
      await page.context().close();
    });
  },
);
