import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { GuardrailValidationError, invalid } from '../errors.js';

/**
 * Default name of the session cookie. Browsers send a cookie to every port of its host, so a server names
 * it after its port (`leash_token_4580`) to keep two dashboards on one host from overwriting each other's.
 */
export const TOKEN_COOKIE = 'leash_token';

/** Shortest access token accepted from outside: a guessable one would make the rest of the locks moot. */
export const MIN_TOKEN_LENGTH = 32;

/** A fresh access token: 32 random bytes, base64url. */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The access token a server uses: `given`, when it is long enough, else a new one. `command` names the
 * command that takes it from LEASH_TOKEN, for the message. The token itself stays out of the message: it
 * may be a real secret with a typo.
 */
export function accessToken(given: string | undefined, command: string): string {
  if (given === undefined) return newToken();
  if (typeof given !== 'string' || given.length < MIN_TOKEN_LENGTH) {
    throw new GuardrailValidationError(
      'token',
      `token must be a string of at least ${MIN_TOKEN_LENGTH} characters (LEASH_TOKEN sets it for ${command}), got ${typeof given === 'string' ? `${given.length} characters` : typeof given}`,
    );
  }
  return given;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/**
 * The Host header values a server bound to `host:port` answers to. Bound to loopback, every loopback
 * name; otherwise the bound address alone. Either way a DNS-rebinding page, whose requests name its own
 * host, gets 421. Port 80 also appears without it, as browsers leave the default port out.
 * @example
 * allowedHostsFor('127.0.0.1', 4580); // ['127.0.0.1:4580', 'localhost:4580', '[::1]:4580']
 * allowedHostsFor('10.0.0.5', 4580); // ['10.0.0.5:4580']
 */
export function allowedHostsFor(host: string, port: number): string[] {
  const names = LOOPBACK.has(host.toLowerCase()) ? ['127.0.0.1', 'localhost', '[::1]'] : [bracketed(host)];
  return names.flatMap((h) => (port === 80 ? [h, `${h}:80`] : [`${h}:${port}`]));
}

/** An IPv6 address as a URL and a Host header write it: in brackets. */
export function bracketed(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** The token of an `Authorization: Bearer <token>` header, or undefined without one. */
export function bearerToken(header: string | undefined): string | undefined {
  return /^Bearer\s+(.+)$/i.exec(header ?? '')?.[1]?.trim();
}

/**
 * Compares two secrets in time that does not depend on where they differ. Both are hashed first, so
 * the buffers compared always have the same length and the length of the secret does not leak either.
 */
export function secretsEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}

/**
 * The CSRF token of the forms: HMAC-SHA256 of the access token under a secret only the server knows.
 * A page of another site can make the browser send the cookie, but cannot read a page to learn this.
 */
export function csrfToken(secret: Buffer, accessToken: string): string {
  return createHmac('sha256', secret).update(accessToken, 'utf8').digest('base64url');
}

/**
 * What the session cookie holds: HMAC-SHA256 of the access token under the server's secret, not the token
 * itself. Every service on the host receives the cookie (cookies ignore ports); this value opens only this
 * server, for as long as it runs, and cannot be replayed as the token (`?token=`, `Authorization`).
 * The prefix keeps it apart from {@link csrfToken}, made under the same secret.
 */
export function sessionValue(secret: Buffer, accessToken: string): string {
  return createHmac('sha256', secret).update(`session:${accessToken}`, 'utf8').digest('base64url');
}

/** The stylesheet's CSP source: its SHA-256, so no inline style other than this one can apply. */
export function styleHash(css: string): string {
  return `'sha256-${createHash('sha256').update(css, 'utf8').digest('base64')}'`;
}

/** Headers every response carries, whatever it is (pages, redirects, 401s, 403s). */
export function securityHeaders(styleSource: string): Record<string, string> {
  return {
    'Content-Security-Policy': [
      "default-src 'none'",
      `style-src ${styleSource}`,
      "img-src 'self' data:",
      "form-action 'self'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ].join('; '),
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-store',
    'X-Frame-Options': 'DENY',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Resource-Policy': 'same-origin',
  };
}

/** The origin of the `publicUrl` option: an http or https URL naming no more than a host. */
export function publicOriginOf(value: unknown): string {
  let url: URL | null = null;
  try {
    url = typeof value === 'string' ? new URL(value) : null;
  } catch {
    url = null;
  }
  const bare = url !== null && (url.pathname === '/' || url.pathname === '') && !url.search && !url.hash;
  if (url === null || !['http:', 'https:'].includes(url.protocol) || !bare || url.username !== '') {
    invalid('publicUrl', 'an http or https URL of a host, without a path', value);
  }
  return url.origin;
}
