import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { parsePlanFile } from '../../src/runner/planFile.js';
import { PlanRunner } from '../../src/runner/runner.js';
import { createDashboardApp, type DashboardAppOptions } from '../../src/dashboard/app.js';
import type { GuardrailStore } from '../../src/store/GuardrailStore.js';
import { MemoryStore } from '../../src/store/memory/MemoryStore.js';
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';
import { CHROMIUM } from '../support/chromium.js';
import { onCI } from '../support/ci.js';

export const T0 = Date.parse('2026-11-30T10:00:00.000Z');
/** At least 32 characters, as `startDashboard` requires of a given token. */
export const TOKEN = 'test-token-0123456789abcdef-0123456789';
/** The app's secret in tests, so that the session cookie's value is known beforehand. */
export const SECRET = Buffer.alloc(32, 7);
/** The session value: HMAC-SHA256 of `session:` and the token, under the secret; computed independently. */
export const SESSION = createHmac('sha256', SECRET).update(`session:${TOKEN}`, 'utf8').digest('base64url');
export const COOKIE = `leash_token=${SESSION}`;
/** The origin `app.request` gives relative paths. */
export const ORIGIN = 'http://localhost';

/** Three echo decisions; the second is a `deploy` a person must confirm. */
export const RELEASE_PLAN = `
version: 1
description: build, deploy, notify
guardrails:
  max_steps: 10
  tool_budget: 1.0
  required_confirmations: [deploy]
  max_wall_clock_seconds: 3600
decisions:
  - id: build
    tool: echo
    input: { message: built }
    cost: 0.2
  - id: deploy
    tool: echo
    operation: deploy
    input: { message: deployed }
    cost: 0.3
  - id: notify
    tool: echo
    input: { message: notified }
    cost: 0.1
`;

/** A plan without limits that completes at once. */
export const FREE_PLAN = `
version: 1
decisions:
  - id: hello
    tool: echo
    input: { message: hello }
`;

export interface Fixture {
  readonly clock: ManualClock;
  readonly store: GuardrailStore;
  readonly runner: PlanRunner;
}

export function fixture(store: GuardrailStore = new MemoryStore()): Fixture {
  const clock = new ManualClock(T0);
  return { clock, store, runner: new PlanRunner({ store, clock }) };
}

/** Starts `yaml` as plan `id`; returns the approval it waits for, if it does. */
export async function startPlan(f: Fixture, id: string, yaml = RELEASE_PLAN): Promise<string | undefined> {
  const run = await f.runner.start({
    file: parsePlanFile(yaml, { source: `${id}.plan.yaml` }),
    source: `/work/plans/${id}.plan.yaml`,
    baseDir: '/work/plans',
    name: id,
    id,
  });
  return run.outcome.approvalId;
}

/** Starts the release plan, which pauses at `deploy`; returns the approval id. */
export async function pausedPlan(f: Fixture, id = 'release'): Promise<string> {
  const approvalId = await startPlan(f, id);
  expect(approvalId).toBeTypeOf('string');
  return approvalId as string;
}

/**
 * The dashboard app on `f`, with the background runs it starts collected for the test to await. The
 * helpers send their requests to `base` (default {@link ORIGIN}).
 */
export function dashboard(
  f: Fixture,
  extra: Partial<Pick<DashboardAppOptions, 'allowedHosts' | 'cookieName' | 'signIn' | 'publicUrl'>> & {
    base?: string;
  } = {},
) {
  const { base = ORIGIN, ...options } = extra;
  const background: Promise<unknown>[] = [];
  const logged: string[] = [];
  const app = createDashboardApp({
    runner: f.runner,
    token: TOKEN,
    secret: SECRET,
    clock: f.clock,
    onBackground: (run) => background.push(run),
    log: (line) => logged.push(line),
    ...options,
  });
  /** GET with the cookie; resolves with the status and the body. */
  const get = async (path: string) => {
    const res = await app.request(`${base}${path}`, { headers: { cookie: COOKIE } });
    return { status: res.status, text: await res.text(), res };
  };
  /** POSTs a form with the cookie (and the same-origin Origin a browser sends). */
  const post = (path: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
    app.request(`${base}${path}`, {
      method: 'POST',
      headers: {
        cookie: COOKIE,
        origin: base,
        'content-type': 'application/x-www-form-urlencoded',
        ...headers,
      },
      body: new URLSearchParams(form).toString(),
    });
  /** The CSRF token the forms of the inbox carry. */
  const csrf = async () => {
    const { text } = await get('/approvals');
    const m = /name="csrf" value="([^"]+)"/.exec(text);
    if (!m?.[1]) throw new Error('the inbox has no form with a CSRF token');
    return m[1];
  };
  const settle = () => Promise.all(background.splice(0));
  return { app, get, post, csrf, settle, logged };
}

/** A SQLite store on a fresh temp file; `cleanup` closes it and removes the folder. */
export async function sqliteStore(): Promise<{
  store: SqliteStore;
  path: string;
  cleanup: () => Promise<void>;
}> {
  const dir = mkdtempSync(join(tmpdir(), 'leash-dashboard-'));
  const path = join(dir, 'leash.db');
  const store = new SqliteStore({ path });
  await store.migrate();
  return {
    store,
    path,
    cleanup: async () => {
      await store.close().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Where the browser tests find Chromium. */
export { CHROMIUM } from '../support/chromium.js';

/**
 * Why the browser tests are skipped, or null when they run. They always run on CI: there a missing browser
 * is a broken machine, and the tests fail saying so rather than pass unseen. `CI` counts when set to
 * anything but empty, `0` or `false` (CI services set `true` or `1`).
 */
export function browserSkipReason(
  chromiumFound: boolean,
  env: Readonly<Record<string, string | undefined>>,
): string | null {
  if (chromiumFound || onCI(env)) return null;
  return `skipped: Chromium not found at ${CHROMIUM} (apt-get install -y chromium)`;
}

/** The page's text without tags, whitespace collapsed: what a person reads. */
export function textOf(page: string): string {
  return page
    .replace(/<style>[\s\S]*?<\/style>/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ')
    .trim();
}
