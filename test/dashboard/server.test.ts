import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { PlanRunner } from '../../src/runner/runner.js';
import { isGuardrailValidationError } from '../../src/errors.js';
import { allowedHostsFor } from '../../src/dashboard/security.js';
import { startDashboard, type RunningDashboard } from '../../src/dashboard/server.js';
import { MemoryStore } from '../../src/store/memory/MemoryStore.js';

let running: RunningDashboard | undefined;

afterEach(async () => {
  await running?.close();
  running = undefined;
});

/** A dashboard on a free loopback port, over an empty store; closed after the test. */
async function serve(token?: string): Promise<RunningDashboard & { port: number }> {
  running = await startDashboard({
    runner: new PlanRunner({ store: new MemoryStore() }),
    host: '127.0.0.1',
    port: 0,
    log: () => {},
    ...(token === undefined ? {} : { token }),
  });
  return { ...running, port: Number(new URL(running.url).port) };
}

/** The Set-Cookie header of the first visit with the token in the address. */
async function signIn(s: RunningDashboard): Promise<string> {
  const res = await fetch(`${s.url}/?token=${s.token}`, { redirect: 'manual' });
  expect(res.status).toBe(303);
  return res.headers.get('set-cookie') ?? '';
}

/** GET `path` with the request target and Host header as given: what fetch() would not let a test send. */
function rawGet(port: number, path: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the session cookie', () => {
  it('is named after the port the server listens on', async () => {
    const s = await serve();
    expect(await signIn(s)).toMatch(new RegExp(`^leash_token_${s.port}=`));
  });

  it('holds a value other than the token', async () => {
    const s = await serve();
    const value = /^[^=]+=([^;]*);/.exec(await signIn(s))?.[1];
    expect(value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(value).not.toBe(s.token);
  });

  it('lets in the request that sends it back', async () => {
    const s = await serve();
    const cookie = (await signIn(s)).split(';')[0] ?? '';
    expect((await fetch(`${s.url}/`, { headers: { cookie } })).status).toBe(200);
  });

  it('refuses the old cookie name holding the raw token (401)', async () => {
    const s = await serve();
    const res = await fetch(`${s.url}/`, { headers: { cookie: `leash_token=${s.token}` } });
    expect(res.status).toBe(401);
  });

  it('refuses the raw token under the port-named cookie (401)', async () => {
    const s = await serve();
    const res = await fetch(`${s.url}/`, { headers: { cookie: `leash_token_${s.port}=${s.token}` } });
    expect(res.status).toBe(401);
  });
});

describe('a given token', () => {
  it('is refused when shorter than 32 characters, naming token and not showing it', async () => {
    const short = 'hunter2-hunter2-hunter2-hunter2';
    const error: unknown = await serve(short).catch((e: unknown) => e);
    expect(isGuardrailValidationError(error) && error.field).toBe('token');
    expect(String((error as Error).message)).toMatch(/at least 32 characters.*got 31 characters/);
    expect(String((error as Error).message)).not.toContain(short);
  });

  it('is accepted at 32 characters', async () => {
    const token = 'x'.repeat(32);
    const s = await serve(token);
    expect(s.token).toBe(token);
    expect((await fetch(`${s.url}/`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
  });
});

describe('the Host check of a running server', () => {
  it('answers 421 to a request naming another host (DNS rebinding)', async () => {
    const s = await serve();
    expect(await rawGet(s.port, `/?token=${s.token}`, `evil.example:${s.port}`)).toBe(421);
  });

  it('answers 421 to an absolute-form request whose Host names another host', async () => {
    const s = await serve();
    const target = `http://127.0.0.1:${s.port}/?token=${s.token}`;
    expect(await rawGet(s.port, target, `evil.example:${s.port}`)).toBe(421);
  });

  it('answers to localhost on a loopback bind', async () => {
    const s = await serve();
    expect(await rawGet(s.port, `/?token=${s.token}`, `localhost:${s.port}`)).toBe(303);
  });
});

describe('allowedHostsFor', () => {
  it('allows every loopback name, with the port, for a loopback bind', () => {
    expect(allowedHostsFor('127.0.0.1', 4580)).toEqual(['127.0.0.1:4580', 'localhost:4580', '[::1]:4580']);
    expect(allowedHostsFor('::1', 4580)).toEqual(allowedHostsFor('localhost', 4580));
  });

  it('allows only the bound address, with the port, for a non-loopback bind', () => {
    expect(allowedHostsFor('10.0.0.5', 4580)).toEqual(['10.0.0.5:4580']);
    expect(allowedHostsFor('dashboard.internal', 8080)).toEqual(['dashboard.internal:8080']);
  });

  it('writes an IPv6 address in brackets', () => {
    expect(allowedHostsFor('fd00::5', 4580)).toEqual(['[fd00::5]:4580']);
  });

  it('allows port 80 with and without the port, as browsers leave it out', () => {
    expect(allowedHostsFor('10.0.0.5', 80)).toEqual(['10.0.0.5', '10.0.0.5:80']);
  });
});
