import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  AutonomyGuardrails,
  AutonomyGuardrailService,
  GuardrailValidationError,
  isStoreOutcomeUnknownError,
} from '../../src/index.js';
import { verifyAuditLog } from '../../src/audit/verify.js';
import { APPROVAL_STATUSES } from '../../src/store/GuardrailStore.js';
import { runStoreContract } from '../../src/testing/index.js';
import { stepEntry } from '../support/service.js';
import { vitestFunctions } from '../support/testFunctions.js';
import { runSqlStoreSuite } from './sqlSuite.js';
import {
  POSTGRES_SCHEMA_VERSION,
  PostgresStore,
  type PostgresStoreOptions,
} from '../../src/store/postgres/PostgresStore.js';
import { DATABASE_URL, freshSchemaName, skipWithoutServer } from './postgres-support.js';
import { relayTo } from './postgres-relay.js';
import { OLD_APPROVAL } from './approval-fixture.js';

const skip = await skipWithoutServer('test/store/postgres.test.ts');

/** The rejection of `promise`; fails the test when it resolves. */
async function rejection(promise: Promise<unknown>): Promise<Record<string, unknown>> {
  try {
    await promise;
  } catch (error) {
    return error as Record<string, unknown>;
  }
  throw new Error('expected a rejection');
}

describe('PostgresStore options', () => {
  const pool = new pg.Pool({ connectionString: DATABASE_URL });

  afterAll(async () => {
    await pool.end();
  });

  it.each([
    ['schema', { schema: 'Public' }],
    ['schema', { schema: 'a"; DROP TABLE x; --' }],
    ['schema', { schema: 'pg_catalog' }],
    ['tablePrefix', { tablePrefix: '1x_' }],
    ['tablePrefix', { tablePrefix: 'x'.repeat(32) }],
  ] as const)('refuses a %s that is not a plain lower-case identifier: %j', (field, options) => {
    expect(() => new PostgresStore({ pool, ...options })).toThrow(
      expect.objectContaining({ name: 'GuardrailValidationError', field }),
    );
  });

  it('refuses options with both a pool and a url', () => {
    expect(() => new PostgresStore({ pool, url: DATABASE_URL })).toThrow(GuardrailValidationError);
  });

  it('refuses options with neither a pool nor a url', () => {
    expect(() => new PostgresStore({})).toThrow(GuardrailValidationError);
  });

  it('refuses an audit capacity below 1', () => {
    expect(() => new PostgresStore({ pool, auditCapacity: 0 })).toThrow(GuardrailValidationError);
  });

  it('refuses an unknown option, naming it', () => {
    const options = { pool, tablePrefx: 'mine_' } as unknown as PostgresStoreOptions;
    expect(() => new PostgresStore(options)).toThrow(
      expect.objectContaining({ name: 'GuardrailValidationError', field: 'options.tablePrefx' }),
    );
  });
});

