// `leash mcp --listen` in this process: SDK clients over Streamable HTTP, raw requests where a client would
// not send them, and an upstream fixture that leaves its pid behind so that a test can see it stopped.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { verifyAuditLog } from '../../src/audit/verify.js';
import { isGuardrailValidationError } from '../../src/errors.js';
import { startMcpListener, type McpListenerOptions } from '../../src/mcp/listen.js';
import { SessionEvents } from '../../src/mcp/sessionEvents.js';
import { AutonomyGuardrailService } from '../../src/service/AutonomyGuardrailService.js';
import { MemoryStore } from '../../src/store/memory/MemoryStore.js';
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';
import { tempFiles } from '../support/tempFiles.js';
import { T0 } from '../support/service.js';
import { ManualClock } from '../../src/clock.js';
import { alive } from '../support/processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const UPSTREAM = join(ROOT, 'test/support/mcp-upstream.mjs');
const TOKEN = 'a-token-of-thirty-two-characters-at-least';

const { newFile, closeAfter } = tempFiles('leash-listen-');

interface Front {
  readonly url: string;
  readonly token: string;
  readonly port: number;
  readonly service: AutonomyGuardrailService;
  /** The folder where each upstream process started leaves its pid. */
  readonly pids: string;
  readonly logs: string[];
  readonly close: () => Promise<void>;
  readonly expireIdle: () => Promise<number>;
}

/** A listener on a free loopback port, in front of the fixture, on a MemoryStore unless told; closed after. */
async function front(options: Partial<McpListenerOptions> = {}): Promise<Front> {
  const pids = mkdtempSync(join(tmpdir(), 'leash-listen-pids-'));
  closeAfter(() => rmSync(pids, { recursive: true, force: true }));
  const service = options.service ?? new AutonomyGuardrailService({ store: new MemoryStore() });
  const logs: string[] = [];
  const listener = await startMcpListener({
    service,
    policy: null,
    policyName: 'session',
    upstream: { command: process.execPath, args: [UPSTREAM, pids] },
    host: '127.0.0.1',
    port: 0,
    token: TOKEN,
    log: (line) => void logs.push(line),
    ...options,
  });
  closeAfter(() => listener.close());
  return { ...listener, port: Number(new URL(listener.url).port), service, pids, logs };
}

/** An SDK client connected to `f` with its token; closed after the test. */
async function connect(f: Front): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(f.url), {
    requestInit: { headers: { Authorization: `Bearer ${f.token}` } },
  });
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(transport);
  closeAfter(() => client.close());
  return { client, transport };
}

function textOf(r: unknown): string {
  return (r as CallToolResult).content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

/** The pids of the upstream processes `f` started. */
function upstreams(f: Front): number[] {
  return readdirSync(f.pids).map(Number);
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: LATEST_PROTOCOL_VERSION,
    capabilities: {},
    clientInfo: { name: 'raw', version: '1' },
  },
};

/** POSTs `body` to `f` as a client would, with its token, the headers given replacing those. */
function post(f: Front, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) {
  return fetch(f.url, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${f.token}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'Mcp-Protocol-Version': LATEST_PROTOCOL_VERSION,
      ...headers,
    },
    body: JSON.stringify(body),
    ...(signal === undefined ? {} : { signal }),
  });
}

/** A request with the Host header given: what fetch() would not let a test send. */
function withHost(f: Front, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers = { host, authorization: `Bearer ${f.token}`, 'content-type': 'application/json' };
    const req = request({ host: '127.0.0.1', port: f.port, path: '/mcp', method: 'POST', headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end(JSON.stringify(INITIALIZE));
  });
}

/** The events of an SSE response, as they come. */
async function* events(res: Response): AsyncGenerator<{ id?: string; data: string }> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const lines = buffer.slice(0, end).split('\n');
      buffer = buffer.slice(end + 2);
      const field = (name: string) =>
        lines.filter((l) => l.startsWith(`${name}:`)).map((l) => l.slice(name.length + 1).trimStart());
      const [id] = field('id');
      if (lines.every((l) => l.startsWith(':'))) continue; // a keep-alive comment
      yield { ...(id === undefined ? {} : { id }), data: field('data').join('\n') };
    }
  }
}

