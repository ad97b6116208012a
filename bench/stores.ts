import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { RateLimiterPostgres, RateLimiterSQLite, type RateLimiterAbstract } from 'rate-limiter-flexible';
import {
  AuditEntry,
  AutonomyGuardrailService,
  chainEntry,
  GuardrailEventType,
  PlanExecutor,
  PostgresStore,
  SqliteStore,
  systemClock,
  verifyAuditLog,
  type ChainedEntry,
  type Plan,
  type Tool,
} from '../src/index.js';
import { fail, PLAN_ID, ROOMY_LIMITS, START_MS } from './fixtures.js';
import { measureTurns } from './drive.js';
import { capsBench } from './caps.js';

const CELL_MS = 2_000;
const WARMUP_MS = 300;
/**
 * The rounds a cell is timed in: an engine's subjects take turns, a round each, so that the load of a
 * shared machine, which moves from second to second, falls on the rows compared alike.
 */
const ROUNDS = 4;
const WORKERS = [1, 8, 32] as const;
const COST = 0.01;
/** Points for the rate limiters: far more than any run consumes, and within Postgres's `integer`. */
const LIMITER_POINTS = 2_000_000_000;
const LIMITER_SECONDS = 3_600;
const CHAIN_ENTRIES = 200_000;
/** What the raw rows with an audit row insert: the size of the entry a leash check records. */
const RAW_DETAILS = JSON.stringify({ cost: COST, spent: 1234.56, limit: 1_000_000_000 });
const RAW_HASH = 'a'.repeat(64);
/** Connections of the one pool every Postgres row shares: one per worker at the highest concurrency. */
const POOL_SIZE = Math.max(...WORKERS);
/** Decisions in each plan an executor row runs: a row's ops/s counts decisions. */
const EXECUTOR_DECISIONS = 100;

type Engine = 'SQLite' | 'Postgres';
type Kind = 'leash' | 'rate-limiter-flexible' | 'raw' | 'raw+audit' | 'executor';

interface Subject {
  readonly engine: Engine;
  readonly kind: Kind;
  readonly label: string;
  /** One call; rejects, or throws, when the call did not go through. */
  readonly op: () => Promise<unknown>;
  /** What one call counts for (an executor row's call runs several decisions); default 1. */
  readonly weight?: number;
}

interface Cell {
  readonly subject: Subject;
  readonly workers: number;
  readonly ops: number;
  readonly opsPerSec: number;
}

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const ratio = (value: number): string => (Number.isFinite(value) ? `${value.toFixed(2)}x` : 'n/a');

/** Times `subjects` at `workers`, each for CELL_MS in all, taking turns in {@link ROUNDS} rounds. */
async function measure(subjects: readonly Subject[], workers: number): Promise<Cell[]> {
  const timed = await measureTurns(subjects, workers, {
    cellMs: CELL_MS,
    rounds: ROUNDS,
    warmupMs: WARMUP_MS,
  });
  return timed.map(({ subject, ops, opsPerSec }) => ({ subject, workers, ops, opsPerSec }));
}

/** The connection string; without a user in it (or in $PGUSER/$USER), the login name, as psql would. */
function databaseUrl(): string {
  const text = process.env['DATABASE_URL'] ?? 'postgres://127.0.0.1:5432/test';
  const user = process.env['PGUSER'] ?? process.env['USER'];
  if (user !== undefined && user !== '') return text;
  try {
    const url = new URL(text);
    if (url.username !== '' || url.hostname === '') return text;
    url.username = os.userInfo().username;
    return url.toString();
  } catch {
    return text;
  }
}

function where(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    return 'DATABASE_URL';
  }
}

function limiterReady<T extends RateLimiterAbstract>(build: (cb: (err?: unknown) => void) => T): Promise<T> {
  return new Promise((resolve, reject) => {
    const limiter: T = build((err) => (err ? reject(err) : queueMicrotask(() => resolve(limiter))));
  });
}