describe('PostgresStore without a database', () => {
  let silent: Server | undefined;
  const sockets = new Set<Socket>();

  afterEach(async () => {
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    await new Promise((resolve) => (silent ? silent.close(resolve) : resolve(undefined)));
    silent = undefined;
  });

  it('rejects with STORE_UNAVAILABLE, keeping the cause, when the connection is refused', async () => {
    const store = new PostgresStore({ url: 'postgres://127.0.0.1:1/test' });
    const error = await rejection(store.get('p'));
    await store.close();
    expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE', cause: { code: 'ECONNREFUSED' } });
    expect(error['message']).toMatch(/could not .*ECONNREFUSED/);
  });

  it('rejects with STORE_UNAVAILABLE when connecting times out', async () => {
    silent = createServer((socket) => sockets.add(socket)); // accepts connections and never answers
    await new Promise<void>((resolve) => silent?.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const pool = new pg.Pool({ host: '127.0.0.1', port, connectionTimeoutMillis: 100 });
    const store = new PostgresStore({ pool });
    const error = await rejection(store.get('p'));
    await pool.end();
    expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect(error['message']).toMatch(/timeout/);
  });

  it('refuses every waiting update of a plan after one attempt to reach the database', async () => {
    let connections = 0;
    silent = createServer((socket) => {
      connections++;
      sockets.add(socket);
    });
    await new Promise<void>((resolve) => silent?.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const pool = new pg.Pool({ host: '127.0.0.1', port, connectionTimeoutMillis: 100 });
    const store = new PostgresStore({ pool });
    const settled = await Promise.allSettled(
      Array.from({ length: 8 }, () => store.update('p', () => ({ result: null }))),
    );
    await pool.end();
    expect([settled.map((r) => r.status), connections]).toEqual([Array(8).fill('rejected'), 1]);
  });

  it('makes a budget check through an unreachable store answer denied with storeUnavailable "deny"', async () => {
    const store = new PostgresStore({ url: 'postgres://127.0.0.1:1/test' });
    const service = new AutonomyGuardrailService({ store, storeUnavailable: 'deny' });
    const check = await service.checkToolBudget('p', 1);
    await store.close();
    expect([check.allowed, check.reason]).toEqual([false, expect.stringMatching(/ECONNREFUSED/)]);
  });

  it('makes a budget check through an unreachable store reject instead of allowing it', async () => {
    const store = new PostgresStore({ url: 'postgres://127.0.0.1:1/test' });
    const service = new AutonomyGuardrailService({ store });
    const error = await rejection(service.checkToolBudget('p', 1));
    await store.close();
    expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE' });
  });
});

describe.skipIf(skip)('PostgresStore', () => {
  const schema = freshSchemaName();
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 10 });
  let tables = 0;

  /** A store on tables of its own, migrated. */
  async function migrated(options: Partial<PostgresStoreOptions> = {}): Promise<PostgresStore> {
    const store = new PostgresStore({ pool, schema, tablePrefix: `t${++tables}_`, ...options });
    await store.migrate();
    return store;
  }

  /** A table of `store`, schema and prefix included. */
  const tableOf = (store: PostgresStore, name: string) => `"${schema}"."${store.tablePrefix}${name}"`;

  /**
   * Takes `store`'s tables back to the schema of `version`, as that version of leash left them, undoing
   * each newer migration (the approvals' tool and preview columns, then the plans' versions).
   */
  async function backTo(store: PostgresStore, version: number): Promise<void> {
    const t = (name: string) => tableOf(store, name);
    if (version < 9) {
      for (const table of ['principals', 'tokens', 'notifications'])
        await pool.query(`DROP TABLE ${t(table)}`);
      await pool.query(`ALTER TABLE ${t('approvals')} DROP COLUMN review`);
    }
    if (version < 8) {
      for (const table of ['spend_caps', 'cap_windows', 'caps_version'])
        await pool.query(`DROP TABLE ${t(table)}`);
    }
    if (version < 6) {
      await pool.query(`ALTER TABLE ${t('approvals')} DROP COLUMN tool_name, DROP COLUMN input_preview`);
    }
    if (version < 5) {
      await pool.query(`DROP TRIGGER "${store.tablePrefix}plans_version" ON ${t('plans')}`);
      await pool.query(`DROP FUNCTION ${t('new_plan_version')}()`);
      await pool.query(`ALTER TABLE ${t('plans')} DROP COLUMN version`);
      await pool.query(`DROP SEQUENCE ${t('plan_versions')}`);
    }
    await pool.query(`DELETE FROM ${t('schema_version')} WHERE version > $1`, [version]);
  }

  /** Rows of one of `store`'s tables. */
  async function count(store: PostgresStore, table: string): Promise<number> {
    const found = await pool.query<{ n: number }>(
      `SELECT count(*)::integer AS n FROM "${store.schema}"."${store.tablePrefix}${table}"`,
    );
    return found.rows[0]?.n ?? -1;
  }

  beforeAll(async () => {
    await pool.query(`CREATE SCHEMA "${schema}"`);
  });

  afterAll(async () => {
    // The tables go first, a few at a time: one statement dropping every store's objects at once takes
    // more locks than a server with the default max_locks_per_transaction has room for.
    const found = await pool.query<{ name: string }>(
      'SELECT tablename AS name FROM pg_tables WHERE schemaname = $1',
      [schema],
    );
    const names = found.rows.map((r) => `"${schema}"."${r.name}"`);
    for (let i = 0; i < names.length; i += 50) {
      await pool.query(`DROP TABLE IF EXISTS ${names.slice(i, i + 50).join(', ')} CASCADE`);
    }
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  }, 120_000); // every case made tables of its own: thousands to drop

  runStoreContract('PostgresStore', {
    test: vitestFunctions,
    newStore: (o) => migrated({ auditCapacity: 5000, ...o }),
    setEntryColumn: async (store, planId, seq, column, text) => {
      const { schema: s, tablePrefix } = store as PostgresStore;
      await pool.query(
        `UPDATE "${s}"."${tablePrefix}audit_entries" SET ${column} = $1 WHERE plan_id = $2 AND seq = $3`,
        [text, planId, seq],
      );
    },
  });

  /** Pools of the stores `sharing` opened, ended after each test. */
  const shared: pg.Pool[] = [];
  afterEach(async () => {
    await Promise.all(shared.splice(0).map((p) => p.end()));
  });
  runSqlStoreSuite('PostgresStore', {
    open: (options = {}) => migrated(options),
    sharing: async (store) => {
      const own = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
      shared.push(own);
      return new PostgresStore({ pool: own, schema, tablePrefix: (store as PostgresStore).tablePrefix });
    },
    exec: async (store, sql) => {
      await pool.query(sql.replace(/\{(\w+)\}/g, (_, name: string) => tableOf(store as PostgresStore, name)));
    },
    count: (store, table) => count(store as PostgresStore, table),
    markNewer: async (store) => {
      await pool.query(
        `INSERT INTO ${tableOf(store as PostgresStore, 'schema_version')} (version) VALUES ($1)`,
        [POSTGRES_SCHEMA_VERSION + 1],
      );
    },
    refuseEntries: async (store) => {
      const table = tableOf(store as PostgresStore, 'audit_entries');
      const refuse = tableOf(store as PostgresStore, 'refuse');
      await pool.query(
        `CREATE FUNCTION ${refuse}() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN RAISE EXCEPTION 'refused'; END $$`,
      );
      await pool.query(
        `CREATE TRIGGER refuse BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION ${refuse}()`,
      );
      return async () => void (await pool.query(`DROP TRIGGER refuse ON ${table}`));
    },
  });

  describe('migrate', () => {
    it('lets the approvals table hold every approval status there is, and no other', async () => {
      const store = await migrated();
      const { rows } = await pool.query<{ def: string }>(
        `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint
          WHERE conrelid = $1::regclass AND contype = 'c'`,
        [tableOf(store, 'approvals')],
      );
      const check = rows.map((r) => r.def).find((d) => d.includes('status')) ?? '';
      expect([...check.matchAll(/'([a-z]+)'/g)].map((m) => m[1])).toEqual([...APPROVAL_STATUSES]);
    });

    it('lets concurrent migrations of one set of tables wait for each other', async () => {
      const stores = Array.from(
        { length: 5 },
        () => new PostgresStore({ pool, schema, tablePrefix: `t${tables + 1}_` }),
      );
      tables++;
      await Promise.all(stores.map((s) => s.migrate()));
      const versions = await pool.query(
        `SELECT version FROM "${schema}"."${stores[0]?.tablePrefix}schema_version"`,
      );
      expect(versions.rows).toEqual(
        Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, i) => ({ version: i + 1 })),
      );
    });

    it('creates a schema that does not exist yet', async () => {
      const own = `${schema}_x`;
      try {
        const store = new PostgresStore({ pool, schema: own });
        await store.migrate();
        await store.put('p', AutonomyGuardrails.create());
        expect(await store.get('p')).not.toBeNull();
      } finally {
        await pool.query(`DROP SCHEMA IF EXISTS "${own}" CASCADE`);
      }
    });

    it('refuses to use tables migrated by a newer version', async () => {
      const first = await migrated();
      await pool.query(`INSERT INTO "${schema}"."${first.tablePrefix}schema_version" (version) VALUES ($1)`, [
        POSTGRES_SCHEMA_VERSION + 1,
      ]);
      const store = new PostgresStore({ pool, schema, tablePrefix: first.tablePrefix });
      await expect(store.get('p')).rejects.toMatchObject({ code: 'STORE_SCHEMA_TOO_NEW' });
    });

    it('reads the approvals of tables from before approvals named a tool, and keeps a tool on new ones', async () => {
      const store = await migrated();
      await store.put('p', AutonomyGuardrails.create());
      await backTo(store, 5);
      const old = OLD_APPROVAL;
      await pool.query(
        `INSERT INTO ${tableOf(store, 'approvals')} (id, plan_id, decision_id, operation, input_hash,
           requested_at, expires_at, status) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [
          old.id,
          old.planId,
          old.decisionId,
          old.operation,
          old.inputHash,
          old.requestedAt,
          old.expiresAt,
          old.status,
        ],
      );
      const again = new PostgresStore({ pool, schema, tablePrefix: store.tablePrefix });
      await again.migrate();
      const shown = { ...old, id: 'new', toolName: 'deploy', inputPreview: '{"to":"prod"}' };
      await again.update('p', () => ({ result: null, newApproval: shown }));
      expect([await again.getApproval('old'), await again.getApproval('new')]).toStrictEqual([old, shown]);
    });

    it('refuses, with STORE_NOT_MIGRATED, to use tables that were never migrated', async () => {
      const store = new PostgresStore({ pool, schema, tablePrefix: `t${++tables}_` });
      await expect(store.get('p')).rejects.toMatchObject({ code: 'STORE_NOT_MIGRATED' });
    });
  });

  describe('exists', () => {
    it('is true once the tables are migrated', async () => {
      const store = await migrated();
      expect(await store.exists()).toBe(true);
    });

    it('is false for tables never migrated', async () => {
      const store = new PostgresStore({ pool, schema, tablePrefix: `t${++tables}_` });
      expect(await store.exists()).toBe(false);
    });

    it('is false for a schema that does not exist', async () => {
      const store = new PostgresStore({ pool, schema: `${schema}_y` });
      expect(await store.exists()).toBe(false);
    });
  });

  describe('durable audit entries', () => {
    it('numbers the entries of a plan 1, 2, 3… in the order the updates ran', async () => {
      const store = await migrated();
      await store.put('p', AutonomyGuardrails.create());
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          store.update('p', () => ({ result: null, audit: stepEntry(i) })),
        ),
      );
      const found = await pool.query<{ seq: string }>(
        `SELECT seq FROM "${schema}"."${store.tablePrefix}audit_entries" ORDER BY seq`,
      );
      expect(found.rows.map((r) => Number(r.seq))).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    });
  });

  describe('several stores on the same tables', () => {
    it('grants exactly the budget to concurrent check-and-spend updates through three pools', async () => {
      const first = await migrated();
      const pools = Array.from({ length: 3 }, () => new pg.Pool({ connectionString: DATABASE_URL, max: 3 }));
      const stores = pools.map((p) => new PostgresStore({ pool: p, schema, tablePrefix: first.tablePrefix }));
      try {
        await first.put('p', AutonomyGuardrails.create({ toolBudget: 0.0001 }));
        const spend = (g: AutonomyGuardrails | null) => {
          const allowed = g?.checkToolBudgetMicros(1).allowed ?? false;
          return allowed ? { result: true, mutation: { spendMicros: 1 } } : { result: false };
        };
        const granted = await Promise.all(
          stores.flatMap((s) => Array.from({ length: 100 }, () => s.update('p', spend))),
        );
        expect(granted.filter(Boolean)).toHaveLength(100);
      } finally {
        await Promise.all(pools.map((p) => p.end()));
      }
    });
  });

  describe('updates decided from the plan as this store last wrote it', () => {
    /** One unit spent per update, with its entry, while the budget lasts; says whether it was allowed. */
    const spendOne = (g: AutonomyGuardrails | null) => {
      const allowed = g?.checkToolBudgetMicros(1_000_000).allowed === true;
      return {
        result: allowed,
        ...(allowed ? { mutation: { spendMicros: 1_000_000 }, audit: stepEntry(1) } : {}),
      };
    };

    /** Another store, with a pool of its own, on the tables of `store`. */
    function sharing(store: PostgresStore): { other: PostgresStore; end: () => Promise<void> } {
      const otherPool = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
      const other = new PostgresStore({ pool: otherPool, schema, tablePrefix: store.tablePrefix });
      return { other, end: () => otherPool.end() };
    }

    it('sees a plan deleted and configured again by another store', async () => {
      const store = await migrated();
      const { other, end } = sharing(store);
      try {
        await store.put('p', AutonomyGuardrails.create({ toolBudget: 2 }));
        await store.update('p', spendOne);
        await other.delete('p');
        await other.put('p', AutonomyGuardrails.create({ toolBudget: 2, budgetSpent: 2 }));
        expect(await store.update('p', spendOne)).toBe(false);
      } finally {
        await end();
      }
    });
  });

  describe('plan versions, heads and closing', () => {
    it('serves a role granted only the tables, with no privilege on the version sequence', async () => {
      const store = await migrated();
      const role = `${schema}_writer`;
      const password = randomBytes(12).toString('hex');
      await pool.query(`CREATE ROLE "${role}" LOGIN PASSWORD '${password}'`);
      const url = new URL(DATABASE_URL);
      url.username = role;
      url.password = password;
      const limited = new pg.Pool({ connectionString: url.toString(), max: 2 });
      try {
        await pool.query(`GRANT USAGE ON SCHEMA "${schema}" TO "${role}"`);
        await pool.query(
          `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "${schema}" TO "${role}"`,
        );
        const writer = new PostgresStore({ pool: limited, schema, tablePrefix: store.tablePrefix });
        await writer.put('p', AutonomyGuardrails.create({ maxSteps: 5 }));
        await writer.update('p', () => ({ result: null, audit: stepEntry(1), mutation: { steps: 1 } }));
        expect((await store.get('p'))?.guardrails.stepCount).toBe(1);
      } finally {
        await limited.end();
        await pool.query(`DROP OWNED BY "${role}"`);
        await pool.query(`DROP ROLE "${role}"`);
      }
    });

    it('gives each plan stored before plan versions existed a version of its own when migrating', async () => {
      const store = await migrated();
      await store.put('p', AutonomyGuardrails.create());
      await store.put('q', AutonomyGuardrails.create());
      await store.update('p', () => ({ result: null, audit: stepEntry(1) }));
      await backTo(store, 4);
      const again = new PostgresStore({ pool, schema, tablePrefix: store.tablePrefix });
      await again.migrate();
      await again.update('p', () => ({ result: null, audit: stepEntry(2) }));
      await again.update('p', () => ({ result: null, audit: stepEntry(3) }));
      const versions = await pool.query<{ n: number; distinct: number }>(
        `SELECT count(*)::integer AS n, count(DISTINCT version)::integer AS distinct FROM ${tableOf(store, 'plans')}`,
      );
      const report = await verifyAuditLog(again, 'p');
      expect([versions.rows[0], report.ok, report.size]).toEqual([{ n: 2, distinct: 2 }, true, 3]);
    });

    it('answers a change that writes nothing for a plan whose last entry cannot be read', async () => {
      const store = await migrated();
      await store.put('p', AutonomyGuardrails.create());
      await store.update('p', () => ({ result: null, audit: stepEntry(1) }));
      await pool.query(`UPDATE "${schema}"."${store.tablePrefix}plans" SET head_hash = NULL`);
      const fresh = new PostgresStore({ pool, schema, tablePrefix: store.tablePrefix });
      expect(await fresh.update('p', (g) => ({ result: g?.maxSteps }))).toBeNull();
      await expect(fresh.update('p', () => ({ result: null, audit: stepEntry(2) }))).rejects.toMatchObject({
        code: 'STORE_CORRUPT',
      });
    });

    it('finishes the updates already made before close resolves', async () => {
      const store = await migrated();
      await store.put('p', AutonomyGuardrails.create());
      let done = false;
      const made = store
        .update('p', () => ({ result: null, audit: stepEntry(1) }))
        .then(() => {
          done = true;
        });
      await store.close();
      const doneAtClose = done;
      await made;
      expect(doneAtClose).toBe(true);
    });
  });

  describe('fails closed', () => {
    it('rejects with STORE_UNAVAILABLE when the plan stays locked past the lock timeout', async () => {
      const store = await migrated();
      await store.put('p', AutonomyGuardrails.create({ toolBudget: 1 }));
      const impatient = new pg.Pool({ connectionString: DATABASE_URL, max: 1, lock_timeout: 100 });
      const waiting = new PostgresStore({ pool: impatient, schema, tablePrefix: store.tablePrefix });
      const holder = await pool.connect();
      try {
        await holder.query('BEGIN');
        await holder.query(`SELECT 1 FROM "${schema}"."${store.tablePrefix}plans" FOR UPDATE`);
        const error = await rejection(waiting.update('p', () => ({ result: null })));
        expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE', cause: { code: '55P03' } });
      } finally {
        await holder.query('ROLLBACK');
        holder.release();
        await impatient.end();
      }
    });

    it('says that updates were not sent when no connection could be had for their write', async () => {
      const store = await migrated();
      await store.put('p', AutonomyGuardrails.create());
      const single = new pg.Pool({ connectionString: DATABASE_URL, max: 1, connectionTimeoutMillis: 100 });
      const starved = new PostgresStore({ pool: single, schema, tablePrefix: store.tablePrefix });
      try {
        await starved.update('p', () => ({ result: 0, audit: stepEntry(0) })); // the plan is now cached
        const taken = await single.connect();
        const settled = await Promise.allSettled(
          [1, 2, 3].map((i) => starved.update('p', () => ({ result: i, audit: stepEntry(i) }))),
        );
        taken.release();
        const reasons = settled.map((r) => (r.status === 'rejected' ? String(r.reason.message) : 'resolved'));
        expect([
          reasons.every((m) => m.includes('timeout') && !m.includes('may or may not')),
          (await store.readAuditLog('p')).length,
        ]).toEqual([true, 1]);
      } finally {
        await single.end();
      }
    });

    it('goes on with the waiting updates of a plan after one the server refused', async () => {
      const store = await migrated();
      await store.put('p', AutonomyGuardrails.create());
      const patient = new pg.Pool({ connectionString: DATABASE_URL, max: 2, lock_timeout: 2_000 });
      const waiting = new PostgresStore({ pool: patient, schema, tablePrefix: store.tablePrefix });
      const holder = await pool.connect();
      try {
        await holder.query('BEGIN');
        await holder.query(`SELECT 1 FROM "${schema}"."${store.tablePrefix}plans" FOR UPDATE`);
        const updates = [1, 2, 3].map((i) => waiting.update('p', () => ({ result: i, audit: stepEntry(i) })));
        const first = await rejection(updates[0] as Promise<unknown>);
        await holder.query('ROLLBACK');
        const rest = await Promise.all(updates.slice(1));
        expect([
          first['code'],
          rest,
          (await store.readAuditLog('p')).map((e) => e.entry.details['i']),
        ]).toEqual(['STORE_UNAVAILABLE', [2, 3], [2, 3]]);
      } finally {
        holder.release();
        await patient.end();
      }
    });

    it('refuses a plan id that PostgreSQL would store changed (a lone surrogate)', async () => {
      const store = await migrated();
      await expect(store.put('p\ud800', AutonomyGuardrails.create())).rejects.toBeInstanceOf(
        GuardrailValidationError,
      );
    });

    it('keeps the first of two writers of one new approval id and refuses the second', async () => {
      const store = await migrated();
      await store.put('p', AutonomyGuardrails.create());
      await store.put('q', AutonomyGuardrails.create());
      const request = (planId: string) => ({
        id: 'a1',
        planId,
        decisionId: `d-${planId}`,
        operation: 'deploy',
        inputHash: 'a'.repeat(64),
        requestedAt: '2026-11-30T10:00:00.000Z',
        expiresAt: '2026-11-30T10:10:00.000Z',
        status: 'pending' as const,
      });
      const outcomes = await Promise.allSettled(
        ['p', 'q'].map((planId) =>
          store.update(planId, () => ({ result: null, newApproval: request(planId) })),
        ),
      );
      expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected']);
    });

    it.each([
      ['put', (s: PostgresStore) => s.put('p', AutonomyGuardrails.create({ maxSteps: 9 }))],
      ['create', (s: PostgresStore) => s.create('q', AutonomyGuardrails.create())],
      ['delete', (s: PostgresStore) => s.delete('p')],
      ['update', (s: PostgresStore) => s.update('p', () => ({ result: null, audit: stepEntry(2) }))],
      [
        'savePlanDocument',
        (s: PostgresStore) =>
          s.savePlanDocument({
            planId: 'p',
            phase: 'execute',
            body: {},
            updatedAt: '2026-11-30T10:00:00.000Z',
          }),
      ],
    ])('says a %s whose answer was lost may have been committed', async (_name, writeWith) => {
      const store = await migrated();
      await store.put('p', AutonomyGuardrails.create());
      const relay = await relayTo(DATABASE_URL);
      const relayed = new pg.Pool({ connectionString: relay.url, max: 1 });
      relayed.on('error', () => undefined);
      const cut = new PostgresStore({ pool: relayed, schema, tablePrefix: store.tablePrefix });
      try {
        // Its schema checked, and the plan as it wrote it kept, so the next update is one statement.
        await cut.update('p', () => ({ result: null, audit: stepEntry(1), mutation: { steps: 1 } }));
        void relay.arm('cut');
        const error = await rejection(writeWith(cut));
        expect([error['code'], isStoreOutcomeUnknownError(error)]).toEqual(['STORE_UNAVAILABLE', true]);
      } finally {
        await relayed.end();
        await relay.close();
      }
    });
  });

  describe('close', () => {
    it('ends the pool it created from a url', async () => {
      const end = vi.spyOn(pg.Pool.prototype, 'end');
      try {
        const store = new PostgresStore({ url: DATABASE_URL, schema, tablePrefix: `t${++tables}_` });
        await store.close();
        expect(end).toHaveBeenCalledTimes(1);
      } finally {
        end.mockRestore();
      }
    });

    it('leaves a pool passed in open', async () => {
      const store = await migrated();
      await store.close();
      expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    });
  });
});
