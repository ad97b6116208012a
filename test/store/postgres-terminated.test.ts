import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AutonomyGuardrailService, verifyAuditLog, type ChainedEntry } from '../../src/index.js';
import { PostgresStore } from '../../src/store/postgres/PostgresStore.js';
import {
  DATABASE_URL,
  freshApplicationName,
  freshSchemaName,
  lockRows,
  lockWaitOf,
  skipWithoutServer,
  terminateBackends,
  urlWithApplicationName,
} from './postgres-support.js';

const skip = await skipWithoutServer('test/store/postgres-terminated.test.ts');

const unavailable = { code: 'STORE_UNAVAILABLE' };

/** How many budget checks the log records as allowed. */
function allowedInLog(log: readonly ChainedEntry[]): number {
  return log.filter((e) => e.entry.event_type === 'budget_allowed').length;
}

// A store's connections are ended by the server (`pg_terminate_backend`, as on a restart, a failover or
// a proxy reset) while it holds them. Such a connection emits 'error', which ends the process unless
// someone listens: these tests fail with that unhandled error when the store does not.
describe.skipIf(skip)('a PostgresStore whose connections the server ends', () => {
  const schema = freshSchemaName();
  const admin = new pg.Pool({ connectionString: DATABASE_URL, max: 4 });
  const holder = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
  const opened: PostgresStore[] = [];
  let tables = 0;

  /**
   * A store of its own on new tables, with plan "p" configured with a budget, under its own name. Its
   * first check locks the plan's row in a transaction; later ones are written in one statement.
   */
  async function configured(options: { storeUnavailable?: 'deny' } = {}) {
    const applicationName = freshApplicationName();
    const store = new PostgresStore({
      url: urlWithApplicationName(applicationName),
      schema,
      tablePrefix: `t${++tables}_`,
    });
    opened.push(store);
    await store.migrate();
    const service = new AutonomyGuardrailService({ store, ...options });
    await service.configureGuardrails('p', { toolBudget: 1_000_000 });
    return { store, service, applicationName };
  }

  /** Locks the plans of `store` until `unlock()`. */
  function lockPlans(store: PostgresStore) {
    return lockRows(holder, `"${schema}"."${store.tablePrefix}plans"`);
  }

  /**
   * Starts `check` while the plan's row is locked, so that it waits on the server, ends the store's
   * connections meanwhile, and gives back what the check came to.
   */
  async function endedDuring<T>(
    made: Awaited<ReturnType<typeof configured>>,
    check: () => Promise<T>,
  ): Promise<PromiseSettledResult<T>> {
    const lock = await lockPlans(made.store);
    try {
      const settled = Promise.allSettled([check()]);
      await lockWaitOf(admin, made.applicationName);
      await terminateBackends(admin, made.applicationName);
      return (await settled)[0];
    } finally {
      await lock.unlock();
    }
  }

  beforeAll(async () => {
    await admin.query(`CREATE SCHEMA "${schema}"`);
  });

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
  });

  afterAll(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await Promise.all([admin.end(), holder.end()]);
  });

  it('rejects with STORE_UNAVAILABLE a check in flight written in one statement', async () => {
    const made = await configured();
    await made.service.checkToolBudget('p', 1); // the store now decides the next check from this one
    const ended = await endedDuring(made, () => made.service.checkToolBudget('p', 1));
    expect(ended).toMatchObject({ status: 'rejected', reason: unavailable });
  });

  it('rejects with STORE_UNAVAILABLE a check in flight in a transaction that locks the plan', async () => {
    const made = await configured();
    const ended = await endedDuring(made, () => made.service.checkToolBudget('p', 1));
    expect(ended).toMatchObject({ status: 'rejected', reason: unavailable });
  });

  it('answers the check in flight denied with storeUnavailable "deny"', async () => {
    const made = await configured({ storeUnavailable: 'deny' });
    const ended = await endedDuring(made, () => made.service.checkToolBudget('p', 1));
    expect(ended).toMatchObject({ status: 'fulfilled', value: { allowed: false } });
  });

  it('answers the checks waiting behind the one in flight once the server answers again', async () => {
    const { store, service, applicationName } = await configured();
    await service.checkToolBudget('p', 1);
    const lock = await lockPlans(store);
    let waiting: Promise<boolean[]>;
    try {
      const first = expect(service.checkToolBudget('p', 1)).rejects.toMatchObject(unavailable);
      await lockWaitOf(admin, applicationName);
      waiting = Promise.all([2, 3].map(async (cost) => (await service.checkToolBudget('p', cost)).allowed));
      await terminateBackends(admin, applicationName);
      await first;
    } finally {
      await lock.unlock();
    }
    expect(await waiting).toEqual([true, true]);
  });

  describe('with its connections ended again and again while checks run', () => {
    let store: PostgresStore;
    let allowed = 0;

    beforeAll(async () => {
      const made = await configured();
      store = made.store;
      opened.splice(opened.indexOf(store), 1); // kept open until the checks below are done
      let started = 0;
      const terminations: Promise<number>[] = [];
      // Eight lanes of checks; every 25 checks answered, the server ends all of the store's connections.
      const lane = async () => {
        while (started < 400) {
          started++;
          const check = await made.service.checkToolBudget('p', 1).catch(() => null);
          if (check?.allowed) allowed++;
          if (started % 25 === 0) terminations.push(terminateBackends(admin, made.applicationName));
        }
      };
      await Promise.all(Array.from({ length: 8 }, lane));
      await Promise.all(terminations);
      // An idle connection the server ended last may not have heard so yet: the first read on it fails
      // (fail closed) and the pool drops it. Read until the store answers, at most once per connection.
      for (let tries = 1; ; tries++) {
        const answered = await store.listPlans().then(
          () => true,
          (error: unknown) => {
            if (tries > 10) throw error;
            return false;
          },
        );
        if (answered) break;
      }
    }, 60_000);

    afterAll(async () => {
      await store.close();
    });

    it('keeps a log that verifies', async () => {
      const report = await verifyAuditLog(store, 'p');
      expect([report.ok, report.findings]).toEqual([true, []]);
    });

    it('records every check it allowed', async () => {
      expect(allowedInLog(await store.readAuditLog('p'))).toBeGreaterThanOrEqual(allowed);
    });

    it('keeps the spending the log records', async () => {
      const record = await store.get('p');
      expect(record?.guardrails.budgetSpent).toBe(allowedInLog(await store.readAuditLog('p')));
    });
  });
});
