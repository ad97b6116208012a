// A `leash mcp` session in this process in front of a Streamable HTTP server in a process of its own
// (server-everything), which is killed while a call runs.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { AutonomyGuardrailService, MemoryStore, systemClock, validatePolicy } from '../../src/index.js';
import { runMcpSession } from '../../src/mcp/session.js';
import { startEverythingHttp, type RunningServer } from '../support/everything.js';

const LONG = 'trigger-long-running-operation';
const PLAN = 'http-session';

const running: RunningServer[] = [];
afterEach(async () => {
  for (const server of running.splice(0)) await server.stop();
});

/** server-everything over Streamable HTTP, stopped after the test. */
async function everythingOverHttp() {
  const server = await startEverythingHttp();
  running.push(server);
  return server;
}

const text = (r: unknown) =>
  (r as CallToolResult).content.map((c) => (c.type === 'text' ? c.text : '')).join('');

/** A session of leash mcp in this process in front of `url`, each tool costing what `costs` says. */
async function sessionTo(url: string, costs: Record<string, number>) {
  const store = new MemoryStore();
  const service = new AutonomyGuardrailService({ clock: systemClock, store });
  const tools = Object.fromEntries(Object.entries(costs).map(([t, cost]) => [t, { cost_per_call: cost }]));
  const policy = validatePolicy({ version: 1, guardrails: { tool_budget: 10 }, tools });
  const [c1, c2] = InMemoryTransport.createLinkedPair();
  const ended = new AbortController();
  const over = runMcpSession({
    service,
    policy,
    planId: PLAN,
    policyName: 'http',
    upstream: { url },
    clientTransport: c2,
    signal: ended.signal,
  });
  const client = new Client({ name: 'editor', version: '1' });
  await client.connect(c1);
  const spent = async () => (await service.getGuardrails(PLAN))?.budgetSpent;
  const end = async () => {
    ended.abort();
    await over;
  };
  return { client, store, spent, end };
}

describe('an HTTP upstream killed while a call runs', { timeout: 20_000 }, () => {
  async function session() {
    const upstream = await everythingOverHttp();
    return { upstream, ...(await sessionTo(upstream.url, { [LONG]: 2, echo: 1 })) };
  }

  /** Starts the long call and resolves once the server reported progress on it, with its answer. */
  async function inFlight(client: Client): Promise<{ answer: Promise<unknown> }> {
    let progressed!: () => void;
    const first = new Promise<void>((resolve) => (progressed = resolve));
    const answer = client.callTool({ name: LONG, arguments: { duration: 60, steps: 60 } }, undefined, {
      onprogress: () => progressed(),
      timeout: 120_000,
    });
    await first;
    return { answer };
  }

  it('answers the call in flight within a second, charged its estimate since it may have run', async () => {
    const s = await session();
    const { answer } = await inFlight(s.client);
    s.upstream.process.kill('SIGKILL');
    const killed = Date.now();
    const r = await answer;
    expect(Date.now() - killed).toBeLessThan(1_000);
    expect(text(r)).toMatch(/may have run, but no answer came \(the upstream server is gone/);
    expect(await s.spent()).toBe(2);
    await s.end();
  });

  it('refuses a later call without charging it, and records the refusal', async () => {
    const s = await session();
    const { answer } = await inFlight(s.client);
    s.upstream.process.kill('SIGKILL');
    await answer;
    const r = await s.client.callTool({ name: 'echo', arguments: { message: 'hi' } });
    expect(text(r)).toMatch(/the upstream server is gone .*"echo" was not sent and nothing was charged/);
    expect(await s.spent()).toBe(2);
    expect((await s.store.readAuditLog(PLAN)).at(-1)?.entry).toMatchObject({
      event_type: 'tool_calls_blocked',
      details: { tool: 'echo', limit: 0 },
    });
    await s.end();
  });
});

describe('an HTTP upstream that ends a call’s stream before its answer', () => {
  it('answers the call at once, charged its estimate, rather than waiting forever', async () => {
    const mcp = new McpServer({ name: 'closing', version: '1' });
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    mcp.registerTool('slow', {}, async () => {
      started();
      return new Promise(() => undefined);
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => 'only' });
    await mcp.connect(transport);
    // No stream for the server's own messages (GET), no event ids: a stream that ends cannot be resumed.
    const http = createServer((req, res) =>
      req.method === 'GET' ? void res.writeHead(405).end() : void transport.handleRequest(req, res),
    );
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const { port } = http.address() as AddressInfo;
    const { client, spent, end } = await sessionTo(`http://127.0.0.1:${port}/mcp`, { slow: 2 });
    const answer = client.callTool({ name: 'slow' }, undefined, { timeout: 120_000 });
    await running;
    await mcp.close(); // its transport ends every stream it has open
    expect(text(await answer)).toMatch(/may have run.*its stream ended before the answer/);
    expect(await spent()).toBe(2);
    await end();
    http.close();
  });
});
