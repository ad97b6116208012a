import type { Context, Hono, Next } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { Clock } from '../clock.js';
import { errorText, invalid, isGuardrailError } from '../errors.js';
import { mayDecide } from '../identity/rules.js';
import type { Approval, DeciderIdentity, Principal } from '../store/GuardrailStore.js';
import type { OidcChecks, OidcSignIn } from './oidc.js';
import { claimMapping, identityFromClaims, type ClaimMapping } from './oidcIdentity.js';
import { loginPage, refusedPage, sameSitePage, signedInPage } from './pages/signin.js';
import { csrfToken } from './security.js';
import { Expiring, randomId } from './sessions.js';
import type { Html, SignedInUser } from './views.js';

// Signing people in, once the store has principals: with a personal token or at an OpenID Connect
// provider, into a session the server keeps in memory, named by a random id in a cookie.

/** Who is asking, as the request's first steps found out. */
export type Viewer =
  /** The store has no principals: the access token let them in. */
  | { readonly mode: 'token'; readonly csrf: string }
  /** On the way to signing in: the pages of signing in only. */
  | { readonly mode: 'signing-in'; readonly csrf: string }
  | {
      readonly mode: 'signed-in';
      readonly csrf: string;
      readonly identity: DeciderIdentity;
      readonly session: string;
    };

export type DashboardEnv = { Variables: { viewer: Viewer } };
type Ctx = Context<DashboardEnv>;

/** What signing in asks of the store. */
export interface SignInPeople {
  /** The identity a personal token stands for; a GuardrailError when none. */
  authenticate(token: string): Promise<DeciderIdentity>;
  /** Principals that are not revoked. */
  activePrincipals(): Promise<readonly Principal[]>;
}

export interface SignInOptions {
  /** The provider to sign in at, besides personal tokens (`connectOidc`). */
  readonly oidc?: OidcSignIn;
  /** How the provider's claims make an identity. */
  readonly mapping?: ClaimMapping;
  /** How long a session lasts, in seconds; 8 hours unless given. */
  readonly sessionTtlSeconds?: number;
}

export const DEFAULT_SESSION_TTL_SECONDS = 8 * 60 * 60;
/** How long a sign-in at the provider may take, from leaving the dashboard to coming back. */
const OIDC_TTL_MS = 10 * 60 * 1000;
const LOGIN_PATHS = new Set(['/login', '/login/oidc', '/login/callback']);
const NO_PROVIDER = 'This dashboard signs people in with personal tokens only.';

interface Session {
  readonly identity: DeciderIdentity;
  readonly csrf: string;
  /** The personal token signed in with: checked again at each request, so a revoked one ends the session. */
  readonly token?: string;
  /** The roles the provider's claims gave. */
  readonly claimRoles: readonly string[];
}

interface PendingSignIn {
  readonly checks: OidcChecks;
  readonly redirectUri: string;
  readonly next: string;
}

export interface SignInDeps extends SignInOptions {
  readonly people: SignInPeople;
  readonly clock: Clock;
  readonly secret: Buffer;
  /** Cookie names start with it. */
  readonly cookieName: string;
  /** The address people reach the dashboard at, when it is not the one a request names. */
  readonly publicOrigin?: string;
  readonly log: (line: string) => void;
}

/** A path of this dashboard to go to after signing in: `/` for anything else (another site's address). */
export function localPath(value: unknown): string {
  if (typeof value !== 'string' || !/^\/(?![/\\])/.test(value)) return '/';
  const url = new URL(value, 'http://dashboard.invalid');
  if (
    url.origin !== 'http://dashboard.invalid' ||
    LOGIN_PATHS.has(url.pathname) ||
    url.pathname === '/logout'
  ) {
    return '/';
  }
  url.searchParams.delete('token');
  return `${url.pathname}${url.search}`;
}

