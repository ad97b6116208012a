import type * as OpenIdClient from 'openid-client';
import { systemClock, type Clock } from '../clock.js';
import { errorText, GuardrailValidationError, invalid } from '../errors.js';

// Sign-in at an OpenID Connect provider: the authorization code flow with PKCE, state and nonce, through
// openid-client, which checks the ID token (signature, issuer, audience, expiry, nonce). It is loaded
// when a dashboard is given a provider, never by `import 'leash'`.

export interface OidcOptions {
  /** The provider's issuer URL: https, or http on a loopback address (a provider on this machine). */
  readonly issuer: string;
  readonly clientId: string;
  /** The client's secret; none for a public client (PKCE alone). */
  readonly clientSecret?: string;
  /** Space-separated scopes asked for; `openid email profile` unless given. */
  readonly scope?: string;
  /** Used for the ID token's times (expiry, issued at); the system clock unless given. */
  readonly clock?: Clock;
}

/** What a sign-in under way must remember until the provider sends the browser back. */
export interface OidcChecks {
  readonly state: string;
  readonly nonce: string;
  readonly verifier: string;
}

/** A provider the dashboard signs people in with. */
export interface OidcSignIn {
  readonly issuer: string;
  /** The provider's address to send the browser to, and what to check when it comes back. */
  begin(redirectUri: string): Promise<{ readonly url: string; readonly checks: OidcChecks }>;
  /**
   * The claims of the person the provider signed in, from the ID token (checked) and, when the ID token
   * leaves out one of the `wanted` claims, the provider's userinfo. Rejects whatever does not check out.
   */
  finish(
    callback: URL,
    checks: OidcChecks,
    wanted: readonly string[],
  ): Promise<Readonly<Record<string, unknown>>>;
}

export const DEFAULT_OIDC_SCOPE = 'openid email profile';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** The issuer as a URL: https, or http on loopback; anything else is refused, naming `oidcIssuer`. */
export function issuerUrl(value: unknown): URL {
  let url: URL | null = null;
  try {
    url = typeof value === 'string' ? new URL(value) : null;
  } catch {
    url = null;
  }
  const secure = url?.protocol === 'https:' || (url?.protocol === 'http:' && LOOPBACK.has(url.hostname));
  if (url === null || !secure || url.search !== '' || url.hash !== '') {
    invalid('oidcIssuer', 'an https URL without query or fragment (http only on a loopback address)', value);
  }
  return url;
}

/**
 * Loads openid-client and reads the provider's configuration (discovery). Rejects with a
 * GuardrailValidationError naming the option at fault when an option is bad or the provider cannot be read.
 */
export async function connectOidc(o: OidcOptions): Promise<OidcSignIn> {
  const issuer = issuerUrl(o.issuer);
  if (typeof o.clientId !== 'string' || o.clientId.trim() === '') {
    invalid('oidcClientId', 'a non-empty string', o.clientId);
  }
  if (o.clientSecret !== undefined && (typeof o.clientSecret !== 'string' || o.clientSecret === '')) {
    invalid('oidcClientSecret', 'a non-empty string when given', '(hidden)');
  }
  const scope = o.scope ?? DEFAULT_OIDC_SCOPE;
  if (typeof scope !== 'string' || !scope.split(' ').includes('openid')) {
    invalid('oidcScope', 'space-separated scopes including "openid"', scope);
  }
  const clock = o.clock ?? systemClock;
  const client = await import('openid-client');
  const insecure = issuer.protocol === 'http:';
  const auth = o.clientSecret === undefined ? client.None() : client.ClientSecretBasic(o.clientSecret);
  let discovered: OpenIdClient.Configuration;
  try {
    discovered = await client.discovery(issuer, o.clientId, undefined, auth, {
      execute: insecure ? [client.allowInsecureRequests] : [],
    });
  } catch (error) {
    throw new GuardrailValidationError(
      'oidcIssuer',
      `oidcIssuer ${issuer.href} could not be read as an OpenID Connect provider: ${errorText(error)}`,
      { cause: error },
    );
  }
  // An ID token from the token endpoint could be taken on the word of TLS (OpenID Connect allows it);
  // its signature is checked all the same, which an http provider on loopback needs anyway.
  client.enableNonRepudiationChecks(discovered);
  const server = discovered.serverMetadata();
  // openid-client reads the time from Date.now(), moved by a clock skew fixed for each configuration:
  // one is made again whenever the injected clock stands elsewhere, keeping the provider's keys.
  let current = { skew: 0, config: discovered };
  const configAt = (now: number): OpenIdClient.Configuration => {
    const skew = Math.round((now - Date.now()) / 1000);
    if (skew === current.skew) return current.config;
    const config = new client.Configuration(server, o.clientId, { [client.clockSkew]: skew }, auth);
    if (insecure) client.allowInsecureRequests(config);
    client.enableNonRepudiationChecks(config);
    const keys = client.getJwksCache(current.config);
    if (keys !== undefined) client.setJwksCache(config, keys);
    current = { skew, config };
    return config;
  };

  return {
    issuer: server.issuer,
    async begin(redirectUri) {
      const checks = {
        state: client.randomState(),
        nonce: client.randomNonce(),
        verifier: client.randomPKCECodeVerifier(),
      };
      const url = client.buildAuthorizationUrl(discovered, {
        redirect_uri: redirectUri,
        scope,
        state: checks.state,
        nonce: checks.nonce,
        code_challenge: await client.calculatePKCECodeChallenge(checks.verifier),
        code_challenge_method: 'S256',
      });
      return { url: url.href, checks };
    },
    async finish(callback, checks, wanted) {
      const config = configAt(clock.now());
      const tokens = await client
        .authorizationCodeGrant(config, callback, {
          pkceCodeVerifier: checks.verifier,
          expectedState: checks.state,
          expectedNonce: checks.nonce,
          idTokenExpected: true,
        })
        .catch((error: unknown) => {
          throw new Error(refusal(error), { cause: error });
        });
      const claims = tokens.claims();
      if (claims === undefined) throw new Error('the provider returned no ID token');
      const missing = wanted.some((name) => claims[name] === undefined);
      if (!missing || tokens.access_token === undefined || server.userinfo_endpoint === undefined) {
        return claims;
      }
      // Many providers put only `sub` in the ID token of this flow, and the rest in userinfo; the ID
      // token's own claims take precedence, and openid-client checks userinfo's `sub` against it.
      const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
      return { ...info, ...claims };
    },
  };
}

/**
 * What openid-client found wrong, in its words: its general message, then the precise one of the check
 * that failed (`unexpected JWT "aud" (audience) claim value`), which it keeps as the cause.
 */
function refusal(error: unknown): string {
  const text = errorText(error);
  const cause = (error as { cause?: unknown } | null)?.cause;
  return cause instanceof Error && cause.message !== text ? `${text}: ${cause.message}` : text;
}
