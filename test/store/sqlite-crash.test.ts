import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutonomyGuardrailService, verifyAuditLog, type ChainedEntry } from '../../src/index.js';
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';
import type { WorkerMessage } from './sqlite-worker.js';

const WORKER = fileURLToPath(new URL('./sqlite-worker.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PLAN = 'crash-plan';

/** Money spent according to the log alone: the cost of every allowed budget check. */
function replaySpent(log: readonly ChainedEntry[]): number {
  return log
    .filter((e) => e.entry.event_type === 'budget_allowed')
    .reduce((sum, e) => sum + (e.entry.details['cost'] as number), 0);
}

describe('a SqliteStore writer killed with SIGKILL in the middle of its checks', () => {
  let dir: string;
  let store: SqliteStore;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'leash-sqlite-crash-'));
    const path = join(dir, 'crash.db');
    const setup = new SqliteStore({ path });
    await setup.migrate();
    await new AutonomyGuardrailService({ store: setup }).configureGuardrails(PLAN, { toolBudget: 1_000_000 });
    await setup.close();

    const child = fork(WORKER, [path, PLAN, '1000000', '300'], {
      cwd: ROOT,
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.on('message', (m: WorkerMessage) => {
      if (m.type === 'ready') child.send('go');
      // Killed while it goes on checking: the kill lands between, or inside, its transactions.
      if (m.type === 'progress') child.kill('SIGKILL');
    });
    await exited;
    store = new SqliteStore({ path });
    await store.migrate();
  }, 60_000);

  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('leaves an audit log that verifies', async () => {
    const report = await verifyAuditLog(store, PLAN);
    expect([report.ok, report.findings]).toEqual([true, []]);
  });

  it('leaves the work of the killed writer in the log', async () => {
    expect((await store.readAuditLog(PLAN)).length).toBeGreaterThanOrEqual(300);
  });

  it('leaves stored spending equal to a replay of the log', async () => {
    const record = await store.get(PLAN);
    expect(record?.guardrails.budgetSpent).toBe(replaySpent(await store.readAuditLog(PLAN)));
  });
});
