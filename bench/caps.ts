import path from 'node:path';
import pg from 'pg';
import { AutonomyGuardrailService, PostgresStore, SqliteStore, systemClock } from '../src/index.js';
import { measureTurns } from './drive.js';
import { fail, ROOMY_LIMITS } from './fixtures.js';

// Spend caps shared by many plans: 32 workers, each with a plan of its own, all under one team cap,
// against the same workers on plans no cap applies to and, on PostgreSQL, a naive transaction.

const WORKERS = 32;
const COST = 0.01;
const TIMING = { cellMs: 2_000, rounds: 4, warmupMs: 300 } as const;
/** Far more than any run spends. */
const CAP_LIMIT = 1_000_000_000;

interface Row {
  readonly engine: 'SQLite' | 'Postgres';
  readonly kind: 'plan-only' | 'capped' | 'naive';
  readonly label: string;
  readonly op: (worker: number) => Promise<unknown>;
}

/** A service over `store` with one plan per worker labelled team=ml, and the team cap when `capped`. */
async function plansOn(
  store: SqliteStore | PostgresStore,
  capped: boolean,
): Promise<(worker: number) => Promise<unknown>> {
  await store.migrate();
  const service = new AutonomyGuardrailService({ store, clock: systemClock });
  if (capped) {
    await service.installSpendCaps([
      { id: 'team-ml', match: { team: 'ml' }, limit: CAP_LIMIT, window: 'month' },
    ]);
  }
  const ids = Array.from({ length: WORKERS }, (_, i) => `bench-cap-${i}`);
  for (const id of ids) await service.configureGuardrails(id, { ...ROOMY_LIMITS, labels: { team: 'ml' } });
  return async (worker) => {
    const check = await service.checkToolBudget(ids[worker] as string, COST);
    if (!check.allowed) fail(`checkToolBudget denied: ${check.reason}`);
    return check;
  };
}

/** BEGIN; SELECT … FOR UPDATE of the cap row; the conditional update; the audit row; COMMIT. */
async function naive(pool: pg.Pool, schema: string): Promise<(worker: number) => Promise<unknown>> {
  const cap = `"${schema}".naive_cap`;
  const audit = `"${schema}".naive_audit`;
  await pool.query(
    `CREATE TABLE ${cap} (id integer PRIMARY KEY, spent bigint NOT NULL, cap bigint NOT NULL)`,
  );
  await pool.query(`INSERT INTO ${cap} VALUES (1, 0, $1)`, [Number.MAX_SAFE_INTEGER]);
  await pool.query(
    `CREATE TABLE ${audit} (plan_id text NOT NULL, seq bigserial, event_type text NOT NULL, ts bigint NOT NULL,
       details text NOT NULL, PRIMARY KEY (plan_id, seq))`,
  );
  return async (worker) => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(`SELECT spent, cap FROM ${cap} WHERE id = 1 FOR UPDATE`);
      const spent = await client.query(
        `UPDATE ${cap} SET spent = spent + 10000 WHERE id = 1 AND spent + 10000 <= cap RETURNING spent`,
      );
      if (spent.rowCount !== 1) fail('naive transaction refused');
      await client.query(`INSERT INTO ${audit} (plan_id, event_type, ts, details) VALUES ($1, $2, $3, $4)`, [
        `bench-cap-${worker}`,
        'budget_allowed',
        Date.now(),
        '{"cost":0.01,"spent":1234.56,"limit":1000000000}',
      ]);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  };
}

const ratio = (x: number): string => (Number.isFinite(x) ? `${x.toFixed(2)}x` : 'n/a');
const whole = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/**
 * Runs the spend cap rows of the engines wanted (a SQLite file in `dir`; PostgreSQL through `pool`, in
 * fresh schemas it drops) and resolves with the lines to print: each row's ops/s and the targets.
 */
export async function capsBench(options: {
  readonly sqlite: boolean;
  readonly dir: string;
  readonly pool: pg.Pool | null;
}): Promise<string[]> {
  const rows: Row[] = [];
  const closing: (() => Promise<void>)[] = [];
  try {
    if (options.sqlite) {
      const file = path.join(options.dir, 'caps.db');
      const plain = new SqliteStore({ path: file, tablePrefix: 'plain_' });
      const capped = new SqliteStore({ path: file, tablePrefix: 'capped_' });
      closing.push(
        () => plain.close(),
        () => capped.close(),
      );
      rows.push({
        engine: 'SQLite',
        kind: 'plan-only',
        label: 'leash SqliteStore, 32 plans',
        op: await plansOn(plain, false),
      });
      rows.push({
        engine: 'SQLite',
        kind: 'capped',
        label: 'leash SqliteStore, 32 plans, one team cap',
        op: await plansOn(capped, true),
      });
    }
    const pool = options.pool;
    if (pool !== null) {
      const schema = `leash_bench_caps_${process.pid}`;
      await pool.query(`CREATE SCHEMA "${schema}"`);
      closing.push(async () => void (await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)));
      const plain = new PostgresStore({ pool, schema, tablePrefix: 'plain_' });
      const capped = new PostgresStore({ pool, schema, tablePrefix: 'capped_' });
      closing.unshift(
        () => plain.close(),
        () => capped.close(),
      );
      rows.push({
        engine: 'Postgres',
        kind: 'plan-only',
        label: 'leash PostgresStore, 32 plans',
        op: await plansOn(plain, false),
      });
      rows.push({
        engine: 'Postgres',
        kind: 'capped',
        label: 'leash PostgresStore, 32 plans, one team cap',
        op: await plansOn(capped, true),
      });
      rows.push({
        engine: 'Postgres',
        kind: 'naive',
        label: 'naive pg transaction (FOR UPDATE, update, audit row)',
        op: await naive(pool, schema),
      });
    }
    const lines: string[] = [];
    const of = new Map<string, number>();
    for (const engine of ['SQLite', 'Postgres'] as const) {
      const subjects = rows.filter((r) => r.engine === engine);
      if (subjects.length === 0) continue;
      for (const t of await measureTurns(subjects, WORKERS, TIMING)) {
        of.set(`${engine}:${t.subject.kind}`, t.opsPerSec);
        lines.push(
          `  ${t.subject.label} × ${WORKERS}: ${whole.format(t.opsPerSec)} ops/s (${whole.format(t.ops)} calls)`,
        );
      }
    }
    const target = (label: string, a: string, b: string, atLeast: number) => {
      const value = (of.get(a) ?? NaN) / (of.get(b) ?? NaN);
      if (Number.isNaN(value)) return;
      lines.push(
        `  target ${label}: ${ratio(value)} (at least ${atLeast}x) ${value >= atLeast ? 'met' : 'MISSED'}`,
      );
    };
    target('Postgres capped ÷ naive transaction', 'Postgres:capped', 'Postgres:naive', 5);
    target('Postgres capped ÷ plan-only', 'Postgres:capped', 'Postgres:plan-only', 0.8);
    target('SQLite capped ÷ plan-only', 'SQLite:capped', 'SQLite:plan-only', 0.8);
    return lines;
  } finally {
    for (const close of closing) await close().catch((error: unknown) => console.error(error));
  }
}
