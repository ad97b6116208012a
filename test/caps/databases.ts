import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { PostgresStore } from '../../src/store/postgres/PostgresStore.js';
import type { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';
import { DATABASE_URL, freshSchemaName } from '../store/postgres-support.js';
import { openStore, type StoreTarget } from './stores.js';

// The databases the cap suites run on: a fresh one per suite, which the suite removes at its end.

/** A fresh, migrated database for one suite, the test process's store on it, and how to remove both. */
export interface FreshDatabase {
  readonly target: StoreTarget;
  readonly store: SqliteStore | PostgresStore;
  drop(): Promise<void>;
}

/** An engine the cap suites run on: its name in test titles, and a fresh database of it. */
export interface Engine {
  readonly name: string;
  fresh(): Promise<FreshDatabase>;
}

async function migrated(target: StoreTarget, drop: () => Promise<void>): Promise<FreshDatabase> {
  const store = await openStore(target);
  await store.migrate();
  return {
    target,
    store,
    async drop() {
      await store.close();
      await drop();
    },
  };
}

/** SQLite: one file in a directory of its own, which `drop` removes. */
export const sqliteEngine: Engine = {
  name: 'SQLite (a shared file)',
  fresh() {
    const dir = mkdtempSync(join(tmpdir(), 'leash-cap-processes-'));
    const target: StoreTarget = { engine: 'sqlite', path: join(dir, 'caps.db') };
    return migrated(target, async () => rmSync(dir, { recursive: true, force: true }));
  },
};

/** PostgreSQL at DATABASE_URL: a schema no other run uses, which `drop` drops. */
export const postgresEngine: Engine = {
  name: 'PostgreSQL',
  fresh() {
    const schema = freshSchemaName();
    const target: StoreTarget = { engine: 'postgres', url: DATABASE_URL, schema, tablePrefix: 'leash_' };
    return migrated(target, async () => {
      const client = new pg.Client({ connectionString: DATABASE_URL });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await client.end();
      }
    });
  },
};
