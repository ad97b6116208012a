// `leash mcp --listen` once the store knows people: each request carries a personal token, each session
// is its person's (its plan labelled user=<id>, their spend caps applying), and no other token may use it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { isGuardrailValidationError } from '../../src/errors.js';
import { startMcpListener, type McpListenerOptions } from '../../src/mcp/listen.js';
import { validatePolicy } from '../../src/policy/policy.js';
import { AutonomyGuardrailService } from '../../src/service/AutonomyGuardrailService.js';
import { MemoryStore } from '../../src/store/memory/MemoryStore.js';
import { ManualClock } from '../../src/clock.js';
import { T0 } from '../support/service.js';
import { tempFiles } from '../support/tempFiles.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const UPSTREAM = join(ROOT, 'test/support/mcp-upstream.mjs');
const SHARED = 'a-shared-token-of-thirty-two-characters';

const { closeAfter } = tempFiles('leash-listen-people-');

/** Each call of `echo` costs 1. */
const POLICY = validatePolicy({ version: 1, tools: { echo: { cost_per_call: 1 } } });

/**
 * A listener in front of the fixture, on a store that knows ann and bob, each with a personal token;
 * closed after the test.
 */
async function front(options: Partial<McpListenerOptions> = {}) {
  const pids = mkdtempSync(join(tmpdir(), 'leash-listen-people-pids-'));
  closeAfter(() => rmSync(pids, { recursive: true, force: true }));
  const service = new AutonomyGuardrailService({ store: new MemoryStore(), clock: new ManualClock(T0) });
  await service.addPrincipal({ id: 'ann', name: 'Ann', roles: ['dev'] });
  await service.addPrincipal({ id: 'bob', name: 'Bob', roles: ['dev'] });
  const ann = await service.createToken('ann');
  const bob = await service.createToken('bob');
  const listener = await startMcpListener({
    service,
    policy: POLICY,
    policyName: 'session',
    upstream: { command: process.execPath, args: [UPSTREAM, pids] },
    host: '127.0.0.1',
    port: 0,
    token: SHARED,
    ...options,
  });
  closeAfter(() => listener.close());
  return { url: listener.url, service, ann, bob };
}

/** An SDK client connected with `token`; closed after the test. */
async function connect(url: string, token: string) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(transport);
  closeAfter(() => client.close());
  const echo = async (message: string) =>
    (await client.callTool({ name: 'echo', arguments: { message } })) as CallToolResult;
  return { client, transport, echo };
}

/** A `tools/list` of session `session` with `token`, as a client would POST it. */
function listTools(url: string, token: string, session?: string) {
  return fetch(url, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'Mcp-Protocol-Version': LATEST_PROTOCOL_VERSION,
      ...(session === undefined ? {} : { 'Mcp-Session-Id': session }),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
  });
}

/** The labels of the only plan the service has. */
async function labelsOfOnlyPlan(service: AutonomyGuardrailService) {
  const [plan, ...more] = await service.store.listPlans();
  expect(more).toEqual([]);
  return (await service.getGuardrails(plan?.planId as string))?.labels;
}

const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');

// Each session starts an upstream process: on a loaded machine that takes a while.
describe('leash mcp --listen with personal tokens', { timeout: 60_000 }, () => {
  it('labels the plan of a session started with a personal token user=<its principal>', async () => {
    const f = await front();

    await connect(f.url, f.ann.token);

    expect(await labelsOfOnlyPlan(f.service)).toEqual({ user: 'ann' });
  });

  it('holds each person’s session to their own spend cap', async () => {
    const f = await front();
    await f.service.installSpendCaps([{ id: 'per-user', match: { user: '*' }, limit: 1, window: 'day' }]);
    const ann = await connect(f.url, f.ann.token);
    const bob = await connect(f.url, f.bob.token);

    const first = await ann.echo('one');
    const second = await ann.echo('two');
    const bobs = await bob.echo('his');

    expect([textOf(first), textOf(bobs)]).toEqual(['one', 'his']);
    expect(second.isError).toBe(true);
    expect(textOf(second)).toContain('budget_cap_blocked');
  });

  it('refuses a request with the shared token with 401', async () => {
    const f = await front();

    const r = await listTools(f.url, SHARED);

    expect(r.status).toBe(401);
  });

  it('refuses a token revoked after the session started on its next request, not repeating it', async () => {
    const f = await front();
    const { transport } = await connect(f.url, f.ann.token);
    await f.service.revokeToken(f.ann.record.id);

    const r = await listTools(f.url, f.ann.token, transport.sessionId);

    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toBe('Bearer realm="leash mcp", error="invalid_token"');
    expect(await r.text()).not.toContain(f.ann.token);
  });

  it('refuses another person’s token on a session with 403', async () => {
    const f = await front();
    const { transport } = await connect(f.url, f.ann.token);

    const r = await listTools(f.url, f.bob.token, transport.sessionId);

    expect(r.status).toBe(403);
  });

  it('refuses a user label before listening, since each session’s comes from its token', async () => {
    const error = await front({ labels: { user: 'eve' } }).catch((e: unknown) => e);

    expect(isGuardrailValidationError(error) && error.field).toBe('labels');
  });
});
