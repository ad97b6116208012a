import type { Client, Pool, PoolClient, PoolConfig } from 'pg';
import { driver } from '../drivers.js';

// The pool a PostgreSQL store makes for itself from a URL, and how it ends it on a network gone silent.

/** A pool the store made, and ends. */
export interface OwnPool {
  readonly pool: Pool;
  /**
   * Ends the pool. pg says goodbye on each connection and waits for the server to close it, which a
   * silent network never does: a connection still open `graceMs` after its goodbye is dropped.
   */
  end(graceMs: number): Promise<void>;
}

/** Makes a pool from `config`, with listeners for its connections' errors. */
export function ownPool(config: PoolConfig): OwnPool {
  const pool = new (driver('pg').Pool)(config);
  const open = new Set<PoolClient>();
  const inUse = new Set<PoolClient>();
  // An idle connection that breaks emits 'error' on the pool, which would end the process when
  // unheard; the next query reports the failure instead.
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    // A connection the server ends can emit 'error' again after the query it failed has let go of it
    // (pg-pool's own query listens once): each connection keeps a listener for its whole life, and
    // the query, or the next one, reports the failure.
    client.on('error', () => {});
    open.add(client);
    client.once('end', () => open.delete(client));
  });
  pool.on('acquire', (client) => inUse.add(client));
  pool.on('release', (_error, client) => inUse.delete(client));
  return {
    pool,
    async end(graceMs) {
      const closing: Promise<void>[] = [];
      const close = (client: PoolClient): void => {
        if (open.has(client)) closing.push(closed(client, graceMs));
      };
      // Idle connections are told goodbye when the pool ends; those in use, when they are given back.
      for (const client of open) if (!inUse.has(client)) close(client);
      pool.on('release', (_error, client) => close(client));
      await pool.end();
      await Promise.all(closing);
    },
  };
}

/** Resolves once `client` has closed, closing it without a goodbye after `graceMs`. */
function closed(client: PoolClient, graceMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      (client as unknown as Client).connection.stream.destroy();
      resolve();
    }, graceMs);
    client.once('end', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
