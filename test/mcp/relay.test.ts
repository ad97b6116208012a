// The relay's own duties, apart from any guard: a session that ends waits for the answers leash makes.
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { describe, expect, it } from 'vitest';
import { Relay, type Reply } from '../../src/mcp/relay.js';

/** An upstream McpServer linked in memory, opened when the relay asks. */
async function upstream() {
  const [a, b] = InMemoryTransport.createLinkedPair();
  await new McpServer({ name: 'upstream', version: '1' }).connect(b);
  return a;
}

/** The relay's client end, started and recording what it receives. */
async function clientOf(relay: Relay) {
  const [client, end] = InMemoryTransport.createLinkedPair();
  await relay.connect(end);
  const received: unknown[] = [];
  client.onmessage = (m) => void received.push(m);
  await client.start();
  return { client, received };
}

const initialize = (protocolVersion: string) =>
  ({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion, capabilities: {}, clientInfo: { name: 'c', version: '1' } },
  }) as const;

describe('initialization over a front that checks protocol versions', () => {
  it('refuses an upstream that settles on a version the front cannot carry, naming it, and ends', async () => {
    const relay = new Relay({ upstream, protocolVersions: ['2025-06-18'] });
    const { client, received } = await clientOf(relay);
    await client.send(initialize('2025-03-26'));
    await relay.closed;
    expect(received).toMatchObject([
      { id: 1, error: { message: expect.stringContaining('protocol version 2025-03-26') } },
    ]);
  });
});

describe('a session that ends', () => {
  it('waits for the answer leash is making to a call it aborted before it closes', async () => {
    const events: string[] = [];
    let asked!: () => void;
    const calling = new Promise<void>((resolve) => (asked = resolve));
    const relay = new Relay({
      upstream,
      hooks: {
        // Made a turn after the call is aborted, as a guard records the charge of a call cut short.
        answer: (request) =>
          new Promise<Reply>((resolve) => {
            asked();
            request.signal.addEventListener('abort', () =>
              setImmediate(() => {
                events.push('answered');
                resolve({ result: { content: [] } });
              }),
            );
          }),
      },
    });
    const [client, end] = InMemoryTransport.createLinkedPair();
    await relay.connect(end);
    client.onclose = () => void events.push('client closed');
    await client.start();
    const params = {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'c', version: '1' },
    };
    await client.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params });
    await client.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'any' } });
    await calling;
    await relay.close();
    expect(events).toEqual(['answered', 'client closed']);
  });
});