async function leashService(store: SqliteStore | PostgresStore): Promise<AutonomyGuardrailService> {
  await store.migrate();
  const service = new AutonomyGuardrailService({ store, clock: systemClock });
  await service.configureGuardrails(PLAN_ID, ROOMY_LIMITS);
  if (!(await service.checkToolBudget(PLAN_ID, COST)).allowed) fail('checkToolBudget denied');
  return service;
}

function leashOp(service: AutonomyGuardrailService): () => Promise<unknown> {
  return async () => {
    const check = await service.checkToolBudget(PLAN_ID, COST);
    if (!check.allowed) fail('checkToolBudget denied');
    return check;
  };
}

/**
 * Runs plans of {@link EXECUTOR_DECISIONS} decisions through a PlanExecutor on the store: each call
 * takes a plan of its own (one per worker at most), so that workers never share a decision's
 * reservation id. Every decision is a tool call with a budget reservation, committed at its cost.
 */
async function executorSubject(engine: Engine, store: SqliteStore | PostgresStore): Promise<Subject> {
  const service = new AutonomyGuardrailService({ store, clock: systemClock });
  const { startTime: _fixed, ...limits } = ROOMY_LIMITS; // the wall clock runs from each plan's start
  const free: string[] = [];
  for (let i = 0; i < Math.max(...WORKERS); i++) {
    const id = `bench-executor-${i}`;
    await service.configureGuardrails(id, limits);
    free.push(id);
  }
  const tool: Tool = { name: 'work', description: 'costs a cent', cost: COST, run: (input) => input };
  const executor = new PlanExecutor({ service, tools: [tool] });
  const decisions = Array.from({ length: EXECUTOR_DECISIONS }, (_, i) => ({
    id: `d${i}`,
    tool: 'work',
    input: i,
  }));
  const op = async (): Promise<unknown> => {
    const id = free.pop() ?? fail('more executor workers than plans');
    try {
      const plan: Plan = { id, phase: 'execute', decisions, metadata: {} };
      const result = await executor.execute(plan);
      if (result.status !== 'completed') fail(`executor run ended ${result.status}`);
      return result;
    } finally {
      free.push(id);
    }
  };
  const label = `leash PlanExecutor on ${engine === 'SQLite' ? 'SqliteStore' : 'PostgresStore'} (decisions)`;
  return { engine, kind: 'executor', label, op, weight: EXECUTOR_DECISIONS };
}

/** Opens another connection to the store's file with the settings SqliteStore gives its own. */
function openSqlite(file: string): Database.Database {
  const db = new Database(file, { timeout: 5_000 });
  db.pragma('busy_timeout = 5000');
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  return db;
}

interface Engines {
  readonly subjects: Subject[];
  readonly close: () => Promise<void>;
}

