import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutonomyGuardrailService, verifyAuditLog, type ChainedEntry } from '../../src/index.js';
import { PostgresStore } from '../../src/store/postgres/PostgresStore.js';
import { DATABASE_URL, freshSchemaName, skipWithoutServer } from './postgres-support.js';
import type { WorkerJob, WorkerMessage } from './postgres-worker.js';

const skip = await skipWithoutServer('test/store/postgres-crash.test.ts');

const WORKER = fileURLToPath(new URL('./postgres-worker.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Money spent according to the log alone: the cost of every allowed budget check. */
function replaySpent(log: readonly ChainedEntry[]): number {
  return log
    .filter((e) => e.entry.event_type === 'budget_allowed')
    .reduce((sum, e) => sum + (e.entry.details['cost'] as number), 0);
}

describe.skipIf(skip)('a PostgresStore writer killed with SIGKILL in the middle of its checks', () => {
  const schema = freshSchemaName();
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
  const store = new PostgresStore({ pool, schema, tablePrefix: 'leash_' });

  beforeAll(async () => {
    await store.migrate();
    await new AutonomyGuardrailService({ store }).configureGuardrails('plan', { toolBudget: 1_000_000 });
    const job: WorkerJob = {
      url: DATABASE_URL,
      schema,
      tablePrefix: 'leash_',
      planId: 'plan',
      calls: 1_000_000,
      progressEvery: 100,
    };
    const child = fork(WORKER, [JSON.stringify(job)], {
      cwd: ROOT,
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.on('message', (m: WorkerMessage) => {
      if (m.type === 'ready') child.send('go');
      if (m.type === 'progress') child.kill('SIGKILL');
    });
    await exited;
  }, 60_000);

  afterAll(async () => {
    await store.close();
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  });

  it('leaves an audit log that verifies', async () => {
    const report = await verifyAuditLog(store, 'plan');
    expect([report.ok, report.findings]).toEqual([true, []]);
  });

  it('leaves the work of the killed writer in the log', async () => {
    expect((await store.readAuditLog('plan')).length).toBeGreaterThanOrEqual(100);
  });

  it('leaves stored spending equal to a replay of the log', async () => {
    const record = await store.get('plan');
    expect(record?.guardrails.budgetSpent).toBe(replaySpent(await store.readAuditLog('plan')));
  });
});
