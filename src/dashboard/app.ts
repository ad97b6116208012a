import { randomBytes } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { getCookie, setCookie } from 'hono/cookie';
import { verifyAuditLog } from '../audit/verify.js';
import { systemClock, type Clock } from '../clock.js';
import { DEFAULT_STYLE, type CommandStyle } from '../runner/commandLine.js';
import type { DecisionReport, PlanRunner, PlanStatus, RunReport } from '../runner/runner.js';
import { errorText, invalid, isGuardrailError } from '../errors.js';
import { isGuardName } from '../events.js';
import { validatePlanId } from '../ids.js';
import type { ApprovalStatus } from '../store/GuardrailStore.js';
import {
  APPROVAL_FILTERS,
  approvalsPage,
  auditPage,
  budgetsPage,
  capsOfPlan,
  isAuditResult,
  messagePage,
  planPage,
  plansPage,
  readCapStandings,
  type AuditFilter,
  type Flash,
  type PageContext,
} from './pages/index.js';
import {
  bearerToken,
  csrfToken,
  secretsEqual,
  securityHeaders,
  sessionValue,
  styleHash,
  TOKEN_COOKIE,
} from './security.js';
import { CSS, planPath, type Html } from './views.js';

export interface DashboardAppOptions {
  readonly runner: PlanRunner;
  /**
   * The access token every request must carry: in the query once (then the session cookie stands for it),
   * or as `Authorization: Bearer`.
   */
  readonly token: string;
  /**
   * Name of the session cookie; `leash_token` unless given. Cookies are shared by every port of a host, so
   * a server gives one naming its port (`startDashboard` does).
   */
  readonly cookieName?: string;
  readonly clock?: Clock;
  /** Key of the CSRF tokens and of the session cookie's value; random for each app unless given. */
  readonly secret?: Uint8Array;
  /**
   * Called with each background run (a plan resumed after a decision). The promise never rejects: its
   * errors go to `log`. Tests await it; the server waits for them on close.
   */
  readonly onBackground?: (run: Promise<unknown>) => void;
  /** Where errors of background runs and of requests are written. */
  readonly log?: (line: string) => void;
  /**
   * Host header values accepted (e.g. `127.0.0.1:4580`); anything else gets 421. Guards against DNS
   * rebinding on top of the token. A form's `Origin` must then be `http://` and one of them.
   * When not given (`startDashboard` always gives it): every host, and a form's `Origin` must be the
   * request's own.
   */
  readonly allowedHosts?: readonly string[];
  /** How the `leash` commands the pages show start, and their store; default `npx leash`, no `--db`. */
  readonly style?: CommandStyle;
}

/** Largest form accepted: a name and a reason fit many times over. */
const MAX_BODY_BYTES = 64 * 1024;

const STYLE_SOURCE = styleHash(CSS);
const HEADERS = securityHeaders(STYLE_SOURCE);

/**
 * The dashboard as a Hono app: server-rendered pages over a {@link PlanRunner}'s store, and the
 * approve/deny forms. `app.request(...)` runs it without a server.
 * @example
 * const app = createDashboardApp({ runner, token: 's3cret' });
 * const res = await app.request('/', { headers: { authorization: 'Bearer s3cret' } });
 */
