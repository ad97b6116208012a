import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import pg from 'pg';
import { onCI } from '../support/ci.js';

/**
 * The server the PostgreSQL tests use. Without a user in the URL, pg falls back to $PGUSER, then $USER,
 * and sends none when both are unset; psql and libpq use the login name, and so do these tests.
 */
export const DATABASE_URL = withUser(process.env['DATABASE_URL'] ?? 'postgres://127.0.0.1:5432/test');

function withUser(text: string): string {
  const user = process.env['PGUSER'] ?? process.env['USER'];
  if (user !== undefined && user !== '') return text;
  try {
    const url = new URL(text);
    if (url.username !== '' || url.hostname === '') return text;
    url.username = userInfo().username;
    return url.toString();
  } catch {
    return text;
  }
}

/** Host, port and database of {@link DATABASE_URL}, without any password it may hold. */
function where(): string {
  try {
    const url = new URL(DATABASE_URL);
    return `${url.hostname}:${url.port || '5432'}${url.pathname}`;
  } catch {
    return 'DATABASE_URL';
  }
}

/**
 * False when nothing answers at the address. A server that answers with an error (a wrong user or
 * database) counts as answering, so that the tests run and say what is wrong instead of being skipped.
 */
async function serverAnswers(): Promise<boolean> {
  const client = new pg.Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 3_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    return true;
  } catch (error) {
    return typeof (error as { severity?: unknown }).severity === 'string';
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * True when the file's PostgreSQL tests should be skipped: no server answers and this is not CI. Under
 * CI the tests run, and fail, without a server.
 */
export async function skipWithoutServer(file: string): Promise<boolean> {
  if (await serverAnswers()) return false;
  if (onCI()) return false;
  console.warn(
    `${file}: skipped, no PostgreSQL server answers at ${where()} (set DATABASE_URL; with CI=true these tests fail instead)`,
  );
  return true;
}

/** A schema name no other test run uses. */
export function freshSchemaName(): string {
  return `leash_test_${process.pid}_${randomBytes(4).toString('hex')}`;
}

/** An application name no other test run uses, by which a test finds the server processes of a store. */
export function freshApplicationName(): string {
  return `leash_app_${process.pid}_${randomBytes(4).toString('hex')}`;
}

/** `url` (default {@link DATABASE_URL}) whose connections carry `applicationName`. */
export function urlWithApplicationName(applicationName: string, url = DATABASE_URL): string {
  const named = new URL(url);
  named.searchParams.set('application_name', applicationName);
  return named.toString();
}

/**
 * Resolves once a server process of `applicationName` waits for a lock; rejects after 30 s without one.
 * Polls on the server, reading pg_stat_activity afresh each time (it is read once per transaction).
 */
export async function lockWaitOf(admin: pg.Pool, applicationName: string): Promise<void> {
  // Written into the statement: a DO block takes no parameters.
  if (!/^\w+$/.test(applicationName)) throw new Error(`not a plain application name: ${applicationName}`);
  await admin.query(
    `DO $$
     DECLARE
       give_up timestamptz := clock_timestamp() + interval '30 seconds';
     BEGIN
       LOOP
         PERFORM pg_stat_clear_snapshot();
         EXIT WHEN EXISTS (SELECT 1 FROM pg_stat_activity
                            WHERE application_name = '${applicationName}' AND wait_event_type = 'Lock');
         IF clock_timestamp() > give_up THEN
           RAISE EXCEPTION 'no process of % waits for a lock', '${applicationName}';
         END IF;
         PERFORM pg_sleep(0.01);
       END LOOP;
     END $$`,
  );
}

/**
 * Ends every server process of `applicationName`, as a restart or a failover does
 * (`pg_terminate_backend`); resolves with how many it ended.
 */
export async function terminateBackends(admin: pg.Pool, applicationName: string): Promise<number> {
  const ended = await admin.query(
    'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
    [applicationName],
  );
  return ended.rowCount ?? 0;
}

/** Locks every row of `table` (schema-qualified and quoted) in a transaction of a client of `pool`. */
export async function lockRows(pool: pg.Pool, table: string): Promise<{ unlock(): Promise<void> }> {
  const client = await pool.connect();
  await client.query('BEGIN');
  await client.query(`SELECT 1 FROM ${table} FOR UPDATE`);
  return {
    async unlock() {
      await client.query('ROLLBACK');
      client.release();
    },
  };
}
