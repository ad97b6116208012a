import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AuditTrail, AutonomyGuardrails, AutonomyGuardrailService, GuardrailError } from '../../src/index.js';
import { verifyAuditLog } from '../../src/audit/verify.js';
import { runStoreContract } from '../../src/testing/index.js';
import { stepEntry, T0 } from '../support/service.js';
import { vitestFunctions } from '../support/testFunctions.js';
import { APPROVAL_STATUSES, type Approval, type GuardrailStore } from '../../src/store/GuardrailStore.js';
import { SQLITE_SCHEMA_VERSION, SqliteStore } from '../../src/store/sqlite/SqliteStore.js';
import { fieldOf } from '../support/thrown.js';
import { OLD_APPROVAL } from './approval-fixture.js';
import { runSqlStoreSuite } from './sqlSuite.js';

async function migrated(store: SqliteStore): Promise<SqliteStore> {
  await store.migrate();
  return store;
}

function guardrails(): AutonomyGuardrails {
  return AutonomyGuardrails.create({ maxSteps: 10, toolBudget: 5 });
}

/** The GuardrailError a promise rejects with; fails the test on anything else. */
async function rejection(promise: Promise<unknown>): Promise<GuardrailError> {
  try {
    await promise;
  } catch (e) {
    if (e instanceof GuardrailError) return e;
    throw e;
  }
  throw new Error('expected a rejection with a GuardrailError, but the promise resolved');
}

runStoreContract('SqliteStore in memory', {
  test: vitestFunctions,
  newStore: (o) => migrated(new SqliteStore({ auditCapacity: 5000, ...o })),
});

describe('on a file', () => {
  let dir: string;
  let files = 0;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'leash-sqlite-contract-'));
  });

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  const paths = new WeakMap<GuardrailStore, string>();

  runStoreContract('SqliteStore on a file', {
    test: vitestFunctions,
    newStore: (o) => {
      const path = join(dir, `store-${files++}.db`);
      const store = new SqliteStore({ path, auditCapacity: 5000, ...o });
      paths.set(store, path);
      return migrated(store);
    },
    setEntryColumn: async (store, planId, seq, column, text) => {
      const db = new Database(paths.get(store) as string);
      try {
        db.prepare(`UPDATE leash_audit_entries SET ${column} = ? WHERE plan_id = ? AND seq = ?`).run(
          text,
          planId,
          seq,
        );
      } finally {
        db.close();
      }
    },
  });
});

