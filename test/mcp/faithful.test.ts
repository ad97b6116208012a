// What a client sees through the proxy against what it sees of the same server directly: the server's
// requests of the client, notifications in their order, errors as written, initialization. An upstream
// McpServer, the proxy and SDK clients, linked in memory.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CreateMessageRequestSchema,
  ErrorCode,
  McpError,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type ClientCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AutonomyGuardrailService,
  ManualClock,
  MemoryStore,
  RunGuard,
  validatePolicy,
} from '../../src/index.js';
import { createMcpProxy } from '../../src/mcp/proxy.js';
import { policyToGuardrailsInit, toolRules } from '../../src/policy/policy.js';
import { mcpRules } from '../../src/mcp/rules.js';

const PLAN = 'session';
const CAPABILITIES: ClientCapabilities = { sampling: {}, elicitation: {}, roots: { listChanged: true } };

/** A server that asks its client things from its tools, reports progress, and fails in its own words. */
function upstreamServer(): McpServer {
  const server = new McpServer({ name: 'upstream', version: '1.0.0' });
  server.registerTool('sample', {}, async () => {
    const r = await server.server.createMessage({
      messages: [{ role: 'user', content: { type: 'text', text: 'say hi' } }],
      maxTokens: 10,
    });
    return { content: [{ type: 'text', text: `sampled: ${JSON.stringify(r.content)}` }] };
  });
  server.registerTool('ask', {}, async () => {
    const r = await server.server.elicitInput({
      message: 'your name?',
      requestedSchema: { type: 'object', properties: { name: { type: 'string' } } },
    });
    return { content: [{ type: 'text', text: `${r.action}: ${JSON.stringify(r.content ?? null)}` }] };
  });
  server.registerTool('roots', {}, async () => {
    const r = await server.server.listRoots();
    return { content: [{ type: 'text', text: r.roots.map((root) => root.uri).join(',') }] };
  });
  server.registerTool('count', {}, async (extra) => {
    const progressToken = extra._meta?.progressToken as string;
    for (let progress = 1; progress <= 4; progress++) {
      await extra.sendNotification({
        method: 'notifications/progress',
        params: { progressToken, progress, total: 4 },
      });
    }
    return { content: [{ type: 'text', text: 'counted' }] };
  });
  server.registerTool('strict', { inputSchema: { n: z.number() } }, async ({ n }) => ({
    content: [{ type: 'text', text: `n=${n}` }],
  }));
  server.registerResource('readme', 'file:///readme', {}, async (uri) => ({
    contents: [{ uri: uri.href, text: 'read me' }],
  }));
  return server;
}

type Upstream = McpServer | Server;

/** A client with `capabilities` that answers sampling, elicitation and roots, linked to `transport`. */
async function clientOn(transport: InMemoryTransport, capabilities = CAPABILITIES): Promise<Client> {
  const client = new Client({ name: 'editor', version: '1' }, { capabilities });
  if (capabilities.sampling) {
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({
      role: 'assistant',
      content: { type: 'text', text: 'hi' },
      model: 'test-model',
    }));
  }
  if (capabilities.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => ({
      action: 'accept',
      // leash's own question asks for nothing; the server's asks for a name.
      content:
        'requestedSchema' in request.params && 'name' in request.params.requestedSchema.properties
          ? { name: 'ann' }
          : {},
    }));
  }
  if (capabilities.roots) {
    client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///work' }] }));
  }
  await client.connect(transport);
  return client;
}

/** A client of `server` with nothing between them. */
async function direct(server: Upstream, capabilities?: ClientCapabilities): Promise<Client> {
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(b);
  return clientOn(a, capabilities);
}

/** A client of `server` through the proxy, on a plan with no limits but the policy's. */
/** Opens a link to `server` each time the proxy asks for its upstream, counting how many it opened. */
function linkTo(server: Upstream): { open: () => Promise<Transport>; opened: () => number } {
  let opened = 0;
  return {
    open: async () => {
      opened++;
      const [a, b] = InMemoryTransport.createLinkedPair();
      await server.connect(b);
      return a;
    },
    opened: () => opened,
  };
}

/** The proxy in front of `upstream` on a plan with no limits but the policy's; `client` is its client's end. */
async function proxyTo(upstream: () => Transport | Promise<Transport>, policy: unknown = { version: 1 }) {
  const p = validatePolicy(policy);
  const store = new MemoryStore();
  const service = new AutonomyGuardrailService({ clock: new ManualClock(Date.UTC(2026, 0, 1)), store });
  await service.configureGuardrails(PLAN, policyToGuardrailsInit(p));
  const proxy = createMcpProxy({
    upstream,
    guard: new RunGuard({ service, planId: PLAN, recordCalls: true, tools: toolRules(p) }),
    rules: mcpRules(p),
  });
  const [client, end] = InMemoryTransport.createLinkedPair();
  await proxy.connect(end);
  const spent = async () => (await service.getGuardrails(PLAN))?.budgetSpent;
  return { client, store, spent, proxy };
}