/** The JSON-RPC message of `events` that answers `id`. */
async function answerTo(stream: AsyncGenerator<{ data: string }>, id: number): Promise<unknown> {
  for await (const e of stream) {
    const message = e.data === '' ? {} : (JSON.parse(e.data) as { id?: unknown });
    if (message.id === id) return message;
  }
  throw new Error(`the stream ended without an answer to ${id}`);
}

/** A session opened with raw requests: initialized, and its id. */
async function rawSession(f: Front): Promise<string> {
  const init = await post(f, INITIALIZE);
  const session = init.headers.get('mcp-session-id') as string;
  await answerTo(events(init), 1);
  const ack = await post(
    f,
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { 'Mcp-Session-Id': session },
  );
  expect(ack.status).toBe(202);
  return session;
}

describe('leash mcp --listen: who may talk to it', () => {
  it('refuses a request without the token with 401, asking for a bearer token', async () => {
    const f = await front();
    const r = await post(f, INITIALIZE, { Authorization: '' });
    expect([r.status, r.headers.get('www-authenticate')]).toEqual([401, 'Bearer realm="leash mcp"']);
  });

  it('refuses a request with another token with 401', async () => {
    const f = await front();
    const r = await post(f, INITIALIZE, { Authorization: `Bearer ${TOKEN}x` });
    expect(r.status).toBe(401);
  });

  it('refuses a request from a page of another origin with 403', async () => {
    const f = await front();
    const r = await post(f, INITIALIZE, { Origin: 'http://rebound.example' });
    expect(r.status).toBe(403);
  });

  it('takes a request from its own origin', async () => {
    const f = await front();
    const r = await post(f, INITIALIZE, { Origin: `http://localhost:${f.port}` });
    expect([r.status, await answerTo(events(r), 1)]).toMatchObject([200, { result: {} }]);
  });

  it('refuses a Host header that names another server with 421', async () => {
    const f = await front();
    expect(await withHost(f, `rebound.example:${f.port}`)).toBe(421);
  });

  it('refuses a token shorter than 32 characters before listening', async () => {
    const error = await front({ token: 'short' }).catch((e: unknown) => e);
    expect(isGuardrailValidationError(error) && error.field).toBe('token');
  });
});

