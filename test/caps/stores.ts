import type { PostgresStore } from '../../src/store/postgres/PostgresStore.js';
import type { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';

// What a process of a cap test opens its store on, for either engine. Each driver loads only when its
// engine is asked for: the workers start eight at a time on two cores, so each loads what it uses.

/** A database every process of a test opens a store of its own on: passed to workers as JSON. */
export type StoreTarget =
  | { readonly engine: 'sqlite'; readonly path: string }
  | {
      readonly engine: 'postgres';
      readonly url: string;
      readonly schema: string;
      readonly tablePrefix: string;
    };

/** A new store on `target`, not yet migrated; its owner closes it. */
export async function openStore(target: StoreTarget): Promise<SqliteStore | PostgresStore> {
  if (target.engine === 'sqlite') {
    const { SqliteStore } = await import('../../src/store/sqlite/SqliteStore.js');
    return new SqliteStore({ path: target.path });
  }
  const { PostgresStore } = await import('../../src/store/postgres/PostgresStore.js');
  return new PostgresStore({ url: target.url, schema: target.schema, tablePrefix: target.tablePrefix });
}
