// What a client sees of server-everything over Streamable HTTP through `leash mcp --listen` against what it
// sees of it directly: the server's requests of the client, progress before results, errors as written.
// HTTP on both sides of leash, each client's session an upstream session of its own.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMcpListener, type RunningMcpListener } from '../../src/mcp/listen.js';
import { AutonomyGuardrailService } from '../../src/service/AutonomyGuardrailService.js';
import { MemoryStore } from '../../src/store/memory/MemoryStore.js';
import { startEverythingHttp, type RunningServer } from '../support/everything.js';

let upstream: RunningServer;
let listener: RunningMcpListener;
const clients: Client[] = [];

beforeAll(async () => {
  upstream = await startEverythingHttp();
  listener = await startMcpListener({
    service: new AutonomyGuardrailService({ store: new MemoryStore() }),
    policy: null,
    policyName: 'everything',
    upstream: { url: upstream.url },
    host: '127.0.0.1',
    port: 0,
  });
});

afterAll(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  await listener.close();
  await upstream.stop();
});

/** A client that samples, asks its user and has roots, connected directly or through leash. */
async function client(through: 'direct' | 'leash'): Promise<Client> {
  const c = new Client(
    { name: 'editor', version: '1' },
    { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } },
  );
  c.setRequestHandler(CreateMessageRequestSchema, async () => ({
    role: 'assistant',
    content: { type: 'text', text: 'sampled by the client' },
    model: 'test-model',
  }));
  c.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ann' } }));
  c.setRequestHandler(ListRootsRequestSchema, async () => ({
    roots: [{ uri: 'file:///work', name: 'work' }],
  }));
  const transport =
    through === 'direct'
      ? new StreamableHTTPClientTransport(new URL(upstream.url))
      : new StreamableHTTPClientTransport(new URL(listener.url), {
          requestInit: { headers: { Authorization: `Bearer ${listener.token}` } },
        });
  await c.connect(transport);
  clients.push(c);
  return c;
}

const text = (r: unknown) =>
  (r as CallToolResult).content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

/** What a tool answers the same client directly and through leash. */
async function both(name: string, args: Record<string, unknown> = {}): Promise<[string, string]> {
  const call = async (through: 'direct' | 'leash') =>
    text(await (await client(through)).callTool({ name, arguments: args }));
  return [await call('direct'), await call('leash')];
}

describe('leash mcp --listen in front of server-everything over HTTP', { timeout: 30_000 }, () => {
  it('offers the tools the server offers this client, those that ask the client included', async () => {
    const names = async (through: 'direct' | 'leash') =>
      (await (await client(through)).listTools()).tools.map((t) => t.name).sort();
    const directly = await names('direct');
    expect(directly).toEqual(expect.arrayContaining(['trigger-sampling-request', 'get-roots-list']));
    expect(await names('leash')).toEqual(directly);
  });

  it('relays the server’s sampling request to the client and its answer back', async () => {
    const [directly, through] = await both('trigger-sampling-request', { prompt: 'hi' });
    expect(directly).toContain('sampled by the client');
    expect(through).toBe(directly);
  });

  it('relays the server’s elicitation request to the client and its answer back', async () => {
    const [directly, through] = await both('trigger-elicitation-request');
    expect(directly).toContain('Ann');
    expect(through).toBe(directly);
  });

  it('relays the server’s roots request to the client', async () => {
    const [directly, through] = await both('get-roots-list');
    expect(directly).toContain('file:///work');
    expect(through).toBe(directly);
  });

  it('delivers every progress notification of a call before its result, 20 calls out of 20', async () => {
    const c = await client('leash');
    const sequences = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const seen: string[] = [];
        await c.callTool(
          { name: 'trigger-long-running-operation', arguments: { duration: 0.2, steps: 4 } },
          undefined,
          { onprogress: (p) => void seen.push(`${p.progress}/${p.total}`) },
        );
        seen.push('result');
        return seen.join(' ');
      }),
    );
    expect(new Set(sequences)).toEqual(new Set(['1/4 2/4 3/4 4/4 result']));
  });

  it('answers a read of a resource the server does not have with the server’s error as written', async () => {
    const read = async (through: 'direct' | 'leash') =>
      (await client(through)).readResource({ uri: 'demo://nothing/here' }).then(
        () => 'read',
        (e: Error) => e.message,
      );
    const directly = await read('direct');
    expect(directly).toMatch(/^MCP error -?\d+: /);
    expect(await read('leash')).toBe(directly);
  });
});