async function sqliteSubjects(dir: string): Promise<Engines> {
  const file = path.join(dir, 'stores.db');
  const store = new SqliteStore({ path: file });
  const service = await leashService(store);

  const limiterDb = openSqlite(file);
  const limiter = await limiterReady(
    (cb) =>
      new RateLimiterSQLite(
        {
          storeClient: limiterDb,
          storeType: 'better-sqlite3',
          tableName: 'rlf_limits',
          points: LIMITER_POINTS,
          duration: LIMITER_SECONDS,
        },
        cb,
      ),
  );

  const rawDb = openSqlite(file);
  rawDb.exec(
    'CREATE TABLE raw_budget (id INTEGER PRIMARY KEY, spent INTEGER NOT NULL, budget INTEGER NOT NULL)',
  );
  rawDb.prepare('INSERT INTO raw_budget (id, spent, budget) VALUES (1, 0, ?)').run(Number.MAX_SAFE_INTEGER);
  const begin = rawDb.prepare('BEGIN IMMEDIATE');
  const update = rawDb.prepare(
    'UPDATE raw_budget SET spent = spent + 1 WHERE id = 1 AND spent + 1 <= budget RETURNING spent',
  );
  const commit = rawDb.prepare('COMMIT');
  const raw = async (): Promise<unknown> => {
    begin.run();
    const row = update.get();
    commit.run();
    if (row === undefined) fail('raw SQLite update changed no row');
    return row;
  };
  // The same transaction with a row like a leash audit entry: the engine's limit for a recorded check.
  rawDb.exec(
    'CREATE TABLE raw_audit (plan_id TEXT NOT NULL, seq INTEGER NOT NULL, event_type TEXT NOT NULL, ' +
      'timestamp INTEGER NOT NULL, details TEXT NOT NULL, prev TEXT, hash TEXT, PRIMARY KEY (plan_id, seq)) ' +
      'WITHOUT ROWID',
  );
  const spent = rawDb.prepare<[], { spent: number }>(
    'UPDATE raw_budget SET spent = spent + 1 WHERE id = 1 AND spent + 1 <= budget RETURNING spent',
  );
  const record = rawDb.prepare(
    'INSERT INTO raw_audit (plan_id, seq, event_type, timestamp, details, prev, hash) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const rawWithAudit = async (): Promise<unknown> => {
    begin.run();
    const row = spent.get();
    if (row !== undefined) {
      record.run(PLAN_ID, row.spent, 'budget_allowed', Date.now(), RAW_DETAILS, RAW_HASH, RAW_HASH);
    }
    commit.run();
    if (row === undefined) fail('raw SQLite update changed no row');
    return row;
  };

  return {
    subjects: [
      { engine: 'SQLite', kind: 'leash', label: 'leash SqliteStore', op: leashOp(service) },
      await executorSubject('SQLite', store),
      {
        engine: 'SQLite',
        kind: 'rate-limiter-flexible',
        label: 'RateLimiterSQLite (better-sqlite3)',
        op: () => limiter.consume(PLAN_ID, 1),
      },
      { engine: 'SQLite', kind: 'raw', label: 'raw better-sqlite3 transaction', op: raw },
      {
        engine: 'SQLite',
        kind: 'raw+audit',
        label: 'raw better-sqlite3 transaction + audit row',
        op: rawWithAudit,
      },
    ],
    close: async () => {
      await store.close();
      limiterDb.close();
      rawDb.close();
    },
  };
}

async function postgresSubjects(url: string): Promise<Engines | string> {
  const pool = new pg.Pool({ connectionString: url, max: POOL_SIZE, connectionTimeoutMillis: 3_000 });
  pool.on('error', () => {});
  try {
    await pool.query('SELECT 1');
  } catch (error) {
    await pool.end().catch(() => {});
    return `no PostgreSQL at ${where(url)} (${error instanceof Error ? error.message : String(error)})`;
  }
  const schema = `leash_bench_${process.pid}_${randomBytes(4).toString('hex')}`;
  const drop = async (): Promise<void> => {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  };
  try {
    const store = new PostgresStore({ pool, schema });
    const service = await leashService(store);

    const limiter = await limiterReady(
      (cb) =>
        new RateLimiterPostgres(
          {
            storeClient: pool,
            storeType: 'pool',
            schemaName: schema,
            tableName: 'rlf_limits',
            points: LIMITER_POINTS,
            duration: LIMITER_SECONDS,
          },
          cb,
        ),
    );

    const table = `"${schema}".raw_budget`;
    await pool.query(
      `CREATE TABLE ${table} (id integer PRIMARY KEY, spent bigint NOT NULL, budget bigint NOT NULL)`,
    );
    await pool.query(`INSERT INTO ${table} (id, spent, budget) VALUES (1, 0, $1)`, [Number.MAX_SAFE_INTEGER]);
    const sql = `UPDATE ${table} SET spent = spent + 1 WHERE id = 1 AND spent + 1 <= budget RETURNING spent`;
    const raw = async (): Promise<unknown> => {
      const result = await pool.query(sql);
      if (result.rowCount !== 1) fail('raw Postgres update changed no row');
      return result;
    };
    const audit = `"${schema}".raw_audit`;
    await pool.query(
      `CREATE TABLE ${audit} (plan_id text NOT NULL, seq bigint NOT NULL, event_type text NOT NULL,
         ts bigint NOT NULL, details text NOT NULL, prev text, hash text, PRIMARY KEY (plan_id, seq))`,
    );
    const withAudit = {
      name: 'raw_with_audit',
      text: `WITH spent AS (${sql})
        INSERT INTO ${audit} (plan_id, seq, event_type, ts, details, prev, hash)
        SELECT $1, spent, 'budget_allowed', $2, $3, $4, $4 FROM spent RETURNING seq`,
    };
    const rawWithAudit = async (): Promise<unknown> => {
      const result = await pool.query({ ...withAudit, values: [PLAN_ID, Date.now(), RAW_DETAILS, RAW_HASH] });
      if (result.rowCount !== 1) fail('raw Postgres update with audit row changed no row');
      return result;
    };

    return {
      subjects: [
        { engine: 'Postgres', kind: 'leash', label: 'leash PostgresStore', op: leashOp(service) },
        await executorSubject('Postgres', store),
        {
          engine: 'Postgres',
          kind: 'rate-limiter-flexible',
          label: "RateLimiterPostgres (pg Pool, storeType 'pool')",
          op: () => limiter.consume(PLAN_ID, 1),
        },
        { engine: 'Postgres', kind: 'raw', label: 'raw pg conditional UPDATE', op: raw },
        {
          engine: 'Postgres',
          kind: 'raw+audit',
          label: 'raw pg conditional UPDATE + audit row',
          op: rawWithAudit,
        },
      ],
      close: async () => {
        await store.close();
        await drop();
        await pool.end();
      },
    };
  } catch (error) {
    await drop().catch(() => {});
    await pool.end().catch(() => {});
    throw error;
  }
}

