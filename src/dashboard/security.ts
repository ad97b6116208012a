import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

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
