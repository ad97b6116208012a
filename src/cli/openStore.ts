import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { GuardrailError, GuardrailValidationError } from '../errors.js';
import { shellWord } from '../runner/commandLine.js';
import type { CheckpointOptions } from '../store/checkpoints.js';
import type { GuardrailStore } from '../store/GuardrailStore.js';
import { PostgresStore } from '../store/postgres/PostgresStore.js';
import { SqliteStore } from '../store/sqlite/SqliteStore.js';

/** Where `leash` keeps its state unless told otherwise: a SQLite file under the working folder. */
export const DEFAULT_DB = '.leash/leash.db';

/** How many entries of a plan's log `leash` checkpoints, unless LEASH_CHECKPOINT_EVERY says otherwise. */
export const DEFAULT_CHECKPOINT_EVERY = 10;

/**
 * The checkpoints the stores `leash` opens write: every LEASH_CHECKPOINT_EVERY entries (default
 * {@link DEFAULT_CHECKPOINT_EVERY}; 0 for none), signed with the Ed25519 private key in the PEM file
 * LEASH_SIGNING_KEY names, when it names one.
 */
export function checkpointOptions(env: NodeJS.ProcessEnv, cwd: string): CheckpointOptions | undefined {
  const text = env['LEASH_CHECKPOINT_EVERY'] || String(DEFAULT_CHECKPOINT_EVERY);
  const every = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(every)) {
    throw new GuardrailValidationError(
      'LEASH_CHECKPOINT_EVERY',
      `LEASH_CHECKPOINT_EVERY must be an integer >= 0, got "${text}"`,
    );
  }
  if (every === 0) return undefined;
  const keyFile = env['LEASH_SIGNING_KEY'];
  if (!keyFile) return { every };
  let privateKey: string;
  try {
    privateKey = readFileSync(resolve(cwd, keyFile), 'utf8');
  } catch (error) {
    throw new GuardrailValidationError(
      'LEASH_SIGNING_KEY',
      `cannot read the signing key ${keyFile}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  return { every, privateKey };
}

/** Whether `--db` names a PostgreSQL server rather than a SQLite file. */
export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

/** The store a command uses: `--db`, else `LEASH_DB`, else {@link DEFAULT_DB}. */
export function storeTarget(db: string | undefined, env: NodeJS.ProcessEnv): string {
  // An empty LEASH_DB counts as unset, as shells leave it after `export LEASH_DB=`.
  return db ?? (env['LEASH_DB'] || DEFAULT_DB);
}

/**
 * Where a store is, for people: a SQLite file's absolute path, or a PostgreSQL URL without its password
 * (the connection finds it where `pg` looks, PGPASSWORD or ~/.pgpass, as for a URL written without one).
 */
export function storeName(target: string, cwd: string): string {
  if (!isPostgresUrl(target)) return resolve(cwd, target);
  try {
    const url = new URL(target);
    url.password = '';
    return url.toString();
  } catch {
    return 'the PostgreSQL database of --db';
  }
}

/**
 * The `--db` option that names the store, for commands printed for a person to paste (`leash approve …`);
 * empty for the default store.
 */
export function dbArgument(target: string, cwd: string): string {
  if (!isPostgresUrl(target) && resolve(cwd, target) === resolve(cwd, DEFAULT_DB)) return '';
  return ` --db ${shellWord(storeName(target, cwd))}`;
}

/** The refusal of a read-only command to use a store that is not there, naming it as {@link storeName}. */
function storeNotFound(name: string): GuardrailError {
  return new GuardrailError(
    'STORE_NOT_FOUND',
    `no leash database at ${name}: check --db (or LEASH_DB); running a plan creates one`,
  );
}

/**
 * Opens and migrates the store `--db` names: a `postgres://` URL (`?schema=name` for a schema other than
 * `public`), or a SQLite file (created, with its folder, when missing). With `mustExist`, a store that is
 * not there (a missing file; a schema without leash's tables) is refused, `STORE_NOT_FOUND`, and nothing
 * is created. `db` defaults to `LEASH_DB`, then to {@link DEFAULT_DB} under `cwd`.
 */
export async function openStore(
  db: string | undefined,
  cwd: string,
  env: NodeJS.ProcessEnv,
  options: { mustExist?: boolean } = {},
): Promise<GuardrailStore> {
  const target = storeTarget(db, env);
  const checkpoints = checkpointOptions(env, cwd);
  if (target.trim() === '')
    throw new GuardrailValidationError('db', '--db must name a file or a postgres:// URL, got ""');
  if (isPostgresUrl(target)) {
    // `?schema=name` picks the schema holding leash's tables; it is leash's, not the server's, setting.
    const url = new URL(target);
    const schema = url.searchParams.get('schema');
    url.searchParams.delete('schema');
    const store = new PostgresStore({
      url: url.toString(),
      ...(schema === null ? {} : { schema }),
      ...(checkpoints === undefined ? {} : { checkpoints }),
    });
    try {
      // Checked before migrate(), which would create a mistyped schema.
      if (options.mustExist && !(await store.exists())) throw storeNotFound(storeName(target, cwd));
      await store.migrate();
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }
  const path = resolve(cwd, target);
  if (options.mustExist && !existsSync(path)) throw storeNotFound(path);
  const store = new SqliteStore({ path, ...(checkpoints === undefined ? {} : { checkpoints }) });
  try {
    await store.migrate();
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}
