import type { Pool, PoolConfig } from 'pg';
import { z } from 'zod';
import { GuardrailValidationError } from '../../errors.js';
import { handle, integer, parseOptions } from '../../validation.js';
import { STORE_OPTIONS, type CheckpointOptions, type CheckpointPolicy } from '../checkpoints.js';
import { ownPool } from './pool.js';

// The options of the PostgreSQL store: checked, naming the field, and turned into its pool.

/** Options of a {@link PostgresStore}: exactly one of `pool` and `url`. */
export interface PostgresStoreOptions {
  /**
   * A pool the caller owns: the store uses it and never ends it. Its owner listens for its 'error' event,
   * which a connection idle in it emits when the server ends it; the store listens to those it holds.
   * The owner also sets its timeouts (those below apply only to a pool made from `url`): without a
   * `query_timeout`, a query on a connection that goes silent waits for ever.
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
  /**
   * How long to wait for a connection: to open one (TCP, TLS, authentication), or for one of the pool's
   * to be free; default 10 000 ms. Opening one takes well under a second on a healthy network; ten
   * leave room for a loaded server, and bound a check when the database cannot be reached.
   */
  connectionTimeoutMs?: number;
  /**
   * The server cancels a statement that runs longer (PostgreSQL's `statement_timeout`) and ends a session
   * left idle inside a transaction as long (`idle_in_transaction_session_timeout`), which unlocks a plan
   * whose writer went silent; default 30 000 ms. The store's statements take milliseconds: what takes
   * longer is waiting for a plan's row another writer holds, and thirty seconds lets a queue of writers
   * of one busy plan through while no check hangs for minutes. It bounds every statement of the store,
   * `migrate()` and pruning among them: raise it for a prune of millions of entries. `null` leaves both
   * to the server's settings (for a pooler such as PgBouncer that refuses them at connection).
   */
  statementTimeoutMs?: number | null;
  /**
   * How long the store waits for the answer to a query before giving up on its connection (pg's
   * `query_timeout`), which it then closes: a write whose answer does not come rejects with
   * `StoreOutcomeUnknownError`. Default: the statement timeout plus 5 000 ms, so that a server that is
   * only slow cancels the statement itself (a clean error, nothing written) before the store gives up;
   * 35 000 ms when the statement timeout is `null`. At least the statement timeout.
   */
  queryTimeoutMs?: number;
  /**
   * TCP keep-alive on the store's connections; default true. The system then probes a connection that
   * has been silent for `keepAliveInitialDelayMs`, and drops it when the server no longer answers
   * (a crash, a firewall or NAT that forgot it), instead of a check being written on it. Without it a
   * dead idle connection is found only by the next query, after its query timeout.
   */
  keepAlive?: boolean;
  /**
   * How long a connection is silent before the first keep-alive probe; default 10 000 ms, at least 1 000
   * (the system counts whole seconds). How often it probes again, and how many go unanswered before it
   * drops the connection, are the system's settings (on Linux, 9 probes 75 s apart).
   */
  keepAliveInitialDelayMs?: number;
}

/** A store's settings, as its options give them (checked, naming the field), and its pool. */
export interface PostgresSettings {
  readonly auditCapacity: number;
  readonly schema: string;
  readonly tablePrefix: string;
  readonly checkpoints: CheckpointPolicy | null;
  readonly pool: Pool;
  /** Ends the pool when the store made it; null for a pool given, which its owner ends. */
  readonly endPool: (() => Promise<void>) | null;
}

const DEFAULT_CONNECTION_TIMEOUT_MS = 10_000;
const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;
/** How much longer than the statement timeout the store waits for an answer, by default. */
const QUERY_TIMEOUT_MARGIN_MS = 5_000;
const DEFAULT_KEEP_ALIVE_INITIAL_DELAY_MS = 10_000;
/** Node's timers and PostgreSQL's timeouts both hold a signed 32-bit number of milliseconds. */
const MAX_TIMEOUT_MS = 2_147_483_647;

// Schema and table prefix go into SQL identifiers, so they are held to a plain lower-case form that
// needs no escaping and leaves room for the longest table name within PostgreSQL's 63 bytes.
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,30}$/;
const IDENTIFIER_RULE = `a lower-case SQL identifier matching ${IDENTIFIER}`;
const identifier = z.string({ error: IDENTIFIER_RULE }).regex(IDENTIFIER, { error: IDENTIFIER_RULE });

const timeout = (min: number) => integer(min, { value: MAX_TIMEOUT_MS, rule: `at most ${MAX_TIMEOUT_MS}` });

/** The options that shape a pool the store makes, refused with a pool given. */
const POOL_OPTIONS = {
  connectionTimeoutMs: timeout(1).optional(),
  statementTimeoutMs: timeout(1).nullable().optional(),
  queryTimeoutMs: timeout(1).optional(),
  keepAlive: z.boolean({ error: 'true or false' }).optional(),
  keepAliveInitialDelayMs: timeout(1_000).optional(),
};

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
  ...POOL_OPTIONS,
  ...STORE_OPTIONS,
});

type PoolOptions = { [K in keyof typeof POOL_OPTIONS]?: z.output<(typeof POOL_OPTIONS)[K]> };

/** Checks a PostgresStore's options, and makes its pool from `url` or takes the one given. */
export function postgresSettings(options: PostgresStoreOptions): PostgresSettings {
  const { auditCapacity, schema, tablePrefix, checkpoints, pool, url, ...timeouts } = parseOptions(
    postgresStoreOptions,
    options,
  );
  if ((pool === undefined) === (url === undefined)) {
    throw new GuardrailValidationError('pool', 'give exactly one of pool and url');
  }
  const settings = { auditCapacity, schema, tablePrefix, checkpoints };
  if (pool !== undefined) {
    for (const [field, value] of Object.entries(timeouts)) {
      if (value === undefined) continue;
      throw new GuardrailValidationError(
        field,
        `${field} applies to the pool made from url; set it on the pool given as pool`,
      );
    }
    return { ...settings, pool, endPool: null };
  }
  const config = poolConfig(timeouts);
  const own = ownPool({ connectionString: url as string, ...config });
  // A server is given as long to close a connection as to open one.
  const grace = config.connectionTimeoutMillis as number;
  return { ...settings, pool: own.pool, endPool: () => own.end(grace) };
}

/** What the store's own pool is made with: the timeouts and keep-alive, defaults filled in. */
export function poolConfig(o: PoolOptions): PoolConfig {
  const statement = o.statementTimeoutMs === undefined ? DEFAULT_STATEMENT_TIMEOUT_MS : o.statementTimeoutMs;
  const query = o.queryTimeoutMs ?? (statement ?? DEFAULT_STATEMENT_TIMEOUT_MS) + QUERY_TIMEOUT_MARGIN_MS;
  if (statement !== null && query < statement) {
    throw new GuardrailValidationError(
      'queryTimeoutMs',
      `queryTimeoutMs must be at least statementTimeoutMs (${statement}), got ${query}`,
    );
  }
  return {
    connectionTimeoutMillis: o.connectionTimeoutMs ?? DEFAULT_CONNECTION_TIMEOUT_MS,
    query_timeout: query,
    ...(statement === null
      ? {}
      : { statement_timeout: statement, idle_in_transaction_session_timeout: statement }),
    keepAlive: o.keepAlive ?? true,
    keepAliveInitialDelayMillis: o.keepAliveInitialDelayMs ?? DEFAULT_KEEP_ALIVE_INITIAL_DELAY_MS,
  };
}
