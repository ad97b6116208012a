import type { Hono } from 'hono';
import { expect } from 'vitest';
import { approvalRules, type ApprovalRuleInit } from '../../src/identity/rules.js';
import { AutonomyGuardrailService } from '../../src/service/AutonomyGuardrailService.js';
import type { Clock } from '../../src/clock.js';
import type { PrincipalInit } from '../../src/service/people.js';
import type { GuardrailStore } from '../../src/store/GuardrailStore.js';
import type { Fixture } from './support.js';
import { ORIGIN } from './support.js';

// Helpers of the tests of signing in: people with personal tokens, a browser's cookie jar over
// `app.request`, and approvals asked for under a rule.

/** Adds a principal and makes it a personal token; resolves with the token. */
export async function person(f: Pick<Fixture, 'runner'>, init: PrincipalInit): Promise<string> {
  await f.runner.service.addPrincipal(init);
  return (await f.runner.service.createToken(init.id)).token;
}

/** The cookies a response sets, by name: the value and the attributes as sent. */
export function setCookies(res: Response): Map<string, { value: string; header: string }> {
  const found = new Map<string, { value: string; header: string }>();
  for (const header of res.headers.getSetCookie()) {
    const [pair = ''] = header.split(';');
    const at = pair.indexOf('=');
    found.set(pair.slice(0, at), { value: pair.slice(at + 1), header });
  }
  return found;
}

/**
 * A browser of sorts over `app`: it keeps the cookies responses set (a cookie set empty or with
 * Max-Age=0 is dropped), sends them back, and sends a form's Origin as a browser does.
 */
export class Browser {
  readonly jar = new Map<string, string>();

  constructor(
    readonly app: Hono<never> | { request: Hono['request'] },
    readonly base = ORIGIN,
  ) {}

  async request(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    const cookie = [...this.jar].map(([n, v]) => `${n}=${v}`).join('; ');
    if (cookie !== '' && !headers.has('cookie')) headers.set('cookie', cookie);
    const res = await this.app.request(path.startsWith('http') ? path : `${this.base}${path}`, {
      ...init,
      headers,
    });
    for (const [name, { value, header }] of setCookies(res)) {
      if (value === '' || /Max-Age=0/i.test(header)) this.jar.delete(name);
      else this.jar.set(name, value);
    }
    return res;
  }

  get(path: string, headers: Record<string, string> = {}): Promise<Response> {
    return this.request(path, { headers });
  }

  post(path: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
    return this.request(path, {
      method: 'POST',
      headers: { origin: this.base, 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(form).toString(),
    });
  }

  /** The CSRF token of the first form on the page at `path`. */
  async csrf(path: string): Promise<string> {
    const text = await (await this.get(path)).text();
    const m = /name="csrf" value="([^"]+)"/.exec(text);
    if (!m?.[1]) throw new Error(`the page at ${path} has no form with a CSRF token`);
    return m[1];
  }

  /** Signs in with a personal token through the sign-in form; resolves with the response to the form. */
  async signIn(token: string, next = '/'): Promise<Response> {
    const csrf = await this.csrf(`/login?next=${encodeURIComponent(next)}`);
    return this.post('/login', { csrf, token, next });
  }

  /** Signs in, expecting it to work. */
  async signedIn(token: string): Promise<this> {
    const res = await this.signIn(token);
    expect(res.status).toBe(303);
    return this;
  }
}

/**
 * Asks for a person's approval of `operation` (default `deploy`) in plan `planId` (default `agent`), run
 * for carol, under `rules`, as an agent's service over the dashboard's store would; resolves with the
 * approval's id.
 */
export async function requestUnder(
  f: { readonly store: GuardrailStore; readonly clock: Clock },
  rules: Readonly<Record<string, ApprovalRuleInit>>,
  { planId = 'agent', operation = 'deploy' }: { planId?: string; operation?: string } = {},
): Promise<string> {
  const service = new AutonomyGuardrailService({
    store: f.store,
    clock: f.clock,
    approvalRules: approvalRules(rules),
  });
  await service.configureGuardrails(planId, {
    requiredConfirmations: [operation],
    labels: { user: 'carol' },
  });
  const asked = await service.requestConfirmation(planId, {
    decisionId: 'ship',
    operation,
    input: { to: 'prod' },
    ttlMs: 3_600_000,
  });
  const id = asked.approval?.id;
  if (id === undefined) throw new Error('no approval was asked for');
  return id;
}
