// The database packages the SQL stores use, loaded when a store needs one rather than when leash is
// imported: someone who uses only the memory store, or one of the two SQL stores, loads no other driver.
// Both are CommonJS, so `require` loads them synchronously and the stores' constructors stay synchronous.
import { createRequire } from 'node:module';
import type Database from 'better-sqlite3';
import type pg from 'pg';
import { errorText, GuardrailError } from '../errors.js';

/** The drivers, by package name, as their `module.exports`. */
export interface Drivers {
  'better-sqlite3': typeof Database;
  pg: typeof pg;
}

export type DriverName = keyof Drivers;

/** The store that needs each driver, for the error that says it cannot be loaded. */
const NEEDED_BY: Readonly<Record<DriverName, string>> = {
  'better-sqlite3': 'SqliteStore',
  pg: 'PostgresStore',
};

/**
 * A function that returns a driver, loaded through `load` the first time it is asked for and kept.
 * A driver that cannot be loaded throws a `STORE_DRIVER_MISSING` {@link GuardrailError} naming the package
 * and how to install it; the next call tries again.
 */
export function driverLoader(load: (name: string) => unknown): <N extends DriverName>(name: N) => Drivers[N] {
  const loaded = new Map<DriverName, unknown>();
  return <N extends DriverName>(name: N): Drivers[N] => {
    if (!loaded.has(name)) {
      try {
        loaded.set(name, load(name));
      } catch (error) {
        throw driverMissing(name, error);
      }
    }
    return loaded.get(name) as Drivers[N];
  };
}

function driverMissing(name: DriverName, error: unknown): GuardrailError {
  // Not found names the package itself; a package that is there but fails to load says why.
  const notInstalled =
    (error as { code?: unknown } | null)?.code === 'MODULE_NOT_FOUND' &&
    errorText(error).includes(`'${name}'`);
  const why = notInstalled ? 'it is not installed' : `it failed to load: ${errorText(error)}`;
  return new GuardrailError(
    'STORE_DRIVER_MISSING',
    `${NEEDED_BY[name]} needs the package ${name}, but ${why}; install it with \`npm install ${name}\``,
    { cause: error },
  );
}

/** The driver `name`, loaded on first use from leash's own dependencies. */
export const driver = driverLoader(createRequire(import.meta.url));
