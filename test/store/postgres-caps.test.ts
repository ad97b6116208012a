import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutonomyGuardrailService, ManualClock, PostgresStore } from '../../src/index.js';
import { DATABASE_URL, freshSchemaName, skipWithoutServer } from './postgres-support.js';

const skip = await skipWithoutServer('test/store/postgres-caps.test.ts');
const T0 = Date.parse('2026-11-30T10:00:00.000Z');
const TEAM = { id: 'team', match: { team: 'ml' }, limit: 1, window: 'day' } as const;

describe.skipIf(skip)('PostgresStore spend caps shared by two stores', () => {
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 8 });
  const schema = freshSchemaName();
  let n = 0;

  beforeAll(async () => {
    await pool.query(`CREATE SCHEMA "${schema}"`);
  });
  afterAll(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  });

  /** Two stores on one set of tables, as two workers have, each with a service on the same clock. */
  async function twoWorkers() {
    const tablePrefix = `w${++n}_`;
    const a = new PostgresStore({ pool, schema, tablePrefix });
    const b = new PostgresStore({ pool, schema, tablePrefix });
    await a.migrate();
    const clock = new ManualClock(T0);
    return {
      a: new AutonomyGuardrailService({ store: a, clock }),
      b: new AutonomyGuardrailService({ store: b, clock }),
    };
  }

  it('applies a cap another store installed to a plan no cap applied to before, at its next check', async () => {
    const { a, b } = await twoWorkers();
    await a.configureGuardrails('p', { toolBudget: 10, labels: { team: 'ml' } });
    // Checked once with no caps installed: what the first store then keeps says none applies.
    expect((await a.checkToolBudget('p', 1)).allowed).toBe(true);
    await b.installSpendCaps([TEAM]);
    expect((await a.checkToolBudget('p', 0.5)).allowed).toBe(true);
    expect((await a.checkToolBudget('p', 0.6)).eventType).toBe('budget_cap_blocked');
  });

  it('applies the new limit another store installed to a capped plan at its next check', async () => {
    const { a, b } = await twoWorkers();
    await a.installSpendCaps([TEAM]);
    await a.configureGuardrails('p', { toolBudget: 10, labels: { team: 'ml' } });
    expect((await a.checkToolBudget('p', 0.5)).allowed).toBe(true);
    await b.installSpendCaps([{ ...TEAM, limit: 0.6 }]);
    expect((await a.checkToolBudget('p', 0.2)).eventType).toBe('budget_cap_blocked');
  });

  it('stops applying a cap another store removed', async () => {
    const { a, b } = await twoWorkers();
    await a.installSpendCaps([TEAM]);
    await a.configureGuardrails('p', { toolBudget: 10, labels: { team: 'ml' } });
    expect((await a.checkToolBudget('p', 1)).allowed).toBe(true);
    await b.removeSpendCap('team');
    expect((await a.checkToolBudget('p', 1)).allowed).toBe(true);
  });
});