describe('leash mcp --listen: sessions', () => {
  it('answers 404 to a session id it does not know', async () => {
    const f = await front();
    const r = await post(f, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, { 'Mcp-Session-Id': 'nope' });
    expect([r.status, await r.json()]).toMatchObject([404, { error: { message: 'Session not found' } }]);
  });

  it('answers 400 to a request without a session id that is no initialize', async () => {
    const f = await front();
    const r = await post(f, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(r.status).toBe(400);
  });

  it('starts no upstream for an initialize whose client does not take SSE, answering 406', async () => {
    const f = await front();
    const r = await post(f, INITIALIZE, { Accept: 'application/json' });
    expect([r.status, upstreams(f)]).toEqual([406, []]);
  });

  it('answers 400 with a parse error to a session’s POST that is not JSON', async () => {
    const f = await front();
    const session = await rawSession(f);
    const r = await fetch(f.url, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${f.token}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Mcp-Session-Id': session,
      },
      body: '{"jsonrpc":',
    });
    expect([r.status, await r.json()]).toMatchObject([400, { error: { code: -32700 } }]);
  });

  it('answers 413 to a session’s POST over 4 MiB, naming the limit', async () => {
    const f = await front();
    const session = await rawSession(f);
    const message = {
      jsonrpc: '2.0',
      method: 'notifications/x',
      params: { pad: 'x'.repeat(4 * 1024 * 1024) },
    };
    const r = await post(f, message, { 'Mcp-Session-Id': session });
    expect([r.status, await r.json()]).toMatchObject([
      413,
      { error: { message: 'Payload Too Large: Request body must not exceed 4194304 bytes' } },
    ]);
  });

  it('starts each session with a plan and an upstream process of its own', async () => {
    const f = await front();
    const [a, b] = [await connect(f), await connect(f)];
    await a.client.callTool({ name: 'echo', arguments: { message: 'a' } });
    await b.client.callTool({ name: 'echo', arguments: { message: 'b' } });
    const plans = (await f.service.store.listPlans()).map((p) => p.planId);
    expect([plans.sort(), upstreams(f).length]).toEqual([['mcp-session-1', 'mcp-session-2'], 2]);
  });

  it('refuses a session past --max-sessions with 503, naming the limit', async () => {
    const f = await front({ maxSessions: 1 });
    await connect(f);
    const r = await post(f, INITIALIZE);
    expect([r.status, await r.json()]).toMatchObject([
      503,
      { id: 1, error: { message: expect.stringContaining('of at most 1 (--max-sessions)') } },
    ]);
  });

  it('takes a new session once one has ended, at --max-sessions', async () => {
    const f = await front({ maxSessions: 1 });
    await (await connect(f)).transport.terminateSession();
    const { client } = await connect(f);
    expect(textOf(await client.callTool({ name: 'echo', arguments: { message: 'b' } }))).toBe('b');
  });

  it('has stopped the upstream of a session once its DELETE is answered', async () => {
    const f = await front();
    const { client, transport } = await connect(f);
    await client.callTool({ name: 'echo', arguments: { message: 'hi' } });
    const [pid] = upstreams(f) as [number];
    expect(alive(pid)).toBe(true);
    await transport.terminateSession();
    expect(alive(pid)).toBe(false);
  });

  it('records the session ended once its DELETE is answered', async () => {
    const f = await front();
    const { transport } = await connect(f);
    await transport.terminateSession();
    expect(f.logs).toContain('leash mcp: session plan "mcp-session-1" ended');
  });

  /** A listener whose sessions end after a minute idle by `clock`, with a client that made a call. */
  async function quietMinute(clock: ManualClock) {
    const f = await front({
      service: new AutonomyGuardrailService({ store: new MemoryStore(), clock }),
      idleTimeoutMs: 60_000,
    });
    const { client } = await connect(f);
    await client.callTool({ name: 'echo', arguments: { message: 'hi' } });
    return { f, client };
  }

  it('ends a session its client left without a DELETE once idle for the timeout, stopping its upstream', async () => {
    const clock = new ManualClock(T0);
    const { f, client } = await quietMinute(clock);
    const [pid] = upstreams(f) as [number];
    await client.close(); // the SDK's close sends no DELETE
    // Its streams close as the client goes; a minute after the last of them, the session has been idle
    // that long.
    await expect
      .poll(async () => {
        clock.advance(60_000);
        return f.expireIdle();
      })
      .toBe(1);
    expect(alive(pid)).toBe(false);
  });

  it('keeps a session whose client holds its event stream open, however long it is quiet', async () => {
    const clock = new ManualClock(T0);
    const { f, client } = await quietMinute(clock);
    clock.advance(3_600_000);
    expect(await f.expireIdle()).toBe(0);
    expect(textOf(await client.callTool({ name: 'echo', arguments: { message: 'still' } }))).toBe('still');
  });

  it('ends every session and stops their upstreams when it closes', async () => {
    const f = await front();
    await connect(f);
    await connect(f);
    await f.close();
    expect(upstreams(f).filter(alive)).toEqual([]);
  });

  it('answers the initialize of a session that cannot start with an error, and logs why', async () => {
    const store = new MemoryStore();
    store.listPlans = () => Promise.reject(new Error('the plans cannot be read'));
    const f = await front({ service: new AutonomyGuardrailService({ store }) });
    const r = await post(f, INITIALIZE);
    expect([r.status, await r.json()]).toMatchObject([
      500,
      { id: 1, error: { message: expect.stringContaining('the plans cannot be read') } },
    ]);
    expect(f.logs.join('\n')).toContain('leash mcp: a session could not start: the plans cannot be read');
  });

  it('answers 500 when the store cannot tell who sent a request, logging why and telling the client nothing of it', async () => {
    const store = new SqliteStore({ path: newFile() });
    await store.migrate();
    await store.close();
    const f = await front({ service: new AutonomyGuardrailService({ store }) });
    const r = await post(f, INITIALIZE);
    expect([r.status, await r.text()]).toEqual([500, expect.not.stringContaining('closed')]);
    expect(f.logs.join('\n')).toContain(
      'leash mcp: the token of a request could not be checked: the store is closed',
    );
  });

  it('refuses a limit of sessions that is not a positive integer before listening', async () => {
    const error = await front({ maxSessions: 0 }).catch((e: unknown) => e);
    expect(isGuardrailValidationError(error) && error.field).toBe('maxSessions');
  });
});