export function createDashboardApp(o: DashboardAppOptions): Hono {
  const { runner, token } = o;
  if (typeof token !== 'string' || token.length === 0) invalid('token', 'a non-empty string', token);
  const cookieName = o.cookieName ?? TOKEN_COOKIE;
  // Checked here rather than when the first visitor signs in, where hono would throw.
  if (!/^[A-Za-z0-9_-]+$/.test(cookieName)) invalid('cookieName', 'letters, digits, "_" or "-"', cookieName);
  const clock = o.clock ?? systemClock;
  const log = o.log ?? (() => {});
  const secret = Buffer.from(o.secret ?? randomBytes(32));
  const csrf = csrfToken(secret, token);
  const session = sessionValue(secret, token);
  const allowedHosts =
    o.allowedHosts === undefined ? null : new Set(o.allowedHosts.map((h) => h.toLowerCase()));
  const allowedOrigins = allowedHosts === null ? null : new Set([...allowedHosts].map((h) => `http://${h}`));
  const app = new Hono();

  // Outermost, so 401s, 403s, redirects and error pages carry the headers too.
  app.use(async (c, next) => {
    await next();
    for (const [name, value] of Object.entries(HEADERS)) c.res.headers.set(name, value);
  });

  app.use(async (c, next) => {
    // Both names a request gives for the server must be allowed: the Host header, and the URL's host. The
    // two differ for an absolute-form target (`GET http://127.0.0.1:4580/`), whose URL the node adapter
    // takes from the target, not from Host; `app.request(...)` sends no Host header at all.
    const named = [c.req.header('host'), new URL(c.req.url).host];
    if (allowedHosts !== null && named.some((h) => h !== undefined && !allowedHosts.has(h.toLowerCase()))) {
      return c.text('421 Misdirected Request: this dashboard answers only on the address it printed.\n', 421);
    }
    await next();
  });

  // Authentication: the token from the query (once: then the session cookie), a bearer header, or the
  // session cookie, which holds a value derived from the token rather than the token.
  app.use(async (c, next) => {
    const url = new URL(c.req.url);
    const fromQuery = url.searchParams.get('token');
    const bearer = bearerToken(c.req.header('authorization'));
    const raw = fromQuery ?? bearer;
    const cookie = raw === undefined ? getCookie(c, cookieName) : undefined;
    const ok =
      raw !== undefined ? secretsEqual(raw, token) : cookie !== undefined && secretsEqual(cookie, session);
    if (!ok) return unauthorized(c);
    if (fromQuery !== null && (c.req.method === 'GET' || c.req.method === 'HEAD')) {
      // Out of the address bar and the history: the session cookie stands for it from now on.
      setCookie(c, cookieName, session, { httpOnly: true, sameSite: 'Strict', path: '/' });
      url.searchParams.delete('token');
      // One leading slash: `//host/` would be an address on another server.
      return c.redirect(`${url.pathname.replace(/^\/+/, '/')}${url.search}`, 303);
    }
    await next();
  });

  // State changes: POST only, from this origin, with the CSRF token of the forms.
  app.use(async (c, next) => {
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD' && c.req.method !== 'POST') {
      return c.text('405 Method Not Allowed\n', 405, { Allow: 'GET, HEAD, POST' });
    }
    await next();
  });
  app.use(
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: (c) => c.text('413 Payload Too Large\n', 413),
    }),
  );
  app.use(async (c, next) => {
    if (c.req.method !== 'POST') return next();
    // Against the allowed hosts, not the request's own Host: a DNS-rebinding page sends its own name in
    // both, and they would agree.
    const origin = c.req.header('origin')?.toLowerCase();
    const sameOrigin =
      origin === undefined ||
      (allowedOrigins === null ? origin === new URL(c.req.url).origin : allowedOrigins.has(origin));
    if (!sameOrigin) {
      return forbidden(c, 'the form was sent from another origin');
    }
    // Another port on this host is the same site, and SameSite cookies go there too: only same-origin.
    const site = c.req.header('sec-fetch-site');
    if (site !== undefined && site !== 'same-origin' && site !== 'none') {
      return forbidden(c, 'the form was sent from another origin');
    }
    const body = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
    const given = body['csrf'];
    if (typeof given !== 'string' || !secretsEqual(given, csrf)) {
      return forbidden(c, 'the form has no valid CSRF token: reload the page and try again');
    }
    await next();
  });

  const style = o.style ?? DEFAULT_STYLE;
  const context = async (): Promise<PageContext> => ({
    now: clock.now(),
    pending: (await runner.service.listApprovals({ status: 'pending' })).length,
    csrf,
    style,
  });

  app.get('/', async (c) => page(c, plansPage(await context(), await runner.list())));

  app.get('/plans/:id', async (c) => {
    const planId = c.req.param('id');
    const ctx = await context();
    if (!(await known(runner, planId))) return page(c, notFound(ctx, planId), 404);
    let status: PlanStatus | null;
    try {
      status = await runner.status(planId);
    } catch (error) {
      // A document another writer saved, or a corrupt one: say so rather than fail the page.
      if (!isGuardrailError(error)) throw error;
      const message = `Plan "${planId}" cannot be shown: ${error.message}. Its audit log may still be read.`;
      return page(c, messagePage(ctx, 'Cannot show this plan', message, planPath(planId, '/audit')), 500);
    }
    if (status === null) return page(c, notFound(ctx, planId), 404);
    const [auditLog, approvals, standings] = await Promise.all([
      runner.store.readAuditLog(planId),
      runner.service.listApprovals({ planId }),
      // An aside on this page: caps the store cannot read must not hide the plan (`/budgets` says why).
      readCapStandings(runner.store, ctx.now).catch((error: unknown) => {
        if (!isGuardrailError(error)) throw error;
        log(`dashboard: spend caps of plan "${planId}" not shown: ${errorText(error)}`);
        return [];
      }),
    ]);
    const caps = status.guardrails === null ? [] : capsOfPlan(standings, status.guardrails.labels);
    return page(c, planPage(ctx, status, auditLog, approvals, caps));
  });

  app.get('/budgets', async (c) => {
    const ctx = await context();
    return page(c, budgetsPage(ctx, await readCapStandings(runner.store, ctx.now)));
  });

  app.get('/plans/:id/audit', async (c) => {
    const planId = c.req.param('id');
    const ctx = await context();
    if (!(await known(runner, planId))) return page(c, notFound(ctx, planId), 404);
    const guard = c.req.query('guard');
    const result = c.req.query('result');
    const filter: AuditFilter = {
      guard: isGuardName(guard) ? guard : null,
      result: isAuditResult(result) ? result : null,
    };
    const [auditLog, report] = await Promise.all([
      runner.store.readAuditLog(planId),
      verifyAuditLog(runner.store, planId),
    ]);
    return page(c, auditPage(ctx, planId, auditLog, filter, report));
  });

  const inbox = async (c: Context, flash: Flash | null, statusCode: 200 | 400 | 404 | 409 | 503 = 200) => {
    const wanted = c.req.query('status');
    const status = APPROVAL_FILTERS.includes(wanted as ApprovalStatus) ? (wanted as ApprovalStatus) : null;
    const ctx = await context();
    const list = await runner.service.listApprovals(status === null ? {} : { status });
    if (status === null) {
      // Pending first, oldest first (the order they were asked in); then the decided, newest first.
      list.sort((a, b) =>
        a.status === 'pending' || b.status === 'pending'
          ? Number(b.status === 'pending') - Number(a.status === 'pending')
          : b.requestedAt.localeCompare(a.requestedAt),
      );
    }
    return page(c, approvalsPage(ctx, list, status, flash), statusCode);
  };

  app.get('/approvals', (c) => inbox(c, null));

  for (const action of ['approve', 'deny'] as const) {
    app.post(`/approvals/:id/${action}`, async (c) => {
      const approvalId = c.req.param('id');
      const body = await c.req.parseBody();
      const by = typeof body['by'] === 'string' ? body['by'] : '';
      const reasonText = typeof body['reason'] === 'string' ? body['reason'].trim() : '';
      const typed = { approvalId, by, reason: reasonText };
      const missing = missingInForm(action, by, reasonText);
      if (missing !== null) return inbox(c, { ...typed, message: missing }, 400);
      const decision = { by, ...(reasonText === '' ? {} : { reason: reasonText }) };
      let decided: DecisionReport;
      try {
        decided =
          action === 'approve'
            ? await runner.approve(approvalId, decision, { resume: false })
            : await runner.deny(approvalId, decision, { resume: false });
      } catch (error) {
        if (!isGuardrailError(error)) throw error;
        const statusCode =
          error.code === 'APPROVAL_NOT_FOUND'
            ? 404
            : error.code === 'APPROVAL_NOT_PENDING' || error.code === 'APPROVAL_EXPIRED'
              ? 409
              : error.code === 'STORE_UNAVAILABLE'
                ? 503
                : 400;
        return inbox(c, { ...typed, message: error.message }, statusCode);
      }
      const planId = decided.approval.planId;
      // A plan the runner started continues without this request: a long step must not hold the browser.
      // Any other plan is resumed by the application that asked, when it asks again.
      if (decided.resumedBy === 'runner') {
        const run = resumeInBackground(runner, planId, log);
        o.onBackground?.(run);
      }
      return c.redirect(planPath(planId), 303);
    });
  }

  app.notFound(async (c) =>
    page(c, messagePage(await context(), 'Not found', 'There is no such page.'), 404),
  );

  app.onError((error, c) => {
    log(`dashboard: ${c.req.method} ${new URL(c.req.url).pathname}: ${errorText(error)}`);
    const [status, title] = errorStatus(error);
    // A bare page: the error may be the store itself, which the layout would ask again.
    return c.text(`${status} ${title}: ${errorText(error)}\n`, status);
  });

  return app;
}

