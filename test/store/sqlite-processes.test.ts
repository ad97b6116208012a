import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutonomyGuardrailService, verifyAuditLog } from '../../src/index.js';
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';
import { exited, messageReader } from '../support/processes.js';
import type { WorkerMessage } from './sqlite-worker.js';

const WORKER = fileURLToPath(new URL('./sqlite-worker.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PROCESSES = 8;
const CHECKS_EACH = 2000;
const BUDGET = 5000;
const PLAN = 'shared-plan';

const next = messageReader<WorkerMessage>();

describe(`SqliteStore shared by ${PROCESSES} processes checking one budget`, () => {
  let dir: string;
  let path: string;
  let store: SqliteStore;
  let allowed: number[];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'leash-sqlite-processes-'));
    path = join(dir, 'shared.db');
    store = new SqliteStore({ path });
    await store.migrate();
    await new AutonomyGuardrailService({ store }).configureGuardrails(PLAN, { toolBudget: BUDGET });

    const children = Array.from({ length: PROCESSES }, () =>
      fork(WORKER, [path, PLAN, String(CHECKS_EACH)], { cwd: ROOT, execArgv: ['--import', 'tsx'] }),
    );
    try {
      await Promise.all(children.map((c) => next(c, 'ready')));
      const done = children.map((c) => next(c, 'done'));
      // All start together once every process has opened the database, so their checks contend.
      for (const c of children) c.send('go');
      allowed = (await Promise.all(done)).map((m) => m.allowed);
    } finally {
      for (const c of children) if (c.exitCode === null) c.kill();
      await Promise.all(children.map(exited));
    }
  }, 300_000);

  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`allows exactly ${BUDGET} of the ${PROCESSES * CHECKS_EACH} checks`, () => {
    expect(allowed.reduce((a, b) => a + b, 0)).toBe(BUDGET);
  });

  it('spends exactly the budget', async () => {
    expect((await store.get(PLAN))?.guardrails.budgetSpent).toBe(BUDGET);
  });

  it('keeps a durable audit entry for every check', () => {
    const db = new Database(path, { readonly: true });
    try {
      const count = db.prepare('SELECT count(*) FROM leash_audit_entries WHERE plan_id = ?').pluck();
      expect(count.get(PLAN)).toBe(PROCESSES * CHECKS_EACH);
    } finally {
      db.close();
    }
  });

  it('keeps a durable log that verifies', async () => {
    const report = await verifyAuditLog(store, PLAN);
    expect([report.ok, report.size]).toEqual([true, PROCESSES * CHECKS_EACH]);
  });

  it('records exactly the allowed checks as allowed in the durable log', () => {
    const db = new Database(path, { readonly: true });
    try {
      const count = db.prepare(
        "SELECT count(*) FROM leash_audit_entries WHERE plan_id = ? AND event_type = 'budget_allowed'",
      );
      expect(count.pluck().get(PLAN)).toBe(BUDGET);
    } finally {
      db.close();
    }
  });
});