/** A plan's chain of `count` entries, built with chainEntry, and the time that took. */
function buildChain(count: number): ChainedEntry[] {
  const entries: ChainedEntry[] = [];
  let previous: ChainedEntry | null = null;
  for (let i = 0; i < count; i++) {
    const entry = AuditEntry.create({
      eventType: GuardrailEventType.BUDGET_ALLOWED,
      guardName: 'tool_budget',
      timestamp: START_MS + i,
      details: { cost: COST, spent: Math.round((i + 1) * COST * 100) / 100, limit: 1_000_000_000 },
    });
    previous = chainEntry(PLAN_ID, previous, entry);
    entries.push(previous);
  }
  return entries;
}

async function timeVerify(): Promise<{ buildMs: number; verifyMs: number; entriesPerSec: number }> {
  const t0 = performance.now();
  const entries = buildChain(CHAIN_ENTRIES);
  const t1 = performance.now();
  const report = await verifyAuditLog({ readAuditLog: async () => entries }, PLAN_ID);
  const t2 = performance.now();
  if (!report.ok || report.size !== CHAIN_ENTRIES)
    fail(`verifyAuditLog found ${report.findings.length} findings`);
  return { buildMs: t1 - t0, verifyMs: t2 - t1, entriesPerSec: (CHAIN_ENTRIES * 1_000) / (t2 - t1) };
}

function aligned(header: readonly string[], body: readonly string[][], leftColumns: number): string {
  const all = [header, ...body];
  const widths = header.map((_, c) => Math.max(...all.map((row) => (row[c] ?? '').length)));
  const line = (row: readonly string[]): string =>
    row
      .map((cell, c) => (c < leftColumns ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0)))
      .join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

function markdown(header: readonly string[], body: readonly string[][], leftColumns: number): string {
  const line = (row: readonly string[]): string =>
    `| ${row.map((cell) => cell.replaceAll('|', '\\|')).join(' | ')} |`;
  const rule = `|${header.map((_, c) => (c < leftColumns ? ' --- ' : ' ---: ')).join('|')}|`;
  return [line(header), rule, ...body.map(line)].join('\n');
}

const RESULT_HEADER = ['Store', 'workers', 'ops/s'] as const;
const RATIO_HEADER = [
  'Engine',
  'workers',
  'leash ops/s',
  'raw ops/s',
  'raw + audit row ops/s',
  'rate-limiter-flexible ops/s',
  'leash ÷ raw',
  'leash ÷ raw + audit row',
  'leash ÷ rate-limiter-flexible',
] as const;

