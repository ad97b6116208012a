// The relay's own duties, apart from any guard: a session that ends waits for the answers leash makes.
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { describe, expect, it } from 'vitest';
import { Relay, type Reply } from '../../src/mcp/relay.js';

describe('a session that ends', () => {
  it('waits for the answer leash is making to a call it aborted before it closes', async () => {
    const events: string[] = [];
    let asked!: () => void;
    const calling = new Promise<void>((resolve) => (asked = resolve));
    const relay = new Relay({
      upstream: async () => {
        const [a, b] = InMemoryTransport.createLinkedPair();
        await new McpServer({ name: 'upstream', version: '1' }).connect(b);
        return a;
      },
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
