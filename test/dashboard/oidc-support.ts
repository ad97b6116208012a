import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import Provider from 'oidc-provider';

// OpenID Connect providers for the tests of signing in: oidc-provider, a real one, with its development
// sign-in pages; and an issuer of hand-made ID tokens, to see that openid-client refuses the bad ones.

export const CLIENT_ID = 'leash-dashboard';
export const CLIENT_SECRET = 'a-client-secret-of-the-tests-0123456789';

/**
 * An HTTP server at a free port, its handler set once the address is known: on 127.0.0.1, or on every
 * address and named `localhost` (another site than 127.0.0.1, to a browser).
 */
async function listen(
  name: '127.0.0.1' | 'localhost' = '127.0.0.1',
): Promise<{ server: Server; origin: string; handle: (h: Handler) => void }> {
  let handler: Handler = (_req, res) => res.writeHead(503).end();
  const server = createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => {
    if (name === 'localhost') server.listen(0, resolve);
    else server.listen(0, name, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return { server, origin: `http://${name}:${port}`, handle: (h) => (handler = h) };
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

function closing(server: Server): () => Promise<void> {
  return () =>
    new Promise<void>((resolve, reject) => {
      server.close((error) => (error ? reject(error) : resolve()));
      server.closeAllConnections();
    });
}

export interface Account {
  readonly email: string;
  readonly name?: string;
  readonly groups?: readonly string[];
}

/**
 * oidc-provider on 127.0.0.1 (or `localhost`), knowing one confidential client whose redirect URI is
 * `redirectUri`, and the accounts given (by login). PKCE is required, as providers do now.
 */
export async function startProvider(
  redirectUri: string,
  accounts: Readonly<Record<string, Account>>,
  name: '127.0.0.1' | 'localhost' = '127.0.0.1',
) {
  const { server, origin, handle } = await listen(name);
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const provider = new Provider(origin, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'test', alg: 'RS256', use: 'sig' }] },
    cookies: { keys: ['cookie-key-of-the-tests'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    scopes: ['openid', 'email', 'profile', 'groups'],
    pkce: { required: () => true },
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 3600, IdToken: 3600 },
    findAccount: (_ctx: unknown, id: string) => {
      const account = accounts[id];
      if (account === undefined) return undefined;
      return {
        accountId: id,
        claims: () => ({
          sub: id,
          email: account.email,
          email_verified: true,
          name: account.name,
          groups: account.groups,
        }),
      };
    },
  });
  handle(provider.callback());
  return { issuer: origin, close: closing(server) };
}

/** A port free now on 127.0.0.1: for a server whose address must be known before it starts. */
export async function freePort(): Promise<number> {
  const { server } = await listen();
  const { port } = server.address() as AddressInfo;
  await closing(server)();
  return port;
}

/** Cookies by name, as a browser keeps them for one site (paths aside). */
class Jar {
  readonly #cookies = new Map<string, string>();

  header(): string {
    return [...this.#cookies].map(([n, v]) => `${n}=${v}`).join('; ');
  }

  keep(res: Response): void {
    for (const header of res.headers.getSetCookie()) {
      const [pair = ''] = header.split(';');
      const at = pair.indexOf('=');
      this.#cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
  }
}

/**
 * Signs `login` in at the provider's development pages, from the authorization URL the dashboard sent
 * the browser to: the login form, then the consent form, following each redirect. Resolves with the
 * address the provider sends the browser back to (the dashboard's callback).
 */
export async function signInAtProvider(authorizationUrl: string, login: string): Promise<string> {
  const jar = new Jar();
  const provider = new URL(authorizationUrl).origin;
  let url = authorizationUrl;
  for (let hop = 0; hop < 20; hop++) {
    if (!url.startsWith(provider)) return url;
    const res = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header() } });
    jar.keep(res);
    const location = res.headers.get('location');
    if (location !== null) {
      url = new URL(location, url).href;
      continue;
    }
    const page = await res.text();
    const prompt = /name="prompt" value="(login|consent)"/.exec(page)?.[1];
    if (prompt === undefined)
      throw new Error(`the provider answered ${res.status} with no form: ${page.slice(0, 300)}`);
    const form = prompt === 'login' ? { prompt, login, password: 'any' } : { prompt };
    const sent = await fetch(url, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });
    jar.keep(sent);
    url = new URL(sent.headers.get('location') ?? url, url).href;
  }
  throw new Error('the provider redirected more than 20 times');
}

/**
 * An issuer of hand-made ID tokens: its discovery document, its key set, and a token endpoint answering
 * with the ID token `idToken` makes (given the nonce the dashboard sent). No userinfo: the ID token is all.
 */
export async function startTokenIssuer() {
  const { server, origin, handle } = await listen();
  const key = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(key.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const state: { idToken: (nonce: string) => Promise<string> } = {
    idToken: () => Promise.reject(new Error('no ID token set')),
  };
  const nonces = new Map<string, string>();
  handle((req, res) => {
    const url = new URL(req.url ?? '/', origin);
    const json = (body: unknown) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (url.pathname === '/.well-known/openid-configuration') {
      return json({
        issuer: origin,
        authorization_endpoint: `${origin}/authorize`,
        token_endpoint: `${origin}/token`,
        jwks_uri: `${origin}/jwks`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
      });
    }
    if (url.pathname === '/jwks') return json({ keys: [jwk] });
    if (url.pathname === '/token') {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const code = new URLSearchParams(body).get('code') ?? '';
        state
          .idToken(nonces.get(code) ?? '')
          .then((idToken) =>
            json({ access_token: 'at', token_type: 'Bearer', expires_in: 300, id_token: idToken }),
          )
          .catch((error: unknown) => res.writeHead(500).end(String(error)));
      });
      return;
    }
    res.writeHead(404).end();
  });
  return {
    issuer: origin,
    /** Remembers the nonce of an authorization request; the code that comes back with its state. */
    authorized(authorizationUrl: string): { code: string; state: string } {
      const params = new URL(authorizationUrl).searchParams;
      const code = `code-${nonces.size}`;
      nonces.set(code, params.get('nonce') ?? '');
      return { code, state: params.get('state') ?? '' };
    },
    /** What the token endpoint answers with next. */
    answerWith(make: (nonce: string) => Promise<string>): void {
      state.idToken = make;
    },
    /** An ID token signed with the issuer's key (or `other`), of these claims. */
    sign(claims: Record<string, unknown>, other?: CryptoKey): Promise<string> {
      return new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .sign(other ?? key.privateKey);
    },
    close: closing(server),
  };
}

/** A key pair the issuer does not publish: a signature made with it must not check. */
export async function strangerKey(): Promise<CryptoKey> {
  return (await generateKeyPair('RS256')).privateKey;
}