/**
 * The answer to an error no route handled: 503 for a store that cannot be reached (trying again later may
 * work), 404 for something the store does not hold, 500 for the rest.
 */
function errorStatus(error: unknown): [503 | 404 | 500, string] {
  if (isGuardrailError(error) && error.code === 'STORE_UNAVAILABLE') {
    return [503, 'Service Unavailable: the store cannot be reached, try again later'];
  }
  if (isGuardrailError(error) && error.code.endsWith('_NOT_FOUND')) return [404, 'Not found'];
  return [500, 'Something went wrong'];
}

/** Renders a page; `html` output is a string unless a value was a promise. */
async function page(
  c: Context,
  body: Html,
  status: 200 | 400 | 404 | 409 | 500 | 503 = 200,
): Promise<Response> {
  return c.html(await body, status);
}

/** Whether the store knows the plan (guardrails or a document); false for an id no plan can have. */
async function known(runner: PlanRunner, planId: string): Promise<boolean> {
  try {
    validatePlanId(planId);
  } catch {
    return false;
  }
  return (await runner.store.get(planId)) !== null || (await runner.store.getPlanDocument(planId)) !== null;
}

/**
 * What a person left out of the approve/deny form, in plain words; null when nothing. The service checks
 * the rest (lengths, characters) and says so in its own words.
 */
