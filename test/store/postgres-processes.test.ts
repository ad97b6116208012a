import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutonomyGuardrailService, verifyAuditLog } from '../../src/index.js';
import { PostgresStore } from '../../src/store/postgres/PostgresStore.js';
import { DATABASE_URL, freshSchemaName, skipWithoutServer } from './postgres-support.js';
import type { WorkerJob, WorkerMessage } from './postgres-worker.js';

const skip = await skipWithoutServer('test/store/postgres-processes.test.ts');

const PROCESSES = 8;
const CALLS = 2000;
const BUDGET = 5000;
const WORKER = fileURLToPath(new URL('./postgres-worker.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Resolves with the worker's next message; rejects when it exits first. */
function nextMessage(child: ChildProcess): Promise<WorkerMessage> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`worker exited with ${code} before answering`));
    child.once('exit', onExit);
    child.once('message', (message) => {
      child.off('exit', onExit);
      const m = message as WorkerMessage;
      if (m.type === 'failed') reject(new Error(`worker failed: ${m.message}`));
      else resolve(m);
    });
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', resolve));
}

describe.skipIf(skip)(`PostgresStore shared by ${PROCESSES} processes`, () => {
  const schema = freshSchemaName();
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
  const store = new PostgresStore({ pool, schema, tablePrefix: 'leash_' });
  const service = new AutonomyGuardrailService({ store });
  const children: ChildProcess[] = [];
  let allowed = 0;

  beforeAll(async () => {
    await store.migrate();
    await service.configureGuardrails('plan', { toolBudget: BUDGET });
    const job: Omit<WorkerJob, 'calls'> = {
      url: DATABASE_URL,
      schema,
      tablePrefix: 'leash_',
      planId: 'plan',
    };
    for (let i = 0; i < PROCESSES; i++) {
      children.push(
        fork(WORKER, [JSON.stringify({ ...job, calls: CALLS })], {
          cwd: ROOT,
          execArgv: ['--import', 'tsx'],
          stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        }),
      );
    }
    await Promise.all(children.map((c) => nextMessage(c)));
    const done = children.map((c) => nextMessage(c));
    for (const child of children) child.send('go');
    for (const message of await Promise.all(done)) if (message.type === 'done') allowed += message.allowed;
    await Promise.all(children.map(exited));
  }, 300_000);

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill();
    await store.close();
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  });

  it('allows exactly the budget in total', () => {
    expect(allowed).toBe(BUDGET);
  });

  it('spends the whole budget and no more', async () => {
    expect((await service.getGuardrails('plan'))?.budgetSpent).toBe(BUDGET);
  });

  it('keeps a durable log that verifies', async () => {
    const report = await verifyAuditLog(store, 'plan');
    expect([report.ok, report.size]).toEqual([true, PROCESSES * CALLS]);
  });

  it('keeps a durable audit entry for every check of every process', async () => {
    const found = await pool.query<{ n: number }>(
      `SELECT count(*)::integer AS n FROM "${schema}".leash_audit_entries WHERE plan_id = 'plan'`,
    );
    expect(found.rows[0]?.n).toBe(PROCESSES * CALLS);
  });
});