describe('leash mcp --listen: streams', () => {
  it('replays to a client that resumes with Last-Event-ID the answer it missed', async () => {
    const f = await front();
    const session = await rawSession(f);
    const headers = { 'Mcp-Session-Id': session };
    const dropped = new AbortController();
    const hold = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'hold', arguments: {} } };
    const held = await post(f, hold, headers, dropped.signal);
    const primed = (await events(held).next()).value as { id: string };
    dropped.abort();
    const release = {
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'release', arguments: {} },
    };
    await answerTo(events(await post(f, release, headers)), 3);

    const resumed = await fetch(f.url, {
      headers: {
        Authorization: `Bearer ${f.token}`,
        Accept: 'text/event-stream',
        'Mcp-Session-Id': session,
        'Last-Event-ID': primed.id,
      },
    });
    expect(await answerTo(events(resumed), 2)).toMatchObject({
      result: { content: [{ type: 'text', text: 'released' }] },
    });
  });
});

describe('the events a session keeps', () => {
  it('replays the events of the stream after the one given, and none of another stream', async () => {
    const store = new SessionEvents();
    const first = await store.storeEvent('a', { jsonrpc: '2.0', method: 'one' });
    await store.storeEvent('b', { jsonrpc: '2.0', method: 'other' });
    await store.storeEvent('a', { jsonrpc: '2.0', method: 'two' });
    const sent: unknown[] = [];
    const stream = await store.replayEventsAfter(first, { send: async (_id, m) => void sent.push(m) });
    expect([stream, sent]).toEqual(['a', [{ jsonrpc: '2.0', method: 'two' }]]);
  });

  it('keeps the newest events of the session only', async () => {
    const store = new SessionEvents(2);
    const ids = [];
    for (const method of ['one', 'two', 'three', 'four']) {
      ids.push(await store.storeEvent('a', { jsonrpc: '2.0', method }));
    }
    const sent: unknown[] = [];
    await store.replayEventsAfter(ids[0] as string, { send: async (_id, m) => void sent.push(m) });
    expect(sent).toEqual([
      { jsonrpc: '2.0', method: 'three' },
      { jsonrpc: '2.0', method: 'four' },
    ]);
  });

  it('keeps no more of the session’s events than its bound of bytes, the newest always', async () => {
    const big = (method: string) => ({ jsonrpc: '2.0' as const, method, params: { text: 'x'.repeat(100) } });
    const size = JSON.stringify(big('m1')).length;
    const store = new SessionEvents(1_000, size * 2);
    const ids = [];
    for (const method of ['m1', 'm2', 'm3', 'm4']) ids.push(await store.storeEvent('a', big(method)));
    const sent: unknown[] = [];
    await store.replayEventsAfter(ids[0] as string, { send: async (_id, m) => void sent.push(m) });
    expect(sent).toEqual([big('m3'), big('m4')]);
  });

  it('knows no event id it did not give', async () => {
    const store = new SessionEvents();
    await store.storeEvent('a', { jsonrpc: '2.0', method: 'one' });
    expect(await store.getStreamIdForEventId('a:2')).toBeUndefined();
  });
});

// Fifty upstream processes start at once: on a loaded machine that takes a while.
describe('fifty sessions at once', { timeout: 60_000 }, () => {
  it('each run under a plan of its own whose call is audited and verifies, and leave no upstream', async () => {
    const store = new SqliteStore({ path: newFile() });
    await store.migrate();
    closeAfter(() => store.close());
    const f = await front({ service: new AutonomyGuardrailService({ store }), maxSessions: 50 });

    const answers = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const { client, transport } = await connect(f);
        const r = await client.callTool({ name: 'echo', arguments: { message: `client ${i}` } });
        await transport.terminateSession();
        return textOf(r);
      }),
    );

    expect(answers).toEqual(Array.from({ length: 50 }, (_, i) => `client ${i}`));
    const plans = (await store.listPlans()).map((p) => p.planId);
    expect(plans).toHaveLength(50);
    for (const planId of plans) {
      const calls = (await store.readAuditLog(planId)).filter((e) => e.entry.details['tool'] === 'echo');
      expect(calls.length).toBeGreaterThan(0);
      expect((await verifyAuditLog(store, planId)).ok).toBe(true);
    }
    expect(upstreams(f)).toHaveLength(50);
    expect(upstreams(f).filter(alive)).toEqual([]);
  });
});