/** A client of `server` through the proxy. */
async function proxied(server: Upstream, capabilities?: ClientCapabilities, policy?: unknown) {
  const link = linkTo(server);
  const { client: end, store } = await proxyTo(link.open, policy);
  const openedBeforeClient = link.opened();
  const client = await clientOn(end, capabilities);
  return { client, store, openedBeforeClient };
}

const text = (r: unknown) =>
  (r as CallToolResult).content.map((c) => (c.type === 'text' ? c.text : '')).join('');

/** The error a promise rejects with, as the client shows it. */
const failure = (p: Promise<unknown>) =>
  p.then(
    () => 'resolved',
    (e: unknown) => (e instanceof Error ? `${(e as { code?: unknown }).code} ${e.message}` : String(e)),
  );

describe('the server’s requests of the client', () => {
  it('relays a sampling request to the client and its answer back', async () => {
    const { client } = await proxied(upstreamServer());
    expect(text(await client.callTool({ name: 'sample' }))).toBe('sampled: {"type":"text","text":"hi"}');
  });

  it('relays an elicitation request of the server untouched, not as a confirmation of leash', async () => {
    const { client, store } = await proxied(upstreamServer());
    expect(text(await client.callTool({ name: 'ask' }))).toBe('accept: {"name":"ann"}');
    expect(await store.listApprovals({ planId: PLAN })).toEqual([]);
  });

  it('relays a roots request to the client', async () => {
    const { client } = await proxied(upstreamServer());
    expect(text(await client.callTool({ name: 'roots' }))).toBe('file:///work');
  });

  it('gives the server the client’s own error for a request the client cannot serve', async () => {
    const none: ClientCapabilities = {};
    const directly = text(await (await direct(upstreamServer(), none)).callTool({ name: 'roots' }));
    const through = text(await (await proxied(upstreamServer(), none)).client.callTool({ name: 'roots' }));
    expect(through).toBe(directly);
  });

  it('keeps the server’s elicitation apart from leash’s own confirmation in the same session', async () => {
    const policy = { version: 1, mcp: { confirm_destructive: true } };
    const { client, store } = await proxied(upstreamServer(), CAPABILITIES, policy);
    // `ask` has no annotations: leash asks first (its own elicitation, accepted), then the server asks.
    expect(text(await client.callTool({ name: 'ask' }))).toBe('accept: {"name":"ann"}');
    const approvals = await store.listApprovals({ planId: PLAN });
    expect(approvals.map((a) => [a.toolName, a.status])).toEqual([['ask', 'used']]);
  });
});

describe('notifications and results in the server’s order', () => {
  it('delivers every progress notification of a call before its result, 20 calls out of 20', async () => {
    const { client } = await proxied(upstreamServer());
    const sequences = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const seen: string[] = [];
        await client.callTool({ name: 'count' }, undefined, {
          onprogress: (p) => void seen.push(`${p.progress}/${p.total}`),
        });
        seen.push('result');
        return seen.join(' ');
      }),
    );
    expect(new Set(sequences)).toEqual(new Set(['1/4 2/4 3/4 4/4 result']));
  });

  it('passes on a tools/list_changed the server sends as the client initializes', async () => {
    const server = upstreamServer();
    server.server.oninitialized = () => server.sendToolListChanged();
    let changed = 0;
    const { client: end } = await proxyTo(linkTo(server).open);
    const client = new Client({ name: 'editor', version: '1' });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
    await client.connect(end);
    await expect.poll(() => changed).toBe(1);
  });
  it.each([
    ['resources/read', (c: Client) => c.readResource({ uri: 'file:///a' })],
    ['tools/call', (c: Client) => c.callTool({ name: 'any' })],
  ])(
    'keeps a notification the server sends right after its answer to %s after that answer',
    async (asked, ask) => {
      const [up, server] = InMemoryTransport.createLinkedPair();
      // A server scripted message by message: it answers, then at once tells of an update.
      server.onmessage = (m) => {
        const { id, method } = m as { id?: number; method?: string };
        if (method === 'initialize') {
          void server.send({
            jsonrpc: '2.0',
            id: id as number,
            result: {
              protocolVersion: '2025-06-18',
              capabilities: { resources: {}, tools: {} },
              serverInfo: { name: 's', version: '1' },
            },
          });
        } else if (method === asked) {
          const result = asked === 'tools/call' ? { content: [] } : { contents: [] };
          void server.send({ jsonrpc: '2.0', id: id as number, result });
          void server.send({
            jsonrpc: '2.0',
            method: 'notifications/resources/updated',
            params: { uri: 'file:///a' },
          });
        }
      };
      await server.start();
      const { client: c1 } = await proxyTo(() => up);
      const client = new Client({ name: 'editor', version: '1' });
      await client.connect(c1);
      const seen: string[] = [];
      const receive = c1.onmessage;
      c1.onmessage = (m, extra) => {
        seen.push('method' in m ? m.method : 'answer');
        receive?.(m, extra);
      };
      await ask(client);
      await expect.poll(() => seen).toEqual(['answer', 'notifications/resources/updated']);
    },
  );
});

