import { createHash } from 'node:crypto';
import type { Pool, PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import {
  describeValue,
  GuardrailError,
  invalid,
  isGuardrailError,
  StoreOutcomeUnknownError,
} from '../../errors.js';

// The PostgreSQL connection: queries, held connections, transactions, and what their errors become.

const statementNames = new Map<string, string>();

function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `leash_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
    statementNames.set(text, name);
  }
  return name;
}

/** Runs one statement; with values it is a named (prepared) statement. Failures become `STORE_UNAVAILABLE`. */
export async function query<R extends QueryResultRow = QueryResultRow>(
  client: Pool | PoolClient,
  doing: string,
  text: string,
  values?: unknown[],
): Promise<QueryResult<R>> {
  const config: QueryConfig = values === undefined ? { text } : { name: statementName(text), text, values };
  try {
    return await client.query<R>(config);
  } catch (error) {
    throw unavailable(doing, error);
  }
}

/**
 * Runs one writing statement, outside any transaction, on a connection held for it: when the connection
 * is lost after the statement was sent and before an answer came, it may have been committed, and the
 * rejection says so (`StoreOutcomeUnknownError`). A connection that could not be had sent nothing
 * (`STORE_UNAVAILABLE`).
 */
export async function write<R extends QueryResultRow = QueryResultRow>(
  pool: Pool,
  doing: string,
  text: string,
  values: unknown[],
): Promise<QueryResult<R>> {
  let held: Held;
  try {
    held = await hold(pool);
  } catch (error) {
    throw unavailable(doing, error);
  }
  let broken: Error | undefined;
  try {
    return await query<R>(held.client, doing, text, values);
  } catch (error) {
    if (answered(error)) {
      if (endsSession(error)) broken = asError(causeOf(error));
      throw error;
    }
    broken = asError(causeOf(error));
    throw outcomeUnknown(doing, causeOf(error));
  } finally {
    held.release(broken);
  }
}

/** A connection the store took from its pool, until it gives it back. */
export interface Held {
  readonly client: PoolClient;
  /** Gives the connection back: closed, not reused, when `broken` is given or it emitted 'error'. */
  release(broken?: Error): void;
}

/**
 * Takes a connection from `pool` with a listener for its 'error' event until it is given back. A
 * connection the server ends while the store holds it (a restart, a failover, `pg_terminate_backend`)
 * emits 'error', which would end the process when unheard; the statement in flight rejects anyway.
 */
export async function hold(pool: Pool): Promise<Held> {
  const client = await pool.connect();
  let lost: Error | undefined;
  const onError = (error: Error): void => {
    lost ??= error;
  };
  client.on('error', onError);
  return {
    client,
    release(broken) {
      client.off('error', onError);
      client.release(broken ?? lost);
    },
  };
}

/** The error for a failure of the database: the store fails closed, keeping the cause. */
export function unavailable(doing: string, error: unknown): GuardrailError {
  if (isGuardrailError(error)) return error;
  const e = error as { message?: unknown; code?: unknown } | null;
  const message = typeof e?.message === 'string' && e.message !== '' ? e.message : describeValue(error);
  const code = typeof e?.code === 'string' && !message.includes(e.code) ? ` (${e.code})` : '';
  const hint = e?.code === '42P01' || e?.code === '3F000' ? '; call migrate() first' : '';
  return new GuardrailError(
    'STORE_UNAVAILABLE',
    `PostgresStore could not ${doing}: ${message}${code}${hint}`,
    { cause: error },
  );
}

/** The error for a change the database was lost with: it may or may not have been committed. */
export function outcomeUnknown(doing: string, error: unknown): StoreOutcomeUnknownError {
  const message = unavailable(doing, error).message;
  return new StoreOutcomeUnknownError(`${message} (the change may or may not have been committed)`, {
    cause: error,
  });
}

/** The error a database failure was reported with, before {@link unavailable} wrapped it. */
export function causeOf(error: unknown): unknown {
  return isGuardrailError(error) && error.cause !== undefined ? error.cause : error;
}

/** True when the server answered with an error (an SQLSTATE): the statement did not commit. */
export function answered(error: unknown): boolean {
  // The server's errors (pg's DatabaseError) carry a severity; a lost connection's do not.
  const e = causeOf(error) as { severity?: unknown; code?: unknown } | null;
  return typeof e?.severity === 'string' && typeof e.code === 'string';
}

/**
 * True for a statement the driver gave up on without an answer from the server: its connection was
 * lost, or went silent until the query timeout. The connection is in no known state.
 */
export function unanswered(error: unknown): boolean {
  const cause = causeOf(error);
  return (
    isGuardrailError(error) &&
    error.code === 'STORE_UNAVAILABLE' &&
    cause !== error &&
    !isGuardrailError(cause) &&
    !answered(error)
  );
}

/** True for a server error that ends the session (FATAL, PANIC): its connection is closing. */
export function endsSession(error: unknown): boolean {
  const severity = (causeOf(error) as { severity?: unknown } | null)?.severity;
  return severity === 'FATAL' || severity === 'PANIC';
}

export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

export function quote(name: string): string {
  return `"${name}"`;
}

// NUL cannot be stored in a text column, and a lone surrogate is turned into U+FFFD on the way to the
// server, which would make two distinct ids name one row.
const LONE_SURROGATE = /\p{Cs}/u;

export function storable(value: unknown, field: string): void {
  if (typeof value !== 'string' || value.includes('\0') || LONE_SURROGATE.test(value)) {
    invalid(field, 'a string of well-formed Unicode without NUL', value);
  }
}

export function corrupt(what: string, cause: unknown): GuardrailError {
  const why = cause instanceof Error ? `: ${cause.message}` : '';
  return new GuardrailError('STORE_CORRUPT', `PostgresStore holds unreadable ${what}${why}`, { cause });
}

/** The plan's row as an update or a put locks it, with its last entry. */

/**
 * Runs `body` in a transaction on one pooled connection: COMMIT when it resolves, ROLLBACK when it
 * throws. Errors of `body` come out unchanged; database errors come out as `STORE_UNAVAILABLE`.
 */
export async function transaction<T>(
  pool: Pool,
  doing: string,
  body: (client: PoolClient) => Promise<T>,
): Promise<T> {
  let held: Held;
  try {
    held = await hold(pool);
  } catch (error) {
    throw unavailable(doing, error);
  }
  const client = held.client;
  let broken: Error | undefined;
  try {
    try {
      await client.query('BEGIN');
    } catch (error) {
      broken = asError(error);
      throw unavailable(doing, error);
    }
    let result: T;
    try {
      result = await body(client);
    } catch (error) {
      if (unanswered(error)) {
        // Lost or silent (its query timed out): a ROLLBACK would wait on it again. Closing it ends the
        // transaction on the server, which commits nothing without a COMMIT.
        broken = asError(causeOf(error));
        throw error;
      }
      try {
        await client.query('ROLLBACK');
      } catch (rollback) {
        broken = asError(rollback);
      }
      throw error;
    }
    try {
      await client.query('COMMIT');
    } catch (error) {
      broken = asError(error);
      throw outcomeUnknown(doing, error);
    }
    return result;
  } finally {
    // A connection whose state is unknown is closed rather than handed to the next caller.
    held.release(broken);
  }
}
