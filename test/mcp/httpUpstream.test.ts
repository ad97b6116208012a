// The transport `leash mcp --upstream-url` reaches its server with: its SSE parser, fed the pieces a
// stream may come in, and the transport against a server of a few lines.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpUpstreamTransport } from '../../src/mcp/httpUpstream.js';
import { SseParser } from '../../src/mcp/sse.js';

/** The events and retry times `pieces` make, pushed one after the other. */
function parsed(pieces: readonly string[]): unknown[] {
  const seen: unknown[] = [];
  const parser = new SseParser(
    (e) => seen.push(e),
    (ms) => seen.push({ retry: ms }),
  );
  for (const p of pieces) parser.push(p);
  return seen;
}

describe('the SSE parser of the HTTP upstream', () => {
  it('reads lines whose CRLF is split between two pieces as one line end', () => {
    expect(parsed(['data: a\r', '\ndata: b\r', '\n\r', '\n'])).toEqual([
      { id: undefined, event: undefined, data: 'a\nb' },
    ]);
  });

  it('gives an event its id and type, and the retry time as told', () => {
    expect(parsed(['id: 7\nevent: message\nretry: 500\ndata: x\n\n'])).toEqual([
      { retry: 500 },
      { id: '7', event: 'message', data: 'x' },
    ]);
  });

  it('dispatches no event of no data line, and skips comments', () => {
    expect(parsed([': keep-alive\n\nid: 7\n\n', 'data:\n\n'])).toEqual([
      { id: undefined, event: undefined, data: '' },
    ]);
  });
});

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((resolve) => s.close(resolve));
});

/** A server answering every POST with an SSE stream of `body`. */
async function sseServer(body: string): Promise<URL> {
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'Content-Type': 'text/event-stream' }).end(body);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
}

describe('the HTTP upstream transport', () => {
  it('delivers the JSON-RPC messages of a request’s SSE answer, in order', async () => {
    const url = await sseServer(
      'data: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n' +
        'data: {"jsonrpc":"2.0","id":1,"result":{"a":"é"}}\n\n',
    );
    const transport = new HttpUpstreamTransport(url);
    const messages: JSONRPCMessage[] = [];
    const answered = new Promise<void>((resolve) => {
      transport.onmessage = (m) => {
        messages.push(m);
        if ('id' in m) resolve();
      };
    });
    await transport.start();
    await transport.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    await answered;
    await transport.close();
    expect(messages).toEqual([
      { jsonrpc: '2.0', method: 'notifications/progress' },
      { jsonrpc: '2.0', id: 1, result: { a: 'é' } },
    ]);
  });
});
