// The conformance suite cannot send a header of its own (its clients take a bare URL), and `leash mcp
// --listen` answers only requests that carry its bearer token: the tests put this relay between them. It
// passes each request on as it came, its Host and Origin included (so leash judges those, not the relay),
// with the token added, and streams the answer back.
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RunningServer } from '../support/everything.js';

/** A relay on 127.0.0.1 to the MCP endpoint `target` that adds `Authorization: Bearer <token>`. */
export async function bearerRelay(target: string, token: string): Promise<RunningServer> {
  const to = new URL(target);
  const relay = createServer((req, res) => {
    const onward = request(
      {
        hostname: to.hostname,
        port: to.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, authorization: `Bearer ${token}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    onward.once('error', (error) => {
      if (!res.headersSent) res.writeHead(502);
      res.end(`relay: ${error.message}`);
    });
    // A client that goes away takes its request to leash with it (an SSE stream it stopped reading).
    res.once('close', () => onward.destroy());
    req.pipe(onward);
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const { port } = relay.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${to.pathname}`,
    stop: () =>
      new Promise<void>((resolve) => {
        relay.closeAllConnections();
        relay.close(() => resolve());
      }),
  };
}
