import type Database from 'better-sqlite3';
import { z } from 'zod';
import { describeValue, GuardrailValidationError } from '../../errors.js';
import { STORE_OPTIONS, type CheckpointOptions, type CheckpointPolicy } from '../checkpoints.js';
import { driver } from '../drivers.js';
import { GuardrailError } from '../../errors.js';
import { createDirectoryOf, openProblem } from './fileProblems.js';
import { handle, integer, parseOptions } from '../../validation.js';

// The SQLite connection: the store's options, the database opened or given, and what its errors become.

/** What {@link SqliteStore} accepts. */
export interface SqliteStoreOptions {
  /**
   * Database file, created with its directory when missing; defaults to `':memory:'`. Not together with
   * `database`.
   */
  path?: string;
  /**
   * An open better-sqlite3 connection to use instead of opening one; the store never closes it. The store
   * sets its `busy_timeout` and leaves `journal_mode` and `synchronous` as the owner chose: use WAL for a
   * file that several connections share. An update runs in the store's own transaction after `update`
   * returns, not in a transaction function of the owner's that called it; one that finds a transaction
   * the owner opened (`BEGIN`) runs inside it, and the owner's rollback undoes it.
   */
  database?: Database.Database;
  /** How many audit entries `get` returns per plan (the newest). Defaults to 1000. */
  auditCapacity?: number;
  /** Put before every table and index name. Defaults to `leash_`. */
  tablePrefix?: string;
  /** How long to wait for another connection's write lock before failing. Defaults to 5000 ms. */
  busyTimeoutMs?: number;
  /** Write a (signed) checkpoint of a plan's log every `every` entries, in the transaction of the entry. */
  checkpoints?: CheckpointOptions;
}

const TABLE_PREFIX = /^[a-z][a-z0-9_]{0,30}$/;
const DEFAULT_TABLE_PREFIX = 'leash_';
const DEFAULT_BUSY_TIMEOUT_MS = 5000;
const MAX_BUSY_TIMEOUT_MS = 2_147_483_647; // SQLite takes a C int
const PATH_RULE = 'a file name or ":memory:"';
const PREFIX_RULE = `a name matching ${TABLE_PREFIX}`;

/** True for an open better-sqlite3 connection (duck-typed: another copy of the driver will do). */
function isDatabase(value: unknown): boolean {
  const db = value as Partial<Database.Database> | null;
  return (
    typeof db === 'object' &&
    db !== null &&
    typeof db.prepare === 'function' &&
    typeof db.transaction === 'function' &&
    typeof db.pragma === 'function' &&
    db.open === true
  );
}

const sqliteStoreOptions = z.object({
  path: z.string({ error: PATH_RULE }).min(1, { error: PATH_RULE }).optional(),
  database: handle<Database.Database>('an open better-sqlite3 Database', isDatabase).optional(),
  // The prefix is the only text put into SQL: everything else is a bound parameter.
  tablePrefix: z
    .string({ error: PREFIX_RULE })
    .regex(TABLE_PREFIX, { error: PREFIX_RULE })
    .default(DEFAULT_TABLE_PREFIX),
  busyTimeoutMs: integer(0, {
    value: MAX_BUSY_TIMEOUT_MS,
    rule: `at most ${MAX_BUSY_TIMEOUT_MS}`,
  }).default(DEFAULT_BUSY_TIMEOUT_MS),
  ...STORE_OPTIONS,
});

/** The store's settings, as its options give them (checked, naming the field), and its connection. */
export interface SqliteSettings {
  readonly auditCapacity: number;
  readonly busyTimeoutMs: number;
  readonly tablePrefix: string;
  readonly checkpoints: CheckpointPolicy | null;
  readonly db: Database.Database;
  /** True when the store opened the database, and so closes it. */
  readonly ownsDatabase: boolean;
}

/** Checks a SqliteStore's options and opens (or takes) its connection. */
export function sqliteSettings(options: SqliteStoreOptions): SqliteSettings {
  const o = parseOptions(sqliteStoreOptions, options);
  const { auditCapacity, busyTimeoutMs, tablePrefix, checkpoints } = o;
  // Loaded by the first store rather than on import; a given database needs it too, for its errors.
  const Sqlite = driver('better-sqlite3');
  if (o.database !== undefined) {
    if (o.path !== undefined) {
      throw new GuardrailValidationError('path', 'path and database cannot both be given');
    }
    o.database.pragma(`busy_timeout = ${busyTimeoutMs}`);
    return { auditCapacity, busyTimeoutMs, tablePrefix, checkpoints, db: o.database, ownsDatabase: false };
  }
  const db = openDatabase(Sqlite, o.path ?? ':memory:', busyTimeoutMs);
  return { auditCapacity, busyTimeoutMs, tablePrefix, checkpoints, db, ownsDatabase: true };
}

/**
 * Opens the database file at `path` (or `:memory:`) with the settings the store needs, creating the file
 * and its directory when they are missing.
 */
export function openDatabase(
  Sqlite: typeof Database,
  path: string,
  busyTimeoutMs: number,
): Database.Database {
  if (path !== ':memory:') createDirectoryOf(path);
  let db: Database.Database | undefined;
  try {
    db = new Sqlite(path, { timeout: busyTimeoutMs });
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    db.pragma('foreign_keys = ON');
    if (!db.memory) {
      // WAL lets readers go on while one process writes; NORMAL is durable in WAL except for the
      // last transactions before a power loss, and spares an fsync per commit.
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
    }
    return db;
  } catch (error) {
    db?.close();
    // SQLite's "unable to open database file" does not say why: the file system can.
    const problem = path === ':memory:' ? null : openProblem(path);
    const why = problem === null ? messageOf(error) : `${problem} (${messageOf(error)})`;
    throw new GuardrailError(
      'STORE_UNAVAILABLE',
      `SQLite store unavailable: cannot open ${describeValue(path)}: ${why}`,
      { cause: error },
    );
  }
}

/** The error to report for `error`: SQLite's own errors become GuardrailErrors; others pass as they are. */
export function sqliteFailure(
  db: Database.Database,
  busyTimeoutMs: number,
  error: unknown,
  doing: string,
): unknown {
  if (error instanceof driver('better-sqlite3').SqliteError) {
    if (error.code.startsWith('SQLITE_CONSTRAINT')) {
      return new GuardrailError(
        'STORE_CONTRACT',
        `SQLite refused to ${doing}: ${error.message} (${error.code})`,
        { cause: error },
      );
    }
    const why = error.code.startsWith('SQLITE_BUSY')
      ? `the database stayed locked by another connection for longer than busyTimeoutMs ` +
        `(${busyTimeoutMs} ms)`
      : `${error.message} (${error.code})`;
    return new GuardrailError('STORE_UNAVAILABLE', `SQLite store unavailable: cannot ${doing}: ${why}`, {
      cause: error,
    });
  }
  if (!db.open) {
    return new GuardrailError(
      'STORE_UNAVAILABLE',
      `SQLite store unavailable: cannot ${doing}: the database connection was closed`,
      { cause: error },
    );
  }
  return error;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