function resultRows(cells: readonly Cell[]): string[][] {
  return cells.map((c) => [c.subject.label, String(c.workers), integer.format(c.opsPerSec)]);
}

/** The ops/s of one engine's cells at `workers`, by kind of subject (NaN for a kind not measured). */
function cellsOf(cells: readonly Cell[], engine: Engine, workers: number): (kind: Kind) => number {
  return (kind) =>
    cells.find((c) => c.subject.engine === engine && c.subject.kind === kind && c.workers === workers)
      ?.opsPerSec ?? NaN;
}

function ratioRows(cells: readonly Cell[]): string[][] {
  const rows: string[][] = [];
  for (const engine of ['SQLite', 'Postgres'] as const) {
    for (const workers of WORKERS) {
      const of = cellsOf(cells, engine, workers);
      const leash = of('leash');
      if (Number.isNaN(leash)) continue;
      const raw = of('raw');
      const rawWithAudit = of('raw+audit');
      const rlf = of('rate-limiter-flexible');
      rows.push([
        engine,
        String(workers),
        integer.format(leash),
        integer.format(raw),
        integer.format(rawWithAudit),
        integer.format(rlf),
        ratio(leash / raw),
        ratio(leash / rawWithAudit),
        ratio(leash / rlf),
      ]);
    }
  }
  return rows;
}

const EXECUTOR_HEADER = [
  'Engine',
  'workers',
  'executor decisions/s',
  'leash ops/s',
  'raw + audit row ops/s',
  'decisions ÷ leash',
  'decisions ÷ raw + audit row',
] as const;

function executorRows(cells: readonly Cell[]): string[][] {
  const rows: string[][] = [];
  for (const engine of ['SQLite', 'Postgres'] as const) {
    for (const workers of WORKERS) {
      const of = cellsOf(cells, engine, workers);
      const decisions = of('executor');
      if (Number.isNaN(decisions)) continue;
      const leash = of('leash');
      const rawWithAudit = of('raw+audit');
      rows.push([
        engine,
        String(workers),
        integer.format(decisions),
        integer.format(leash),
        integer.format(rawWithAudit),
        ratio(decisions / leash),
        ratio(decisions / rawWithAudit),
      ]);
    }
  }
  return rows;
}

/** The engines named on the command line (`npm run bench:stores -- sqlite`), or both. */
function enginesWanted(args: readonly string[]): ReadonlySet<Engine> {
  const names: Record<string, Engine> = { sqlite: 'SQLite', postgres: 'Postgres' };
  const wanted = new Set<Engine>();
  for (const arg of args) {
    const engine = names[arg.toLowerCase()] ?? fail(`unknown engine "${arg}": sqlite or postgres`);
    wanted.add(engine);
  }
  return wanted.size === 0 ? new Set(Object.values(names)) : wanted;
}