describe('errors as the server wrote them', () => {
  it('answers a failed resources/read with the server’s error, not prefixed', async () => {
    const read = (c: Client) => failure(c.readResource({ uri: 'file:///missing' }));
    const directly = await read(await direct(upstreamServer()));
    expect(directly).toContain('not found');
    expect(await read((await proxied(upstreamServer())).client)).toBe(directly);
  });

  it('answers a tools/call the server refuses with its JSON-RPC error as it is', async () => {
    const refusing = () => {
      const server = new Server({ name: 'strict', version: '1' }, { capabilities: { tools: {} } });
      server.setRequestHandler(CallToolRequestSchema, async () => {
        throw new McpError(ErrorCode.InvalidParams, 'no such tool: nope');
      });
      return server;
    };
    const call = (c: Client) => failure(c.callTool({ name: 'nope' }));
    const directly = await call(await direct(refusing()));
    expect(directly).toMatch(/^-32602 .*no such tool: nope$/);
    expect(await call((await proxied(refusing())).client)).toBe(directly);
  });

  it('answers tools/list of a server without tools with the server’s own error', async () => {
    const bare = () => new Server({ name: 'bare', version: '1' }, { capabilities: { prompts: {} } });
    const list = (c: Client) => failure(c.request({ method: 'tools/list' }, z.looseObject({})));
    const directly = await list(await direct(bare()));
    expect(directly).toContain('-32601');
    expect(await list((await proxied(bare())).client)).toBe(directly);
  });
});

describe('initialization', () => {
  it('starts the upstream only once the client sent initialize', async () => {
    const { openedBeforeClient } = await proxied(upstreamServer());
    expect(openedBeforeClient).toBe(0);
  });

  it('initializes the upstream with the client’s protocol version, capabilities and name', async () => {
    const [seen, seenDirectly] = [upstreamServer(), upstreamServer()];
    await direct(seenDirectly);
    const { client } = await proxied(seen);
    const initialized = (s: McpServer) => ({
      capabilities: s.server.getClientCapabilities(),
      client: s.server.getClientVersion(),
    });
    expect(initialized(seen)).toEqual(initialized(seenDirectly));
    expect(initialized(seen).capabilities).toMatchObject(CAPABILITIES);
    expect(await client.ping()).toEqual({});
  });

  it('initializes the upstream with the protocol version the client asked for', async () => {
    const { client: c1 } = await proxyTo(linkTo(upstreamServer()).open);
    const answers: unknown[] = [];
    c1.onmessage = (m) => void answers.push(m);
    await c1.start();
    const older = '2025-03-26';
    await c1.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: older, capabilities: {}, clientInfo: { name: 'old-editor', version: '1' } },
    });
    await expect.poll(() => answers).toMatchObject([{ id: 1, result: { protocolVersion: older } }]);
  });

  it('answers the client’s initialize with why the upstream could not start, and ends the session', async () => {
    const { client: c1, proxy } = await proxyTo(() => {
      throw new Error('spawn nosuchserver ENOENT');
    });
    const client = new Client({ name: 'editor', version: '1' });
    await expect(client.connect(c1)).rejects.toThrow(/could not be started: spawn nosuchserver ENOENT/);
    await proxy.closed;
  });

  it('shows the server’s own name, with leash’s in its title', async () => {
    const { client } = await proxied(upstreamServer());
    expect(client.getServerVersion()).toEqual({
      name: 'upstream',
      version: '1.0.0',
      title: 'upstream (guarded by leash)',
    });
  });
});

describe('a request the upstream’s transport failed to send', () => {
  const POLICY = { version: 1, guardrails: { tool_budget: 10 }, tools: { strict: { cost_per_call: 2 } } };

  /** A proxy whose upstream transport fails the first tools/call, and the first ping, with `error`. */
  async function failingOnce(error: Error) {
    const link = linkTo(upstreamServer());
    const failing = new Set(['tools/call', 'ping']);
    const open = async () => {
      const t = await link.open();
      const send = t.send.bind(t);
      t.send = async (m, options) => {
        if (!failing.delete((m as { method?: string }).method ?? '')) return send(m, options);
        throw error;
      };
      return t;
    };
    const { client: end, spent } = await proxyTo(open, POLICY);
    return { client: await clientOn(end), spent };
  }
  const call = (c: Client) => c.callTool({ name: 'strict', arguments: { n: 1 } });

  it('charges the estimate of a call whose connection failed after the upstream may have taken it', async () => {
    const reset = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } });
    const { client, spent } = await failingOnce(reset);
    expect(text(await call(client))).toMatch(/may have run/);
    expect(await spent()).toBe(2);
  });

  it('charges nothing for a call the upstream could not be reached for, and goes on with the next', async () => {
    const refused = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    const { client, spent } = await failingOnce(refused);
    expect(text(await call(client))).toMatch(/was not sent/);
    expect(await spent()).toBe(0);
  });

  it('keeps the session after a refusal of the moment (503): the next call goes through', async () => {
    const busy = Object.assign(new Error('Streamable HTTP error: Service Unavailable'), { code: 503 });
    const { client } = await failingOnce(busy);
    await call(client);
    expect(text(await call(client))).toBe('n=1');
  });
});