function missingInForm(action: 'approve' | 'deny', by: string, reason: string): string | null {
  if (by.trim() === '') return 'Give your name: a decision is recorded with who made it.';
  if (action === 'deny' && reason === '')
    return 'Give a reason to deny: the plan stops, and its log says why.';
  return null;
}

function notFound(ctx: PageContext, planId: string): Html {
  return messagePage(ctx, 'Not found', `No plan "${planId}" in this store.`);
}

function unauthorized(c: Context): Response {
  return c.text(
    '401 Unauthorized: open the address `leash serve` printed, with its ?token=…, or send Authorization: Bearer <token>.\n',
    401,
    { 'WWW-Authenticate': 'Bearer realm="leash"' },
  );
}

function forbidden(c: Context, why: string): Response {
  return c.text(`403 Forbidden: ${why}.\n`, 403);
}

/**
 * Resumes the plan after a decision, if it is paused; never rejects. Says in the log what became of it,
 * since nobody waits for the answer.
 */
function resumeInBackground(
  runner: PlanRunner,
  planId: string,
  log: (line: string) => void,
): Promise<RunReport | null> {
  return (async () => {
    const run = await runner.resumeIfPaused(planId);
    if (run === null) {
      log(
        `plan "${planId}" not resumed: it is not awaiting confirmation (another process resumed it, or it ended)`,
      );
    } else {
      const { status, reason } = run.outcome;
      log(`plan "${planId}" resumed: ${status}${reason ? ` (${reason})` : ''}`);
    }
    return run;
  })().catch((error: unknown) => {
    log(`plan "${planId}" could not be resumed: ${errorText(error)}`);
    return null;
  });
}