async function main(): Promise<void> {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const url = databaseUrl();
  const args = process.argv.slice(2);
  // `npm run bench:stores -- caps [engine]`: the spend cap rows alone.
  const onlyCaps = args.includes('caps');
  const wanted = enginesWanted(args.filter((a) => a !== 'caps'));
  console.log(
    `leash store bench — Node ${process.version}, ${cpu}, ${os.availableParallelism()} cores; ` +
      `${WORKERS.join('/')} async workers in one process against one plan, ${CELL_MS} ms per cell ` +
      `(an engine's rows taking turns in ${ROUNDS} rounds) after ${WARMUP_MS} ms warmup\n`,
  );

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leash-bench-stores-'));
  const engines: Engines[] = [];
  let postgresRan = false;
  const notes: string[] = [];
  const cells: Cell[] = [];
  const capLines: string[] = [];
  try {
    if (wanted.has('SQLite')) engines.push(await sqliteSubjects(dir));
    const postgres = wanted.has('Postgres') ? await postgresSubjects(url) : 'not asked for';
    if (typeof postgres === 'string') {
      notes.push(`Postgres rows skipped: ${postgres}.`);
      console.log(`  ${postgres}; Postgres rows skipped`);
    } else {
      engines.push(postgres);
      postgresRan = true;
    }
    for (const { subjects } of onlyCaps ? [] : engines) {
      const measured: Cell[] = [];
      for (const workers of WORKERS) {
        for (const cell of await measure(subjects, workers)) {
          measured.push(cell);
          console.log(
            `  ${cell.subject.label} × ${workers}: ${integer.format(cell.opsPerSec)} ops/s (${integer.format(cell.ops)} calls)`,
          );
        }
      }
      // Listed row by row, as the subjects come, each at every count of workers.
      for (const subject of subjects) cells.push(...measured.filter((c) => c.subject === subject));
    }
    for (const e of engines.splice(0)) await e.close();
    console.log('\nSpend caps: 32 workers, a plan each, one team cap over all of them (checkToolBudget)');
    const pool = postgresRan ? new pg.Pool({ connectionString: url, max: POOL_SIZE }) : null;
    try {
      capLines.push(...(await capsBench({ sqlite: wanted.has('SQLite'), dir, pool })));
    } finally {
      await pool?.end();
    }
    for (const line of capLines) console.log(line);
  } finally {
    for (const e of engines) await e.close().catch((error: unknown) => console.error(error));
    fs.rmSync(dir, { recursive: true, force: true });
  }

  const verify = await timeVerify();
  const verifyLine =
    `verifyAuditLog over ${integer.format(CHAIN_ENTRIES)} chained entries: ${integer.format(verify.entriesPerSec)} entries/s ` +
    `(${integer.format(verify.verifyMs)} ms; building the chain with chainEntry took ${integer.format(verify.buildMs)} ms)`;

  notes.push(
    'leash rows: AutonomyGuardrailService.checkToolBudget(plan, 0.01) on systemClock: a decided spend and its chained audit row per call, committed before the call resolves; every call must be allowed.',
    'SQLite: one WAL file in the temp directory (synchronous = NORMAL, as SqliteStore sets it), shared by every row through three better-sqlite3 connections; calls run synchronously, so workers only interleave between calls, and SqliteStore commits the checks made meanwhile together.',
    ...(postgresRan
      ? [
          `Postgres: ${where(url)}, a fresh schema dropped at the end, one pg.Pool of ${POOL_SIZE} connections shared by every row.`,
        ]
      : []),
    `executor rows: PlanExecutor.execute of plans of ${EXECUTOR_DECISIONS} decisions, one plan per worker, each decision a tool call costing ${COST} with its reservation and commit; ops/s counts decisions.`,
    `rate-limiter-flexible rows: consume(key, 1) with ${integer.format(LIMITER_POINTS)} points over ${LIMITER_SECONDS} s.`,
    'raw rows: SQLite BEGIN IMMEDIATE / UPDATE … RETURNING / COMMIT on prepared statements; Postgres one autocommit UPDATE t SET spent = spent + 1 WHERE id = 1 AND spent + 1 <= budget RETURNING spent.',
    'raw + audit row: the same, with a row the size of a leash audit entry inserted in the same transaction (Postgres: the same statement): what the engine allows for a check that is recorded.',
  );

  console.log(`\n${aligned(RESULT_HEADER, resultRows(cells), 1)}\n`);
  console.log(`${aligned(RATIO_HEADER, ratioRows(cells), 1)}\n`);
  console.log(`${aligned(EXECUTOR_HEADER, executorRows(cells), 1)}\n`);
  console.log(`${verifyLine}\n`);
  for (const note of notes) console.log(`- ${note}`);
  console.log('\nMarkdown:\n');
  console.log(`${markdown(RESULT_HEADER, resultRows(cells), 1)}\n`);
  console.log(`${markdown(RATIO_HEADER, ratioRows(cells), 1)}\n`);
  console.log(`${markdown(EXECUTOR_HEADER, executorRows(cells), 1)}\n`);
  console.log(`${verifyLine}\n`);
  for (const note of notes) console.log(`- ${note}`);
  console.log('\nSpend caps (32 workers):');
  for (const line of capLines) console.log(line);
}

try {
  await main();
} catch (error) {
  console.error(error);
  process.exitCode = 1;
}
