import { randomBytes } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { verifyAuditLog } from '../audit/verify.js';
import { systemClock, type Clock } from '../clock.js';
import { DEFAULT_STYLE, type CommandStyle } from '../runner/commandLine.js';
import type { DecisionReport, PlanRunner, PlanStatus, RunReport } from '../runner/runner.js';
import { errorText, invalid, isGuardrailError } from '../errors.js';
import { isGuardName } from '../events.js';
import { validatePlanId } from '../ids.js';
import type { ApprovalStatus } from '../store/GuardrailStore.js';
import { guard } from './access.js';
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
import { publicOriginOf, securityHeaders, styleHash, TOKEN_COOKIE } from './security.js';
import {
  createSignIn,
  signedInAs,
  type DashboardEnv,
  type SignInOptions,
  type SignInPeople,
} from './signin.js';
import { CSS, planPath, type Html } from './views.js';

export interface DashboardAppOptions {
  readonly runner: PlanRunner;
  /**
   * The access token every request must carry: in the query once (then the session cookie stands for it),
   * or as `Authorization: Bearer`.
   */
  readonly token: string;
  /**
   * Name of the session cookie, which the names of the sign-in cookies start with; `leash_token` unless
   * given. Cookies are shared by every port of a host, so a server gives one naming its port
   * (`startDashboard` does).
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
  /**
   * How people sign in once the store has principals (then the access token no longer opens it): with
   * a personal token always, at an OpenID Connect provider when one is given.
   */
  readonly signIn?: SignInOptions;
  /**
   * The address people open the dashboard at, when it is not the one it listens on (https, behind a
   * proxy): its host and origin are accepted, a provider sends people back to it, and the sign-in cookies
   * are `Secure` when it is https.
   */
  readonly publicUrl?: string;
}

const STYLE_SOURCE = styleHash(CSS);
const HEADERS = securityHeaders(STYLE_SOURCE);

/**
 * The dashboard as a Hono app: server-rendered pages over a {@link PlanRunner}'s store, and the
 * approve/deny forms. `app.request(...)` runs it without a server.
 * @example
 * const app = createDashboardApp({ runner, token: 's3cret' });
 * const res = await app.request('/', { headers: { authorization: 'Bearer s3cret' } });
 */
export function createDashboardApp(o: DashboardAppOptions): Hono<DashboardEnv> {
  const { runner, token } = o;
  if (typeof token !== 'string' || token.length === 0) invalid('token', 'a non-empty string', token);
  const cookieName = o.cookieName ?? TOKEN_COOKIE;
  // Checked here rather than when the first visitor signs in, where hono would throw.
  if (!/^[A-Za-z0-9_-]+$/.test(cookieName)) invalid('cookieName', 'letters, digits, "_" or "-"', cookieName);
  const clock = o.clock ?? systemClock;
  const log = o.log ?? (() => {});
  const secret = Buffer.from(o.secret ?? randomBytes(32));
  const publicOrigin = o.publicUrl === undefined ? undefined : publicOriginOf(o.publicUrl);
  const people: SignInPeople = {
    authenticate: (given) => runner.service.authenticate(given),
    activePrincipals: async () =>
      (await runner.service.listPrincipals()).filter((p) => p.revokedAt === undefined),
  };
  const signIn = createSignIn({
    ...o.signIn,
    people,
    clock,
    secret,
    cookieName,
    log,
    ...(publicOrigin === undefined ? {} : { publicOrigin }),
  });
  const app = new Hono<DashboardEnv>();

  // Outermost, so 401s, 403s, redirects and error pages carry the headers too.
  app.use(async (c, next) => {
    await next();
    for (const [name, value] of Object.entries(HEADERS)) c.res.headers.set(name, value);
  });
  guard(app, {
    token,
    secret,
    cookieName,
    allowedHosts: o.allowedHosts ?? null,
    ...(publicOrigin === undefined ? {} : { publicOrigin }),
    signingIn: () => runner.service.hasPrincipals(),
    signIn,
  });
  signIn.routes(app);

  const style = o.style ?? DEFAULT_STYLE;
  const context = async (c: Context<DashboardEnv>): Promise<PageContext> => {
    const viewer = c.get('viewer');
    const pending = await runner.service.listApprovals({ status: 'pending' });
    const decider = signedInAs(viewer);
    if (decider === null) return { now: clock.now(), pending: pending.length, csrf: viewer.csrf, style };
    return {
      now: clock.now(),
      pending: pending.filter(decider.mayDecide).length,
      csrf: viewer.csrf,
      style,
      ...decider,
    };
  };

  app.get('/', async (c) => page(c, plansPage(await context(c), await runner.list())));

  app.get('/plans/:id', async (c) => {
    const planId = c.req.param('id');
    const ctx = await context(c);
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
    const ctx = await context(c);
    return page(c, budgetsPage(ctx, await readCapStandings(runner.store, ctx.now)));
  });

  app.get('/plans/:id/audit', async (c) => {
    const planId = c.req.param('id');
    const ctx = await context(c);
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

  const inbox = async (
    c: Context<DashboardEnv>,
    flash: Flash | null,
    statusCode: 200 | 400 | 404 | 409 | 503 = 200,
  ) => {
    const wanted = c.req.query('status');
    const status = APPROVAL_FILTERS.includes(wanted as ApprovalStatus) ? (wanted as ApprovalStatus) : null;
    const ctx = await context(c);
    const all = await runner.service.listApprovals(status === null ? {} : { status });
    // Signed in, the requests listed are those the person may decide (with the decided ones, for the
    // record); a plan's page still shows the rest.
    const may = ctx.mayDecide;
    const list = may === undefined ? all : all.filter((a) => a.status !== 'pending' || may(a));
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
      const identity = signedInAs(c.get('viewer'))?.identity;
      // Signed in, the decision is recorded with who signed in, whatever the form says.
      const by = identity?.name ?? (typeof body['by'] === 'string' ? body['by'] : '');
      const reasonText = typeof body['reason'] === 'string' ? body['reason'].trim() : '';
      const typed = { approvalId, by, reason: reasonText };
      const missing = missingInForm(action, by, reasonText);
      if (missing !== null) return inbox(c, { ...typed, message: missing }, 400);
      const decision = {
        by,
        ...(reasonText === '' ? {} : { reason: reasonText }),
        ...(identity === undefined ? {} : { identity }),
      };
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
    page(c, messagePage(await context(c), 'Not found', 'There is no such page.'), 404),
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
