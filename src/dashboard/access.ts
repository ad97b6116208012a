import type { Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { getCookie, setCookie } from 'hono/cookie';
import { bearerToken, csrfToken, secretsEqual, sessionValue } from './security.js';
import type { DashboardEnv, createSignIn } from './signin.js';

// Who may ask the dashboard what: the Host a request names, the access token (or, once the store has
// principals, a signed-in session), and for a form, its origin and CSRF token.

export interface AccessOptions {
  readonly token: string;
  readonly secret: Buffer;
  readonly cookieName: string;
  /** Host header values accepted; null for every host. */
  readonly allowedHosts: readonly string[] | null;
  /** The origin people open the dashboard at, besides the ones of the allowed hosts. */
  readonly publicOrigin?: string;
  /** Whether people sign in (the store has principals), asked at each request. */
  readonly signingIn: () => Promise<boolean>;
  readonly signIn: ReturnType<typeof createSignIn>;
}

/** Largest form accepted: a name and a reason fit many times over. */
const MAX_BODY_BYTES = 64 * 1024;

/** Adds the checks every request goes through, in order, before any route. */
export function guard(app: Hono<DashboardEnv>, o: AccessOptions): void {
  const { token, secret, cookieName } = o;
  const csrf = csrfToken(secret, token);
  const session = sessionValue(secret, token);
  const allowedHosts = o.allowedHosts === null ? null : new Set(o.allowedHosts.map((h) => h.toLowerCase()));
  const publicHost = o.publicOrigin === undefined ? null : new URL(o.publicOrigin).host;
  if (allowedHosts !== null && publicHost !== null) allowedHosts.add(publicHost);
  const allowedOrigins =
    allowedHosts === null
      ? null
      : new Set([
          ...[...allowedHosts].map((h) => `http://${h}`),
          ...(o.publicOrigin ? [o.publicOrigin] : []),
        ]);

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

  // Authentication. Once the store has principals, a signed-in session; before, the access token from
  // the query (once: then the session cookie), a bearer header, or the session cookie, which holds a value
  // derived from the token rather than the token.
  app.use(async (c, next) => {
    if (await o.signingIn()) return o.signIn.gate(c, next);
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
    c.set('viewer', { mode: 'token', csrf });
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
      origin === o.publicOrigin ||
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
    const expected = c.get('viewer').csrf;
    // An empty expectation (a sign-in form whose cookie is gone) matches nothing.
    if (typeof given !== 'string' || expected === '' || !secretsEqual(given, expected)) {
      return forbidden(c, 'the form has no valid CSRF token: reload the page and try again');
    }
    await next();
  });
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
