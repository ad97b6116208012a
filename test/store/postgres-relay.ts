import { connect, createServer, type Socket } from 'node:net';

// A TCP relay between the PostgreSQL tests' stores and the server, which breaks the way networks do: it
// drops a connection, or goes silent — the sockets stay open and nothing more gets through, not even a
// close — as a link that fails without a reset (a cable pulled, a NAT or a firewall that forgot it).

/**
 * What happens to a connection when a fault strikes: `cut` closes it both ways; `silence` keeps it open
 * and passes nothing more either way; `silence answers` passes nothing more from the server, while what
 * the client sends still reaches it.
 */
export type Fault = 'cut' | 'silence' | 'silence answers';

export interface Relay {
  /** The server's URL with the relay's address in it. */
  readonly url: string;
  /**
   * Strikes `fault` on the server's next answer on any connection, the answer lost; with `after`, on
   * the answer to the first message from the client that holds this text (say `COMMIT`), that message
   * passed on. Resolves once it struck.
   */
  arm(fault: Fault, options?: { readonly after?: string }): Promise<void>;
  /** Makes every connection, open or to come, silent both ways from now on. */
  silence(): void;
  /** Closes every connection and stops listening. */
  close(): Promise<void>;
}

/** One relayed connection, and which ways it still passes data. */
interface Link {
  readonly client: Socket;
  server: Socket | undefined;
  toServer: boolean;
  toClient: boolean;
}

/** A relay on a free port of 127.0.0.1 to the server of `url`, passing everything until told otherwise. */
export async function relayTo(url: string): Promise<Relay> {
  const target = new URL(url);
  const sockets = new Set<Socket>();
  const links = new Set<Link>();
  let silent = false;
  let armed: { fault: Fault; after?: string; on?: Link; struck(): void } | undefined;

  const strike = (link: Link, fault: Fault): void => {
    if (fault === 'cut') {
      link.client.destroy();
      link.server?.destroy();
      return;
    }
    link.toClient = false;
    if (fault === 'silence') link.toServer = false;
  };

  const relay = createServer({ allowHalfOpen: true }, (client) => {
    const link: Link = { client, server: undefined, toServer: !silent, toClient: !silent };
    links.add(link);
    sockets.add(client);
    client.on('error', () => undefined);
    client.on('close', () => link.toServer && link.server?.destroy());
    if (silent) return;
    const server = connect({
      port: Number(target.port || 5432),
      host: target.hostname,
      allowHalfOpen: true,
    });
    link.server = server;
    sockets.add(server);
    server.on('error', () => undefined);
    client.on('data', (data: Buffer) => {
      if (armed?.after !== undefined && armed.on === undefined && data.includes(armed.after)) {
        armed.on = link;
      }
      if (link.toServer) server.write(data);
    });
    server.on('data', (data: Buffer) => {
      if (armed !== undefined && (armed.after === undefined || armed.on === link)) {
        const { fault, struck } = armed;
        armed = undefined;
        strike(link, fault);
        struck();
        return;
      }
      if (link.toClient) client.write(data);
    });
    client.on('end', () => link.toServer && server.end());
    server.on('end', () => link.toClient && client.end());
    server.on('close', () => link.toClient && client.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const relayed = new URL(url);
  relayed.hostname = '127.0.0.1';
  relayed.port = String((relay.address() as { port: number }).port);
  return {
    url: relayed.toString(),
    arm: (fault, options = {}) =>
      new Promise<void>((struck) => {
        armed = { fault, ...(options.after === undefined ? {} : { after: options.after }), struck };
      }),
    silence() {
      silent = true;
      for (const link of links) strike(link, 'silence');
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => relay.close(resolve));
    },
  };
}
