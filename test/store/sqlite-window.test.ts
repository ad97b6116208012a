import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { AuditTrail, AutonomyGuardrails } from '../../src/index.js';
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';
import { stepEntry } from '../support/service.js';
import { tempFiles } from '../support/tempFiles.js';

// The audit window `get` answers with: kept for the plans this store committed last, read again from
// the database whenever anything else may have changed it.

/** An update of `planId` that records entry `i`. */
function record(store: SqliteStore, planId: string, i: number): Promise<unknown> {
  return store.update(planId, () => ({ result: null, audit: stepEntry(i) }));
}

/** The details' `i` of the entries `get` answers with, oldest first. */
async function window(store: SqliteStore, planId = 'p'): Promise<unknown[]> {
  return ((await store.get(planId))?.audit.entries ?? []).map((e) => e.details['i']);
}

describe('the audit window of SqliteStore.get', () => {
  const { newFile, closeAfter } = tempFiles('leash-sqlite-window-');

  async function open(options: ConstructorParameters<typeof SqliteStore>[0]): Promise<SqliteStore> {
    const store = new SqliteStore(options);
    closeAfter(() => store.close());
    await store.migrate();
    return store;
  }

  /** A connection to a new file that counts the entry rows the store reads back for `get`. */
  function countingConnection(): { db: Database.Database; path: string; rowsRead: () => number } {
    const path = newFile();
    const db = new Database(path);
    closeAfter(() => db.close());
    let rows = 0;
    const prepare = db.prepare.bind(db);
    db.prepare = ((sql: string) => {
      const statement = prepare(sql);
      if (sql.startsWith('SELECT e.seq')) {
        const all = statement.all.bind(statement);
        statement.all = (...params: unknown[]) => {
          const read = all(...params);
          rows += read.length;
          return read;
        };
      }
      return statement;
    }) as typeof db.prepare;
    return { db, path, rowsRead: () => rows };
  }

  it('reads no entry back for a plan it committed last, while nothing else wrote', async () => {
    const { db, rowsRead } = countingConnection();
    const store = await open({ database: db });
    await store.put('p', AutonomyGuardrails.create());
    for (let i = 1; i <= 3; i++) await record(store, 'p', i);
    await store.get('p');
    const before = rowsRead();
    for (let i = 4; i <= 5; i++) await record(store, 'p', i);

    expect([await window(store), rowsRead() - before]).toEqual([[1, 2, 3, 4, 5], 0]);
  });

  it('answers with the entries another store read them back as', async () => {
    const { db, path } = countingConnection();
    const store = await open({ database: db, auditCapacity: 3 });
    await store.put('p', AutonomyGuardrails.create());
    await record(store, 'p', 1);
    await store.get('p');
    for (let i = 2; i <= 5; i++) await record(store, 'p', i);
    const other = await open({ path, auditCapacity: 3 });

    const json = async (s: SqliteStore) => (await s.get('p'))?.audit.entries.map((e) => e.toJSON());
    expect(await json(store)).toEqual(await json(other));
  });

  it('reads again the entries another connection wrote since', async () => {
    const { db, path } = countingConnection();
    const store = await open({ database: db });
    await store.put('p', AutonomyGuardrails.create());
    await record(store, 'p', 1);
    await store.get('p');

    await record(await open({ path }), 'p', 2);

    expect(await window(store)).toEqual([1, 2]);
  });

  it('answers with the trail a put moved the window to', async () => {
    const { db } = countingConnection();
    const store = await open({ database: db });
    await store.put('p', AutonomyGuardrails.create());
    await record(store, 'p', 1);
    await store.get('p');
    const trail = new AuditTrail();
    trail.add(stepEntry(7));

    await store.put('p', AutonomyGuardrails.create(), trail);

    expect(await window(store)).toEqual([7]);
  });

  it('keeps nothing of a transaction that rolled back', async () => {
    const { db } = countingConnection();
    const store = await open({ database: db });
    await store.put('p', AutonomyGuardrails.create());
    await store.put('q', AutonomyGuardrails.create());
    await record(store, 'p', 1);
    await store.get('p');
    db.exec(
      "CREATE TRIGGER refuse_q BEFORE INSERT ON leash_audit_entries WHEN NEW.plan_id = 'q' BEGIN SELECT RAISE(ABORT, 'refused'); END",
    );

    // One transaction: p's entry, then q's, which cannot be written; then each again alone.
    await Promise.allSettled([record(store, 'p', 2), record(store, 'q', 3)]);

    expect(await window(store)).toEqual([1, 2]);
  });
});
