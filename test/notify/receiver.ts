import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';
import { WebhookSecret } from '../../src/notify/standardWebhooks.js';
import type { DeliveryTarget } from '../../src/notify/targets.js';

/** A delivery as a receiver got it. */
export interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** What a receiver answers a delivery with: a status, or nothing at all (`hang`). */
export type Answer = number | 'hang';

export interface Receiver {
  readonly url: string;
  /** Every delivery it got, in order, whatever it answered. */
  readonly received: Received[];
  /** Resolves with the next delivery it gets. */
  next(): Promise<Received>;
}

const open: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of open.splice(0)) await close();
});

/**
 * A real HTTP server on a free port of 127.0.0.1, closed after the test, answering each delivery as
 * `answer` says (by the number of the delivery, from 0).
 */
export async function receiver(
  answer: (received: Received, index: number) => Answer = () => 200,
): Promise<Receiver> {
  const received: Received[] = [];
  let waiting: ((r: Received) => void)[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      received.push(r);
      const a = answer(r, received.length - 1);
      for (const resolve of waiting.splice(0)) resolve(r);
      if (a === 'hang') return;
      res.writeHead(a, { 'content-type': 'text/plain' }).end(a >= 200 && a < 300 ? 'ok' : 'no');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  open.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    next: () => new Promise((resolve) => (waiting = [...waiting, resolve])),
  };
}

/** A secret for tests: `whsec_` and 32 bytes. */
export const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

/** A webhook target of `url`, signed with {@link SECRET}. */
export function webhookTarget(name: string, url: string): DeliveryTarget {
  return { name, kind: 'webhook', url, events: ['*'], secret: WebhookSecret.parse(SECRET, 'secret') };
}

/** The headers a Standard Webhooks library wants, from what a receiver got. */
export function webhookHeaders(r: Received): Record<string, string> {
  const pick = (name: string) => String(r.headers[name] ?? '');
  return {
    'webhook-id': pick('webhook-id'),
    'webhook-timestamp': pick('webhook-timestamp'),
    'webhook-signature': pick('webhook-signature'),
  };
}
