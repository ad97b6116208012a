import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parsePlanFile } from '../../src/runner/planFile.js';
import { RunGuard } from '../../src/agent/RunGuard.js';
import { PlanRunner } from '../../src/runner/runner.js';
import { startDashboard, type RunningDashboard } from '../../src/dashboard/server.js';
import type { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';
import { CHROMIUM_ARGS } from '../support/chromium.js';
import { browserSkipReason, CHROMIUM, RELEASE_PLAN, sqliteStore } from './support.js';

/** A plan whose command fails with a line of stderr far wider than a phone. */
const LONG_ERROR_PLAN = `
version: 1
decisions:
  - id: tests
    tool: shell
    input: { cwd: /tmp, argv: [node, -e, "console.error('x'.repeat(300)); process.exit(1)"] }
`;

const skipped = browserSkipReason(existsSync(CHROMIUM), process.env);
// Named in the test summary, where a skip is seen, rather than printed among the logs.
if (skipped !== null) it.skip(`the dashboard in a real browser: ${skipped}`, () => {});

describe.skipIf(skipped !== null)('the dashboard in a real browser', { timeout: 60_000 }, () => {
  let store: SqliteStore;
  let cleanup: () => Promise<void>;
  let server: RunningDashboard;
  let browser: Browser;
  let runner: PlanRunner;
  let approvalId: string;
  let agentApprovalId: string;
  /** The session cookie a first visit with the token gets, made once for the tests that need one. */
  let session: { name: string; value: string };
  /** A fresh browser context for each test: no cookie unless the test signs in. */
  let context: BrowserContext;
  let page: Page;
  const logged: string[] = [];

  beforeAll(async () => {
    // On CI the tests run without a browser too: they fail here, saying what is missing.
    if (!existsSync(CHROMIUM))
      throw new Error(`${CHROMIUM} is missing: the dashboard's browser tests cannot run`);
    ({ store, cleanup } = await sqliteStore());
    runner = new PlanRunner({ store });
    /** Runs the plan file `text` as the plan `name`, as `leash run` would from /work/plans. */
    const start = (name: string, text: string) =>
      runner.start({
        file: parsePlanFile(text, { source: `${name}.plan.yaml` }),
        source: `/work/plans/${name}.plan.yaml`,
        baseDir: '/work/plans',
        name,
        id: name,
      });
    const run = await start('release', RELEASE_PLAN);
    expect(run.outcome.status).toBe('awaiting_confirmation');
    approvalId = run.outcome.approvalId as string;
    const failed = await start('broken', LONG_ERROR_PLAN);
    expect(failed.outcome.error).toMatch(/x{300}/);
    // An agent's call waiting for a person, its input a line far wider than a phone.
    await runner.service.configureGuardrails('agent', { requiredConfirmations: ['deploy'] });
    const guard = new RunGuard({ service: runner.service, planId: 'agent' });
    const input = { to: 'prod\u202e', note: 'y'.repeat(300) };
    const asked = await guard.toolCall({
      toolCallId: 'call-1',
      toolName: 'deploy',
      input,
      run: () => 'done',
    });
    agentApprovalId = asked.allowed ? '' : (asked.approval?.id ?? '');
    server = await startDashboard({ runner, host: '127.0.0.1', port: 0, log: (line) => logged.push(line) });
    const res = await fetch(`${server.url}/?token=${server.token}`, { redirect: 'manual' });
    const [name, value] = (res.headers.get('set-cookie') ?? '').split(';')[0]?.split('=') ?? [];
    if (!name || !value) throw new Error('the dashboard set no session cookie');
    session = { name, value };
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [...CHROMIUM_ARGS],
    });
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

  /** Gives this test's browser the session cookie, as a visit with the token would. */
  async function signIn(): Promise<void> {
    await context.addCookies([{ ...session, url: server.url, httpOnly: true, sameSite: 'Strict' }]);
  }

  /** Audit rows on the plan's audit page. */
  async function auditRows(): Promise<number> {
    await page.goto(`${server.url}/plans/release/audit`);
    return page.locator('table tbody tr').count();
  }

  it('listens on the loopback address with a free port', () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('answers 401 to a request without the token', async () => {
    const res = await fetch(`${server.url}/`);
    expect(res.status).toBe(401);
  });

  it('refuses a POST without the CSRF token, even with the cookie', async () => {
    const res = await fetch(`${server.url}/approvals/${approvalId}/approve`, {
      method: 'POST',
      headers: {
        cookie: `${session.name}=${session.value}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'by=mallory',
      redirect: 'manual',
    });
    expect(res.status).toBe(403);
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
  });

  it('opens with the token, which moves to a cookie and out of the address', async () => {
    const res = await page.goto(`${server.url}/?token=${server.token}`);
    expect(res?.status()).toBe(200);
    expect(page.url()).toBe(`${server.url}/`);
    expect(await page.locator('h1').textContent()).toBe('Plans');
    expect(await page.locator('a[href="/plans/release"]').count()).toBe(1);
    const cookies = await context.cookies();
    expect(cookies.find((c) => c.name === `leash_token_${new URL(server.url).port}`)).toMatchObject({
      httpOnly: true,
      sameSite: 'Strict',
    });
  });

  /** The inbox row holding the form of the pending deploy. */
  function pendingRow() {
    return page.locator('tr', { has: page.locator(`form[action="/approvals/${approvalId}/approve"]`) });
  }

  it('stops a denial without a reason in the form, and the request stays pending', async () => {
    await signIn();
    await page.goto(`${server.url}/approvals`);
    const row = pendingRow();
    await row.getByLabel('your name').fill('bob');
    const reason = row.getByLabel('reason');
    // The browser fires `invalid` when it refuses to send a form for a field left empty; the listener is
    // in place before the click, and keeps the browser's message on the field.
    await reason.evaluate((input) => {
      input.addEventListener(
        'invalid',
        () => {
          const field = input as unknown as {
            validationMessage: string;
            setAttribute(n: string, v: string): void;
          };
          field.setAttribute('data-refused', field.validationMessage);
        },
        { once: true },
      );
    });
    await row.getByRole('button', { name: 'Deny' }).click();
    await expect.poll(() => reason.getAttribute('data-refused')).toMatch(/fill out this field/i);
    expect(page.url()).toBe(`${server.url}/approvals`);
    expect((await runner.service.getApproval(approvalId))?.status).toBe('pending');
  });

  /** A phone's width: the dashboard must fit it without scrolling sideways. */
  const NARROW = { width: 390, height: 844 };

  it('fits every page in a 390 px wide window, nothing overflowing sideways', async () => {
    await signIn();
    await page.setViewportSize(NARROW);
    const widths: Record<string, unknown> = {};
    for (const path of ['/', '/plans/release', '/plans/broken', '/approvals', '/plans/release/audit']) {
      await page.goto(`${server.url}${path}`);
      widths[path] = await page.evaluate('document.documentElement.scrollWidth');
    }
    expect(widths).toEqual({
      '/': NARROW.width,
      '/plans/release': NARROW.width,
      '/plans/broken': NARROW.width,
      '/approvals': NARROW.width,
      '/plans/release/audit': NARROW.width,
    });
  });

  /** Checks that `word` is drawn at a readable size and within a 390 px window. */
  async function expectReadableAtNarrowWidth(word: Locator): Promise<void> {
    const box = await word.boundingBox();
    // 11 px text is about 13 px high; a drawing scaled down to the window's width made it 4 px.
    expect(box?.height).toBeGreaterThanOrEqual(11);
    expect(box?.x).toBeGreaterThanOrEqual(0);
    expect((box?.x ?? Infinity) + (box?.width ?? 0)).toBeLessThanOrEqual(NARROW.width);
  }

  it("shows the tool and the preview of an agent's request in the inbox, in view at 390 px", async () => {
    await signIn();
    await page.setViewportSize(NARROW);
    await page.goto(`${server.url}/approvals`);
    const row = page.locator('tr', {
      has: page.locator(`form[action="/approvals/${agentApprovalId}/approve"]`),
    });
    const preview = row.locator('code.preview');
    expect(await row.textContent()).toContain('tool deploy');
    expect(await preview.textContent()).toMatch(/^\{"note":"y+…$/);
    const box = await preview.boundingBox();
    expect((box?.x ?? Infinity) + (box?.width ?? 0)).toBeLessThanOrEqual(NARROW.width);
  });

  it('shows each field of every approval at 390 px on a line of its own, after its label', async () => {
    await signIn();
    await page.setViewportSize(NARROW);
    await page.goto(`${server.url}/approvals`);
    const rows = await page.locator('table tbody tr').evaluateAll((trs) =>
      trs.map((tr) =>
        [...tr.querySelectorAll('td')].map((td) => ({
          label: td.ownerDocument.defaultView?.getComputedStyle(td, '::before').content,
          top: td.getBoundingClientRect().top,
          bottom: td.getBoundingClientRect().bottom,
        })),
      ),
    );
    expect(rows.length).toBeGreaterThan(1);
    for (const fields of rows) {
      expect(fields.map((f) => f.label)).toEqual(
        ['Plan', 'Decision', 'Operation', 'Requested', 'Status', 'Decide'].map((l) => `"${l}"`),
      );
      // Each below the one before: none beside another on one line.
      expect(fields.slice(1).filter((f, i) => f.top < (fields[i]?.bottom ?? Infinity))).toEqual([]);
    }
  });

  it('keeps the decision timeline readable and in view at 390 px', async () => {
    await signIn();
    await page.setViewportSize(NARROW);
    await page.goto(`${server.url}/plans/release`);
    const waiting = page.locator('[aria-label="decision timeline"] li', {
      hasText: 'waiting for confirmation',
    });
    for (const part of ['.id', '.tool', '.state', '.at'])
      await expectReadableAtNarrowWidth(waiting.locator(part));
  });

  it('keeps the budget chart readable and in view at 390 px', async () => {
    await signIn();
    await page.setViewportSize(NARROW);
    await page.goto(`${server.url}/plans/release`);
    const chart = page.locator('svg[aria-label="budget left of 1.00"]');
    await expectReadableAtNarrowWidth(chart.locator('text', { hasText: 'budget left of 1.00' }));
    await expectReadableAtNarrowWidth(chart.locator('text', { hasText: /^0\.00$/ }));
    await expectReadableAtNarrowWidth(chart.locator('text', { hasText: /^\d{4}-\d\d-\d\d / }).last());
  });

  it('approves the pending deploy from the inbox, and the plan completes', async () => {
    await signIn();
    const before = await auditRows();
    expect(before).toBeGreaterThan(0);

    await page.goto(`${server.url}/`);
    await page.getByRole('link', { name: /Approvals/ }).click();
    await page.waitForURL(`${server.url}/approvals`);
    const row = pendingRow();
    expect(await row.locator('td').first().textContent()).toBe('release');
    expect(await row.textContent()).toContain('deploy');

    await row.getByLabel('your name').fill('alice');
    await row.getByLabel('reason').fill('change window open');
    await Promise.all([
      page.waitForURL(`${server.url}/plans/release`),
      row.getByRole('button', { name: 'Approve' }).click(),
    ]);

    await expect
      .poll(
        async () => {
          await page.reload();
          return page.locator('dl.kv dd .badge').first().textContent();
        },
        { timeout: 30_000, interval: 250 },
      )
      .toBe('completed');
    expect(
      await page.locator('ol[aria-label="decision timeline"] li', { hasText: 'not reached' }).count(),
    ).toBe(0);

    const after = await auditRows();
    expect(after).toBeGreaterThan(before);
    const approved = page.locator('tr', { hasText: 'confirmation_approved' });
    expect(await approved.count()).toBe(1);
    expect(await approved.locator('.kvp', { hasText: /^by / }).first().textContent()).toBe('by alice');
    expect(await page.locator('.card').first().textContent()).toContain('chain verified');
    expect(logged.filter((l) => !l.includes('resumed: completed'))).toEqual([]);
  });
});