export function createSignIn(d: SignInDeps) {
  const ttlSeconds = d.sessionTtlSeconds ?? DEFAULT_SESSION_TTL_SECONDS;
  if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds < 1) {
    invalid('sessionTtlSeconds', 'a whole number of seconds, at least 1', ttlSeconds);
  }
  const mapping = claimMapping(d.mapping ?? {});
  const sessions = new Expiring<Session>({ clock: d.clock, ttlMs: ttlSeconds * 1000, max: 10_000 });
  const underway = new Expiring<PendingSignIn>({ clock: d.clock, ttlMs: OIDC_TTL_MS, max: 1_000 });
  const names = {
    session: `${d.cookieName}_session`,
    login: `${d.cookieName}_login`,
    oidc: `${d.cookieName}_oidc`,
  };
  const wanted = [mapping.userClaim, ...(mapping.rolesClaim === undefined ? [] : [mapping.rolesClaim])];
  const originOf = (c: Ctx) => d.publicOrigin ?? new URL(c.req.url).origin;
  const secure = (c: Ctx) => originOf(c).startsWith('https:');
  const loginCsrf = (nonce: string | undefined) =>
    nonce === undefined ? '' : csrfToken(d.secret, `login:${nonce}`);
  const page = async (c: Ctx, body: Html, status: 200 | 400 | 401 | 403 | 404 = 200) =>
    c.html(await body, status);

  /** The identity a session stands for now, or null once its token or principal is revoked. */
  const current = async (s: Session): Promise<DeciderIdentity | null> => {
    if (s.token !== undefined) {
      try {
        return await d.people.authenticate(s.token);
      } catch (error) {
        if (isGuardrailError(error) && error.code !== 'STORE_UNAVAILABLE') return null;
        throw error;
      }
    }
    const id = s.identity.principal;
    if (id === undefined) return s.identity;
    const principal = (await d.people.activePrincipals()).find((p) => p.id === id);
    if (principal === undefined) return null;
    const roles = [...new Set([...principal.roles, ...s.claimRoles])].sort();
    return { ...s.identity, name: principal.name, roles };
  };

  const open = (c: Ctx, s: Session) => {
    const viewer = c.get('viewer');
    // A fresh id at each sign-in: an id someone planted in the browser before is never signed in.
    if (viewer?.mode === 'signed-in') sessions.delete(viewer.session);
    const { id } = sessions.add(s);
    setCookie(c, names.session, id, {
      httpOnly: true,
      sameSite: 'Strict',
      path: '/',
      secure: secure(c),
      maxAge: ttlSeconds,
    });
  };

  /** The requests of a dashboard people sign in to: let in with a session, else sent to sign in. */
  async function gate(c: Ctx, next: Next): Promise<Response | void> {
    const id = getCookie(c, names.session);
    const session = sessions.get(id);
    if (session !== null && id !== undefined) {
      const identity = await current(session);
      if (identity !== null) {
        c.set('viewer', { mode: 'signed-in', csrf: session.csrf, identity, session: id });
        return next();
      }
      sessions.delete(id);
    }
    const url = new URL(c.req.url);
    if (LOGIN_PATHS.has(url.pathname)) {
      c.set('viewer', { mode: 'signing-in', csrf: loginCsrf(getCookie(c, names.login)) });
      return next();
    }
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      return page(c, refusedPage('Not signed in', 'Your session has ended: sign in, then try again.'), 401);
    }
    const here = localPath(`${url.pathname}${url.search}`);
    const site = c.req.header('sec-fetch-site');
    if (site === 'cross-site' || site === 'same-site') return page(c, sameSitePage(here));
    return c.redirect(`/login?next=${encodeURIComponent(here)}`, 303);
  }

  function routes(app: Hono<DashboardEnv>): void {
    app.get('/login', async (c) => {
      const viewer = c.get('viewer');
      const next = localPath(c.req.query('next'));
      if (viewer.mode !== 'signing-in') return c.redirect(next, 303);
      const nonce = getCookie(c, names.login) ?? randomId();
      setCookie(c, names.login, nonce, {
        httpOnly: true,
        sameSite: 'Strict',
        path: '/login',
        secure: secure(c),
        maxAge: ttlSeconds,
      });
      return page(c, loginPage({ csrf: loginCsrf(nonce), next, issuer: d.oidc?.issuer ?? null }));
    });

    app.post('/login', async (c) => {
      const body = await c.req.parseBody();
      const next = localPath(body['next']);
      if (c.get('viewer').mode === 'token') return c.redirect(next, 303);
      const token = typeof body['token'] === 'string' ? body['token'].trim() : '';
      let identity: DeciderIdentity;
      try {
        identity = await d.people.authenticate(token);
      } catch (error) {
        if (!isGuardrailError(error) || error.code === 'STORE_UNAVAILABLE') throw error;
        const csrf = loginCsrf(getCookie(c, names.login));
        const message = `Not signed in: ${error.message}.`;
        return page(c, loginPage({ csrf, next, issuer: d.oidc?.issuer ?? null, message }), 401);
      }
      open(c, { identity, csrf: randomId(), token, claimRoles: [] });
      deleteCookie(c, names.login, { path: '/login', secure: secure(c) });
      return c.redirect(next, 303);
    });

    app.get('/login/oidc', async (c) => {
      const oidc = d.oidc;
      const next = localPath(c.req.query('next'));
      if (oidc === undefined) return page(c, refusedPage('Not found', NO_PROVIDER), 404);
      if (c.get('viewer').mode !== 'signing-in') return c.redirect(next, 303);
      const origin = originOf(c);
      // The provider sends the browser back to one address: the sign-in starts there, where its cookie is.
      if (origin !== new URL(c.req.url).origin) {
        return c.redirect(`${origin}/login/oidc?next=${encodeURIComponent(next)}`, 303);
      }
      const redirectUri = `${origin}/login/callback`;
      const { url, checks } = await oidc.begin(redirectUri);
      const { id } = underway.add({ checks, redirectUri, next });
      // Lax: the browser must send it back with the provider's redirect, a request from another site.
      setCookie(c, names.oidc, id, {
        httpOnly: true,
        sameSite: 'Lax',
        path: '/login',
        secure: secure(c),
        maxAge: OIDC_TTL_MS / 1000,
      });
      return c.redirect(url, 303);
    });

    app.get('/login/callback', async (c) => {
      const oidc = d.oidc;
      if (oidc === undefined) return page(c, refusedPage('Not found', NO_PROVIDER), 404);
      const pending = underway.take(getCookie(c, names.oidc));
      deleteCookie(c, names.oidc, { path: '/login', secure: secure(c) });
      if (pending === null) {
        const why = 'This sign-in took longer than 10 minutes, or began in another browser: sign in again.';
        return page(c, refusedPage('Sign-in expired', why), 400);
      }
      const callback = new URL(pending.redirectUri);
      callback.search = new URL(c.req.url).search;
      let claims: Readonly<Record<string, unknown>>;
      try {
        claims = await oidc.finish(callback, pending.checks, wanted);
      } catch (error) {
        d.log(`dashboard: sign-in at ${oidc.issuer} refused: ${errorText(error)}`);
        const why = `The answer of ${oidc.issuer} did not check out (${errorText(error)}).`;
        return page(c, refusedPage('Sign-in refused', why), 401);
      }
      const outcome = identityFromClaims(claims, await d.people.activePrincipals(), mapping);
      if (!outcome.ok) {
        const who = outcome.user === null ? 'You are signed in at the provider, but' : `${outcome.user}:`;
        return page(c, refusedPage('Not allowed in', `${who} ${outcome.why}.`), 403);
      }
      open(c, { identity: outcome.identity, csrf: randomId(), claimRoles: outcome.claimRoles });
      return page(c, signedInPage(outcome.identity.name, pending.next));
    });

    app.post('/logout', (c) => {
      const viewer = c.get('viewer');
      if (viewer.mode !== 'signed-in') return c.redirect('/', 303);
      sessions.delete(viewer.session);
      deleteCookie(c, names.session, { path: '/', secure: secure(c) });
      return c.redirect('/login', 303);
    });
  }

  return { gate, routes };
}

/**
 * What the pages need of a signed-in person: who they are, shown in the header, and which approvals they
 * may decide. Null when the access token let them in.
 */
export function signedInAs(viewer: Viewer): {
  readonly identity: DeciderIdentity;
  readonly user: SignedInUser;
  readonly mayDecide: (approval: Approval) => boolean;
} | null {
  if (viewer.mode !== 'signed-in') return null;
  const { identity } = viewer;
  const roles = identity.roles ?? [];
  const detail = [
    identity.principal ?? identity.subject,
    ...(roles.length === 0 ? [] : [`roles ${roles.join(', ')}`]),
  ].join(' · ');
  return {
    identity,
    user: { name: identity.name, detail, csrf: viewer.csrf },
    mayDecide: (approval) => mayDecide(approval, identity, true),
  };
}
