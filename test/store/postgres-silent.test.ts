import { Socket } from 'node:net';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { AuditEntry, AutonomyGuardrails, isStoreOutcomeUnknownError } from '../../src/index.js';
import { PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres/PostgresStore.js';
import { poolConfig } from '../../src/store/postgres/options.js';
import { thrown } from '../support/thrown.js';
import { DATABASE_URL, freshSchemaName, lockRows, skipWithoutServer } from './postgres-support.js';
import { relayTo, type Relay } from './postgres-relay.js';

const skip = await skipWithoutServer('test/store/postgres-silent.test.ts');

// Short enough for a test to wait out, long enough for a loaded machine's healthy round trips.
const SHORT = { connectionTimeoutMs: 300, statementTimeoutMs: 300, queryTimeoutMs: 400 } as const;

function stepEntry(i: number): AuditEntry {
  return AuditEntry.create({
    eventType: 'step_allowed',
    guardName: 'step_limit',
    timestamp: Date.parse('2026-11-30T10:00:00.000Z') + i,
    details: { i },
  });
}

/** What `promise` rejects with: its code, and whether it says the change may have been committed. */
async function failure(promise: Promise<unknown>): Promise<{ code: unknown; outcomeUnknown: boolean }> {
  try {
    await promise;
  } catch (error) {
    return { code: (error as { code?: unknown }).code, outcomeUnknown: isStoreOutcomeUnknownError(error) };
  }
  throw new Error('expected a rejection, the promise resolved');
}

const unsent = { code: 'STORE_UNAVAILABLE', outcomeUnknown: false };
const maybeWritten = { code: 'STORE_UNAVAILABLE', outcomeUnknown: true };

describe('PostgresStore timeout options', () => {
  const url = 'postgres://127.0.0.1:1/test';

  it('makes its pool with a 10 s connection timeout, 30 s statement and 35 s query timeouts, and keep-alive after 10 s', () => {
    expect(poolConfig({})).toEqual({
      connectionTimeoutMillis: 10_000,
      statement_timeout: 30_000,
      idle_in_transaction_session_timeout: 30_000,
      query_timeout: 35_000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
  });

  it('waits 5 s longer for an answer than the server lets a statement run, unless told otherwise', () => {
    expect(poolConfig({ statementTimeoutMs: 60_000 }).query_timeout).toBe(65_000);
  });

  it('leaves the statement timeout to the server when it is null', () => {
    expect(poolConfig({ statementTimeoutMs: null })).not.toHaveProperty('statement_timeout');
  });

  it.each([
    ['connectionTimeoutMs', 0],
    ['statementTimeoutMs', -1],
    ['queryTimeoutMs', 1.5],
    ['queryTimeoutMs', 2 ** 31],
    ['keepAliveInitialDelayMs', 999],
    ['keepAlive', 'yes'],
  ] as const)('refuses %s %j, naming the field and the value', (field, value) => {
    const error = thrown(() => new PostgresStore({ url, [field]: value } as PostgresStoreOptions));
    expect([error.field, error.message]).toEqual([field, expect.stringContaining(String(value))]);
  });

  it('refuses a query timeout shorter than the statement timeout', () => {
    const error = thrown(() => new PostgresStore({ url, statementTimeoutMs: 5_000, queryTimeoutMs: 4_000 }));
    expect([error.field, error.message]).toEqual(['queryTimeoutMs', expect.stringContaining('4000')]);
  });

  it('refuses a timeout given with a pool, which the pool’s owner sets', () => {
    const pool = new pg.Pool({ connectionString: url });
    const error = thrown(() => new PostgresStore({ pool, queryTimeoutMs: 1_000 }));
    expect(error.field).toBe('queryTimeoutMs');
  });
});

describe.skipIf(skip)('a PostgresStore on a network that goes silent', () => {
  const schema = freshSchemaName();
  const admin = new pg.Pool({ connectionString: DATABASE_URL, max: 4 });
  let tables = 0;
  let relay: Relay;
  const opened: PostgresStore[] = [];

  /**
   * Plan "p" configured on new tables, and a store of those tables connected through `relay` with short
   * timeouts. `warm` makes one update through it first, so that its next update of "p" is written in
   * one statement; otherwise that update runs in a transaction that locks the plan's row.
   */
  async function relayed(warm: boolean, options: Partial<PostgresStoreOptions> = {}): Promise<PostgresStore> {
    const tablePrefix = `t${++tables}_`;
    const direct = new PostgresStore({ pool: admin, schema, tablePrefix });
    await direct.migrate();
    await direct.put('p', AutonomyGuardrails.create());
    const store = new PostgresStore({ url: relay.url, schema, tablePrefix, ...SHORT, ...options });
    opened.push(store);
    if (warm) await store.update('p', () => ({ result: null, audit: stepEntry(0), mutation: { steps: 1 } }));
    return store;
  }

  const step = (store: PostgresStore, i: number) =>
    store.update('p', () => ({ result: i, audit: stepEntry(i), mutation: { steps: 1 } }));

  beforeAll(async () => {
    await admin.query(`CREATE SCHEMA "${schema}"`);
  });

  beforeEach(async () => {
    relay = await relayTo(DATABASE_URL);
  });

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
    await relay.close();
  });

  afterAll(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  });

  describe('an update written in one statement', () => {
    it('rejects as outcome unknown when the answer does not come', async () => {
      const store = await relayed(true);
      const update = step(store, 1);
      await relay.arm('silence');
      expect(await failure(update)).toEqual(maybeWritten);
    });

    it('refuses the updates queued behind it as not sent', async () => {
      const store = await relayed(true);
      const first = step(store, 1);
      await relay.arm('silence');
      const queued = [2, 3].map((i) => failure(step(store, i)));
      expect([await failure(first), ...(await Promise.all(queued))]).toEqual([maybeWritten, unsent, unsent]);
    });
  });

  describe('an update in a transaction that locks the plan', () => {
    it('rejects as outcome unknown when the answer to its COMMIT does not come', async () => {
      const store = await relayed(false);
      const struck = relay.arm('silence', { after: 'COMMIT' });
      const update = step(store, 1);
      await struck;
      expect(await failure(update)).toEqual(maybeWritten);
    });

    it('rejects as not written when its connection goes silent before the COMMIT', async () => {
      const store = await relayed(false);
      const struck = relay.arm('silence', { after: 'FOR UPDATE' });
      const update = step(store, 1);
      await struck;
      expect(await failure(update)).toEqual(unsent);
    });

    it('gives up at the query timeout of the statement that went silent, trying no ROLLBACK on it', async () => {
      const store = await relayed(false);
      const struck = relay.arm('silence', { after: 'FOR UPDATE' });
      const update = failure(step(store, 1));
      await struck;
      // The clock stands still from here: the query timeout already running ends the update, and a
      // ROLLBACK waiting for its own query timeout on the silent connection would never end.
      vi.useFakeTimers({ toFake: ['setTimeout'] });
      try {
        expect(await update).toEqual(unsent);
      } finally {
        vi.useRealTimers();
      }
    });

    it('refuses the updates queued behind it as not sent', async () => {
      const store = await relayed(false);
      const struck = relay.arm('silence', { after: 'COMMIT' });
      const first = step(store, 1);
      await struck;
      const queued = [2, 3].map((i) => failure(step(store, i)));
      expect([await failure(first), ...(await Promise.all(queued))]).toEqual([maybeWritten, unsent, unsent]);
    });

    it('leaves the plan to other writers once the server ends the silent session', async () => {
      const store = await relayed(false);
      const struck = relay.arm('silence', { after: 'FOR UPDATE' });
      const update = failure(step(store, 1));
      await struck; // the plan's row is locked by a session that hears nothing more
      const other = new PostgresStore({ pool: admin, schema, tablePrefix: store.tablePrefix });
      expect([await step(other, 2), await update]).toEqual([2, unsent]);
    });
  });

  it.each([
    ['put', (s: PostgresStore) => s.put('p', AutonomyGuardrails.create({ maxSteps: 9 }))],
    ['create', (s: PostgresStore) => s.create('q', AutonomyGuardrails.create())],
    ['delete', (s: PostgresStore) => s.delete('p')],
  ])('rejects a %s whose answer does not come as outcome unknown', async (_name, writeWith) => {
    const store = await relayed(true);
    const written = writeWith(store);
    await relay.arm('silence answers');
    expect(await failure(written)).toEqual(maybeWritten);
  });

  it('rejects a read whose answer does not come as unavailable', async () => {
    const store = await relayed(true);
    const read = store.get('p');
    await relay.arm('silence');
    expect(await failure(read)).toEqual(unsent);
  });

  describe('silent from the start', () => {
    it('rejects a read as unavailable once connecting times out', async () => {
      const store = await relayed(false);
      relay.silence();
      expect(await failure(store.get('p'))).toEqual(unsent);
    });

    it('rejects an update as unavailable, not outcome unknown, once connecting times out', async () => {
      const store = await relayed(false);
      relay.silence();
      expect(await failure(step(store, 1))).toEqual(unsent);
    });
  });

  describe('close', () => {
    it('returns while an update waits for an answer that does not come', async () => {
      const store = await relayed(true);
      const update = failure(step(store, 1));
      await relay.arm('silence');
      await store.close();
      expect(await update).toEqual(maybeWritten);
    });

    it('leaves none of its sockets open on a silent network', async () => {
      const connect = vi.spyOn(Socket.prototype, 'connect');
      try {
        const store = await relayed(true);
        relay.silence();
        await store.close();
        // Its goodbye went unanswered: a socket waiting for the server's close would be open still.
        const port = Number(new URL(relay.url).port);
        const sockets = connect.mock.contexts.filter(
          (_, i) => (connect.mock.calls[i] as unknown[])[0] === port,
        );
        expect(sockets.map((s) => (s as Socket).destroyed)).toEqual([true]);
      } finally {
        connect.mockRestore();
      }
    });
  });

  it('turns TCP keep-alive on for its connections, probing after 10 s of silence', async () => {
    const keepAlive = vi.spyOn(Socket.prototype, 'setKeepAlive');
    try {
      const store = await relayed(false);
      await store.get('p');
      expect(keepAlive).toHaveBeenCalledWith(true, 10_000);
    } finally {
      keepAlive.mockRestore();
    }
  });

  it('has the server cancel a statement that waits longer than the statement timeout', async () => {
    const store = await relayed(true, { queryTimeoutMs: 5_000 });
    const lock = await lockRows(admin, `"${schema}"."${store.tablePrefix}plans"`);
    try {
      const error = await step(store, 1).catch((e: unknown) => e);
      expect([
        isStoreOutcomeUnknownError(error),
        (error as { cause?: { code?: unknown } }).cause?.code,
      ]).toEqual([false, '57014']);
    } finally {
      await lock.unlock();
    }
  });
});