describe('SqliteStore', () => {
  let dir: string;
  let files = 0;
  const cleanup: (() => unknown)[] = [];

  /** A new database file's path in this suite's temporary directory. */
  function newFile(): string {
    return join(dir, `db-${files++}.db`);
  }

  /** A migrated store, closed after the test. */
  async function open(options: ConstructorParameters<typeof SqliteStore>[0] = {}): Promise<SqliteStore> {
    const store = new SqliteStore(options);
    cleanup.push(() => store.close());
    return migrated(store);
  }

  /** A raw connection, closed after the test. */
  function connect(path: string): Database.Database {
    const db = new Database(path);
    cleanup.push(() => db.close());
    return db;
  }

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'leash-sqlite-'));
  });

  afterEach(async () => {
    for (const close of cleanup.splice(0).reverse()) await close();
  });

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  /** The files of the stores the SQL suite opens, to open another store or a connection on one. */
  const fileOf = new WeakMap<GuardrailStore, string>();
  runSqlStoreSuite('SqliteStore', {
    open: async (options = {}) => {
      const path = newFile();
      const store = await open({ path, ...options });
      fileOf.set(store, path);
      return store;
    },
    sharing: (store) => open({ path: fileOf.get(store) as string }),
    exec: async (store, sql) => {
      connect(fileOf.get(store) as string).exec(sql.replace(/\{(\w+)\}/g, 'leash_$1'));
    },
    count: async (store, table) =>
      connect(fileOf.get(store) as string)
        .prepare(`SELECT count(*) FROM leash_${table}`)
        .pluck()
        .get() as number,
    markNewer: async (store) => {
      connect(fileOf.get(store) as string)
        .prepare('INSERT INTO leash_schema_version (version, applied_at) VALUES (?, 0)')
        .run(SQLITE_SCHEMA_VERSION + 1);
    },
    refuseEntries: async (store) => {
      const db = connect(fileOf.get(store) as string);
      db.exec(
        `CREATE TRIGGER refuse_writes BEFORE INSERT ON leash_audit_entries
         BEGIN SELECT RAISE(ABORT, 'refused'); END`,
      );
      return async () => void db.exec('DROP TRIGGER refuse_writes');
    },
  });

  describe('options', () => {
    it('refuses a table prefix that is not a lower-case SQL identifier', () => {
      expect(fieldOf(() => new SqliteStore({ tablePrefix: 'x; DROP TABLE y; --' }))).toBe('tablePrefix');
    });

    it('refuses a table prefix longer than 31 characters', () => {
      expect(fieldOf(() => new SqliteStore({ tablePrefix: `a${'b'.repeat(31)}` }))).toBe('tablePrefix');
    });

    it('refuses an audit capacity below 1', () => {
      expect(fieldOf(() => new SqliteStore({ auditCapacity: 0 }))).toBe('auditCapacity');
    });

    it('refuses a negative busy timeout', () => {
      expect(fieldOf(() => new SqliteStore({ busyTimeoutMs: -1 }))).toBe('busyTimeoutMs');
    });

    it('refuses an unknown option', () => {
      const options = { file: 'x.db' } as unknown as ConstructorParameters<typeof SqliteStore>[0];
      expect(fieldOf(() => new SqliteStore(options))).toBe('options.file');
    });

    it('refuses both a path and a database', () => {
      const db = connect(':memory:');
      expect(fieldOf(() => new SqliteStore({ path: ':memory:', database: db }))).toBe('path');
    });

    it('refuses a database that is not a better-sqlite3 connection', () => {
      const database = {} as unknown as Database.Database;
      expect(fieldOf(() => new SqliteStore({ database }))).toBe('database');
    });

    it('creates the directory of its file, with its parents, when it is missing', async () => {
      const path = join(dir, 'new', 'nested', 'x.db');
      await open({ path });
      expect(existsSync(path)).toBe(true);
    });

    it('refuses, as unavailable, a file whose directory cannot be created, naming the part that is a file', () => {
      const path = join(newFile(), 'sub', 'x.db');
      writeFileSync(dirname(dirname(path)), '');
      expect(() => new SqliteStore({ path })).toThrow(
        expect.objectContaining({
          code: 'STORE_UNAVAILABLE',
          message: `SQLite store unavailable: cannot create the directory "${dirname(path)}" for "${path}": "${dirname(dirname(path))}" is a file, not a directory`,
        }),
      );
    });

    it('says that a path naming a directory is not a file', () => {
      expect(() => new SqliteStore({ path: dir })).toThrow(
        `cannot open "${dir}": "${dir}" is a directory, not a file`,
      );
    });

    it('sets its busy timeout on a database it is given', () => {
      const db = connect(':memory:');
      new SqliteStore({ database: db, busyTimeoutMs: 1234 });
      expect(db.pragma('busy_timeout', { simple: true })).toBe(1234);
    });

    it('puts a database file in WAL mode', async () => {
      const path = newFile();
      await open({ path });
      expect(connect(path).pragma('journal_mode', { simple: true })).toBe('wal');
    });
  });

  describe('migrate', () => {
    it('rejects calls before migrate with STORE_NOT_MIGRATED', async () => {
      const store = new SqliteStore();
      cleanup.push(() => store.close());
      expect((await rejection(store.get('p'))).code).toBe('STORE_NOT_MIGRATED');
    });

    it('returns a rejected promise from update before migrate instead of throwing', async () => {
      const store = new SqliteStore();
      cleanup.push(() => store.close());
      const pending = store.update('p', () => ({ result: null }));
      expect((await rejection(pending)).code).toBe('STORE_NOT_MIGRATED');
    });

    it('records the schema version it migrated to', async () => {
      const db = connect(':memory:');
      await open({ database: db });
      const versions = db.prepare('SELECT version FROM leash_schema_version').pluck().all();
      expect(versions).toEqual(Array.from({ length: SQLITE_SCHEMA_VERSION }, (_, i) => i + 1));
    });

    it('lets the approvals table hold every approval status there is, and no other', async () => {
      const db = connect(':memory:');
      await open({ database: db });
      const sql = db
        .prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name LIKE '%approvals'")
        .pluck()
        .get() as string;
      const allowed = /CHECK \(status IN \(([^)]*)\)\)/.exec(sql)?.[1]?.split(', ');
      expect(allowed).toEqual(APPROVAL_STATUSES.map((s) => `'${s}'`));
    });

    it('chains the audit entries of a database written at version 1', async () => {
      const db = connect(':memory:');
      db.exec(`
        CREATE TABLE leash_schema_version (version INTEGER NOT NULL PRIMARY KEY, applied_at INTEGER NOT NULL);
        INSERT INTO leash_schema_version VALUES (1, 0);
        CREATE TABLE leash_plans (plan_id TEXT NOT NULL PRIMARY KEY, guardrails TEXT NOT NULL);
        CREATE TABLE leash_audit_entries (
          plan_id TEXT NOT NULL, seq INTEGER NOT NULL, event_type TEXT NOT NULL,
          timestamp INTEGER NOT NULL, details TEXT NOT NULL, PRIMARY KEY (plan_id, seq)
        ) WITHOUT ROWID;
        CREATE TABLE leash_approvals (
          id TEXT NOT NULL PRIMARY KEY, plan_id TEXT NOT NULL, decision_id TEXT NOT NULL,
          operation TEXT NOT NULL, input_hash TEXT NOT NULL, requested_at TEXT NOT NULL,
          expires_at TEXT NOT NULL, status TEXT NOT NULL, decided_by TEXT, decided_at TEXT,
          reason TEXT, used_at TEXT
        );
      `);
      db.prepare('INSERT INTO leash_plans VALUES (?, ?)').run('p', JSON.stringify(guardrails().toJSON()));
      const insert = db.prepare('INSERT INTO leash_audit_entries VALUES (?, ?, ?, ?, ?)');
      for (let i = 1; i <= 3; i++) insert.run('p', i, 'step_allowed', T0 + i, JSON.stringify({ i }));
      const store = await open({ database: db });
      const report = await verifyAuditLog(store, 'p');
      expect([report.ok, report.size]).toEqual([true, 3]);
    });

    it('reads the approvals of a file from before approvals named a tool, and keeps a tool on new ones', async () => {
      const path = newFile();
      const first = await open({ path });
      await first.put('p', guardrails());
      await first.close();
      const old = OLD_APPROVAL;
      // The file as version 4 left it: no tool, preview or review columns, an approval written then.
      const db = new Database(path);
      db.exec(`
        ALTER TABLE leash_approvals DROP COLUMN tool_name;
        ALTER TABLE leash_approvals DROP COLUMN input_preview;
        ALTER TABLE leash_approvals DROP COLUMN review;
        DROP TABLE leash_spend_caps;
        DROP TABLE leash_cap_windows;
        DROP TABLE leash_principals;
        DROP TABLE leash_tokens;
        DROP TABLE leash_notifications;
        DELETE FROM leash_schema_version WHERE version > 4;
      `);
      db.prepare('INSERT INTO leash_approvals VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL)').run(
        ...[old.id, old.planId, old.decisionId, old.operation, old.inputHash, old.requestedAt],
        ...[old.expiresAt, old.status],
      );
      db.close();
      const store = await open({ path });
      const shown: Approval = { ...old, id: 'new', toolName: 'deploy', inputPreview: '{"to":"prod"}' };
      await store.update('p', () => ({ result: null, newApproval: shown }));
      expect([await store.getApproval('old'), await store.getApproval('new')]).toStrictEqual([old, shown]);
    });

    it("looks a decision's approval up through an index, not by reading the plan's approvals", async () => {
      const db = connect(':memory:');
      await open({ database: db });
      const plan = db
        .prepare(
          'EXPLAIN QUERY PLAN SELECT * FROM leash_approvals WHERE plan_id = ? AND decision_id = ? ' +
            'ORDER BY requested_at DESC, id DESC LIMIT 1',
        )
        .all('p', 'd1') as { detail: string }[];
      expect(plan.map((row) => row.detail).join('\n')).toMatch(/USING INDEX leash_approvals_by_decision/);
      expect(plan.map((row) => row.detail).join('\n')).not.toMatch(/TEMP B-TREE/);
    });

    it('creates its tables under the table prefix', async () => {
      const db = connect(':memory:');
      await open({ database: db, tablePrefix: 'g1_' });
      const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name");
      expect(tables.pluck().all()).toEqual([
        'g1_approvals',
        'g1_audit_entries',
        'g1_cap_windows',
        'g1_checkpoints',
        'g1_notifications',
        'g1_plan_documents',
        'g1_plans',
        'g1_principals',
        'g1_schema_version',
        'g1_spend_caps',
        'g1_tokens',
      ]);
    });
  });

  describe('durability', () => {
    it('appends the entries of a trail that is put after the stored ones, removing none', async () => {
      const db = connect(':memory:');
      const store = await open({ database: db });
      await store.put('p', guardrails());
      for (let i = 0; i < 3; i++) await store.update('p', () => ({ result: null, audit: stepEntry(i) }));
      const trail = new AuditTrail({ maxEntries: 5 });
      trail.add(stepEntry(9));
      await store.put('p', guardrails(), trail);
      const seqs = db.prepare('SELECT seq FROM leash_audit_entries ORDER BY seq').pluck().all();
      expect(seqs).toEqual([1, 2, 3, 4]);
    });

    it('finds the state of a file again after the store is reopened', async () => {
      const path = newFile();
      const first = await open({ path });
      await first.put('p', guardrails());
      await first.update('p', () => ({ result: null, audit: stepEntry(1), mutation: { steps: 2 } }));
      await first.close();
      const record = await (await open({ path })).get('p');
      expect([record?.guardrails.stepCount, record?.audit.size]).toEqual([2, 1]);
    });

    it('keeps stores with different table prefixes apart in one database', async () => {
      const db = connect(':memory:');
      const a = await open({ database: db, tablePrefix: 'a_' });
      const b = await open({ database: db, tablePrefix: 'b_' });
      await a.put('p', guardrails());
      expect(await b.get('p')).toBeNull();
    });

    it('leaves open a database it was given when closed', async () => {
      const db = connect(':memory:');
      const store = await open({ database: db });
      await store.close();
      expect(db.open).toBe(true);
    });

    it('closes the database it opened', async () => {
      const path = newFile();
      const store = await open({ path });
      await store.close();
      // SQLite checkpoints and removes the WAL file when the last connection to it closes.
      expect(existsSync(`${path}-wal`)).toBe(false);
    });
  });

  describe('approvals that cannot be stored', () => {
    it('refuses one before the rest of the change is looked at, naming its field', async () => {
      const store = await open();
      await store.put('p', guardrails());
      const bad = { ...OLD_APPROVAL, status: 'bogus' } as unknown as Approval;
      const change = () => ({ result: null, approval: bad, entries: 'not entries' as never });
      await expect(store.update('p', change)).rejects.toMatchObject({ field: 'approval.status' });
    });
  });

  describe('inside transactions of others', () => {
    it('decides from the database after the owner of a given database rolls back an update', async () => {
      const db = connect(':memory:');
      const store = await open({ database: db });
      const service = new AutonomyGuardrailService({ store });
      await service.configureGuardrails('p', { toolBudget: 10 });
      db.exec('BEGIN');
      await service.checkToolBudget('p', 6);
      db.exec('ROLLBACK');
      const check = await service.checkToolBudget('p', 6);
      const report = await verifyAuditLog(store, 'p');
      expect([check.allowed, (await service.getGuardrails('p'))?.budgetSpent, report.ok]).toEqual([
        true,
        6,
        true,
      ]);
    });

    it('runs no update made before a transaction of the owner of a given database inside it', async () => {
      const db = connect(':memory:');
      const store = await open({ database: db });
      const service = new AutonomyGuardrailService({ store });
      await service.configureGuardrails('p', { toolBudget: 10 });
      const check = service.checkToolBudget('p', 6);
      const owners = db.transaction(() => {
        void store.listPlans();
        throw new Error('the owner rolls back');
      });
      expect(() => owners()).toThrow('the owner rolls back');
      expect([(await check).allowed, (await service.getGuardrails('p'))?.budgetSpent]).toEqual([true, 6]);
    });

    it('refuses to store a plan from inside a change function, rather than let the update undo it', async () => {
      const store = await open();
      await store.put('p', guardrails());
      let put: Promise<void> = Promise.resolve();
      await store.update('p', () => {
        put = store.put('p', AutonomyGuardrails.create({ maxSteps: 99 }));
        return { result: null, mutation: { steps: 1 } };
      });
      await expect(put).rejects.toMatchObject({ code: 'STORE_CONTRACT' });
      const g = (await store.get('p'))?.guardrails;
      expect([g?.maxSteps, g?.stepCount]).toEqual([10, 1]);
    });

    it('runs an update made inside a change function after the transaction of that change', async () => {
      const store = await open();
      const service = new AutonomyGuardrailService({ store });
      await service.configureGuardrails('p', { toolBudget: 10 });
      await service.configureGuardrails('q', { toolBudget: 10 });
      let inner: Promise<unknown> = Promise.resolve();
      const first = service.checkToolBudget('p', 6);
      const outer = store.update('q', () => {
        inner = service.checkToolBudget('p', 6);
        void store.listPlans();
        return { result: null };
      });
      const checks = await Promise.all([first, outer.then(() => inner)]);
      expect([
        checks.map((c) => (c as { allowed: boolean } | null)?.allowed),
        (await service.getGuardrails('p'))?.budgetSpent,
      ]).toEqual([[true, false], 6]);
    });
  });

  describe('updates made at once', () => {
    it('commits them in one transaction', async () => {
      const path = newFile();
      const store = await open({ path });
      await store.put('p', guardrails());
      const other = connect(path);
      const commits = other.prepare<[], number>('PRAGMA data_version').pluck();
      const before = commits.get() as number;
      await Promise.all(
        Array.from({ length: 10 }, (_, i) => store.update('p', () => ({ result: i, audit: stepEntry(i) }))),
      );
      expect([(commits.get() as number) - before, (await store.readAuditLog('p')).length]).toEqual([1, 10]);
    });

    it('runs them before a call made after them, even when they were not awaited', async () => {
      const store = await open();
      await store.put('p', guardrails());
      const stepped = store.update('p', () => ({ result: null, mutation: { steps: 1 } }));
      const record = await store.get('p');
      await stepped;
      expect(record?.guardrails.stepCount).toBe(1);
    });

    it('answers a read from a change function with the plan as committed, not as the transaction has it', async () => {
      const path = newFile();
      const store = await open({ path });
      await store.put('p', guardrails());
      await store.put('q', guardrails());
      connect(path).exec(
        "CREATE TRIGGER refuse_q BEFORE INSERT ON leash_audit_entries WHEN NEW.plan_id = 'q' BEGIN SELECT RAISE(ABORT, 'refused'); END",
      );
      // Last, so that the store's cache of p is what it committed after everything else.
      await store.update('p', () => ({ result: null, audit: stepEntry(0) }));
      let tries = 0;
      let read: Promise<AutonomyGuardrails | null> | undefined;
      // One transaction: p's steps, then q's entry, which cannot be written. Tried again alone, p's
      // change refuses, so its steps are never committed.
      const updates = [
        store.update('p', () => {
          if (tries++ > 0) throw new Error('once only');
          return { result: null, mutation: { steps: 5 } };
        }),
        store.update('q', () => {
          read ??= store.getGuardrails('p');
          return { result: null, audit: stepEntry(1) };
        }),
      ];
      await Promise.allSettled(updates);
      expect([(await read)?.stepCount, (await store.getGuardrails('p'))?.stepCount]).toEqual([0, 0]);
    });
  });

  describe('failures', () => {
    it('rejects an update with STORE_UNAVAILABLE while another connection holds the write lock', async () => {
      const path = newFile();
      const store = await open({ path, busyTimeoutMs: 0 });
      await store.put('p', guardrails());
      const other = connect(path);
      other.exec('BEGIN IMMEDIATE');
      const error = await rejection(store.update('p', () => ({ result: null, mutation: { steps: 1 } })));
      other.exec('ROLLBACK');
      expect([error.code, (error.cause as { code?: string }).code]).toEqual([
        'STORE_UNAVAILABLE',
        'SQLITE_BUSY',
      ]);
    });

    it('says in the STORE_UNAVAILABLE message that the database stayed locked', async () => {
      const path = newFile();
      const store = await open({ path, busyTimeoutMs: 0 });
      await store.put('p', guardrails());
      const other = connect(path);
      other.exec('BEGIN IMMEDIATE');
      const error = await rejection(store.delete('p'));
      other.exec('ROLLBACK');
      expect(error.message).toMatch(/locked by another connection.*busyTimeoutMs \(0 ms\)/);
    });

    it('makes the service deny by rejecting, and spend nothing, while the database is locked', async () => {
      const path = newFile();
      const store = await open({ path, busyTimeoutMs: 0 });
      const service = new AutonomyGuardrailService({ store });
      await service.configureGuardrails('p', { toolBudget: 5 });
      const other = connect(path);
      other.exec('BEGIN IMMEDIATE');
      const error = await rejection(service.checkToolBudget('p', 1));
      other.exec('ROLLBACK');
      expect([error.code, (await service.getGuardrails('p'))?.budgetSpent]).toEqual(['STORE_UNAVAILABLE', 0]);
    });

    it('rejects with STORE_UNAVAILABLE when the database it was given has been closed', async () => {
      const db = new Database(':memory:');
      const store = await open({ database: db });
      db.close();
      expect((await rejection(store.get('p'))).code).toBe('STORE_UNAVAILABLE');
    });
  });
});
