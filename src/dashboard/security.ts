import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Name of the cookie that keeps the access token after the first visit. */
export const TOKEN_COOKIE = 'leash_token';

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
