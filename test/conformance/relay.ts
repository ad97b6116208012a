// The conformance suite cannot send a header of its own (its clients take a bare URL), and `leash mcp
// --listen` answers only requests that carry its bearer token: the tests put this relay between them. It
// passes each request on with the token added, and streams the answer back. A Host or Origin that names
// the relay is made to name leash, as a reverse proxy does; any other (the suite's DNS-rebinding
// scenario sends one) goes on as it came, for leash to judge.
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RunningServer } from '../support/everything.js';

/** A relay on 127.0.0.1 to the MCP endpoint `target` that adds `Authorization: Bearer <token>`. */
export async function bearerRelay(target: string, token: string): Promise<RunningServer> {
  const to = new URL(target);
  let self = '';
  const onward = (value: string | undefined, prefix: string): string | undefined =>
    value === `${prefix}${self}` ? `${prefix}${to.host}` : value;
  const relay = createServer((req, res) => {
    const host = onward(req.headers.host, '');
    const origin = onward(req.headers.origin, 'http://');
    const forward = request(
      {
        hostname: to.hostname,
        port: to.port,
        method: req.method,
        path: req.url,
        headers: {
          ...req.headers,
          ...(host === undefined ? {} : { host }),
          ...(origin === undefined ? {} : { origin }),
          authorization: `Bearer ${token}`,
        },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.once('error', (error) => {
      if (!res.headersSent) res.writeHead(502);
      res.end(`relay: ${error.message}`);
    });
    // A client that goes away takes its request to leash with it (an SSE stream it stopped reading).
    res.once('close', () => forward.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const { port } = relay.address() as AddressInfo;
  self = `127.0.0.1:${port}`;
  return {
    url: `http://127.0.0.1:${port}${to.pathname}`,
    stop: () =>
      new Promise<void>((resolve) => {
        relay.closeAllConnections();
        relay.close(() => resolve());
      }),
  };
}
