import type { Pool } from 'pg';
import { z } from 'zod';
import { GuardrailValidationError } from '../../errors.js';
import { handle, parseOptions } from '../../validation.js';
import { STORE_OPTIONS, type CheckpointOptions, type CheckpointPolicy } from '../checkpoints.js';
import { driver } from '../drivers.js';

// The options of the PostgreSQL store: checked, naming the field, and turned into its pool.

/** Options of a {@link PostgresStore}: exactly one of `pool` and `url`. */
export interface PostgresStoreOptions {
  /**
   * A pool the caller owns: the store uses it and never ends it. Its owner listens for its 'error' event,
   * which a connection idle in it emits when the server ends it; the store listens to those it holds.
   */
  pool?: Pool;
  /** A connection string: the store creates a pool of its own and ends it on `close()`. */
  url?: string;
  /** The schema holding the tables; default `public`. `migrate()` creates it when it is missing. */
  schema?: string;
  /** Put before every table name, so several stores can share a schema; default `leash_`. */
  tablePrefix?: string;
  /** How many audit entries `get` returns per plan (the tables keep every entry); default 1000. */
  auditCapacity?: number;
  /** Write a (signed) checkpoint of a plan's log every `every` entries, in the transaction of the entry. */
  checkpoints?: CheckpointOptions;
}

/** A store's settings, as its options give them (checked, naming the field), and its pool. */
export interface PostgresSettings {
  readonly auditCapacity: number;
  readonly schema: string;
  readonly tablePrefix: string;
  readonly checkpoints: CheckpointPolicy | null;
  readonly pool: Pool;
  /** True when the store made the pool, and so ends it. */
  readonly ownsPool: boolean;
}

// Schema and table prefix go into SQL identifiers, so they are held to a plain lower-case form that
// needs no escaping and leaves room for the longest table name within PostgreSQL's 63 bytes.
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,30}$/;
const IDENTIFIER_RULE = `a lower-case SQL identifier matching ${IDENTIFIER}`;
const identifier = z.string({ error: IDENTIFIER_RULE }).regex(IDENTIFIER, { error: IDENTIFIER_RULE });

const postgresStoreOptions = z.object({
  // Duck-typed, so that a pool of another copy of pg is accepted.
  pool: handle<Pool>(
    'a pg.Pool',
    (v) => typeof (v as { connect?: unknown } | null)?.connect === 'function',
  ).optional(),
  url: z.string({ error: 'a connection string' }).min(1, { error: 'a connection string' }).optional(),
  schema: identifier
    .refine((name) => !name.startsWith('pg_'), { error: 'a name not starting with pg_' })
    .default('public'),
  tablePrefix: identifier.default('leash_'),
  ...STORE_OPTIONS,
});

/** Checks a PostgresStore's options, and makes its pool from `url` or takes the one given. */
export function postgresSettings(options: PostgresStoreOptions): PostgresSettings {
  const { auditCapacity, schema, tablePrefix, checkpoints, ...o } = parseOptions(
    postgresStoreOptions,
    options,
  );
  if ((o.pool === undefined) === (o.url === undefined)) {
    throw new GuardrailValidationError('pool', 'give exactly one of pool and url');
  }
  if (o.url !== undefined) {
    const pool = new (driver('pg').Pool)({
      connectionString: o.url,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    });
    // An idle connection that breaks emits 'error' on the pool, which would end the process when
    // unheard; the next query reports the failure instead.
    pool.on('error', () => {});
    // A connection the server ends can emit 'error' again after the query it failed has let go of it
    // (pg-pool's own query listens once): each connection keeps a listener for its whole life, and
    // the query, or the next one, reports the failure.
    pool.on('connect', (client) => client.on('error', () => {}));
    return { auditCapacity, schema, tablePrefix, checkpoints, pool, ownsPool: true };
  }
  return { auditCapacity, schema, tablePrefix, checkpoints, pool: o.pool as Pool, ownsPool: false };
}

// Owned pools give up waiting for a connection after this long instead of hanging a check.
export const CONNECT_TIMEOUT_MS = 10_000;
