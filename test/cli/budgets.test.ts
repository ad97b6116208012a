// `leash budgets`, `budgets set` and `budgets remove` in this process, on a SQLite file, with a clock the
// tests move: what each shows of the spend caps across plans, and what each installs.
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { spendCap, type SpendCapInit } from '../../src/guardrails/caps.js';
import { AutonomyGuardrailService } from '../../src/service/AutonomyGuardrailService.js';
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';
import { leashIn } from '../support/cli.js';
import { tempFiles } from '../support/tempFiles.js';

const T0 = Date.parse('2026-11-30T10:00:00.000Z');
const DAY_MS = 24 * 3_600_000;

const files = tempFiles('leash-budgets-');
let db: string;
let dir: string;
let clock: ManualClock;

beforeEach(() => {
  db = files.newFile();
  dir = dirname(db);
  clock = new ManualClock(T0);
});

/** `leash` on the test's store, at the test's clock. */
function leash(...argv: string[]): Promise<{ code: number; out: string }> {
  return leashIn(dir, [...argv, '--db', db], { clock });
}

/** Runs `body` with a service on the test's store, the caps `caps` installed; closes the store after. */
async function withService(
  caps: readonly SpendCapInit[],
  body: (service: AutonomyGuardrailService) => Promise<void> = async () => undefined,
): Promise<void> {
  const store = new SqliteStore({ path: db });
  try {
    await store.migrate();
    await store.putCaps(caps.map((c) => spendCap(c)));
    await body(new AutonomyGuardrailService({ store, clock }));
  } finally {
    await store.close();
  }
}

/** Configures `planId` with `labels` and no budget of its own, then spends `amount`. */
async function spend(
  service: AutonomyGuardrailService,
  planId: string,
  labels: Record<string, string>,
  amount: number,
): Promise<void> {
  await service.configureGuardrails(planId, { labels });
  expect((await service.checkToolBudget(planId, amount)).allowed).toBe(true);
}

const PER_TEAM: SpendCapInit = { id: 'team-monthly', match: { team: '*' }, limit: 10, window: 'month' };
const EVERY_PLAN: SpendCapInit = { id: 'all-daily', match: {}, limit: 100, window: 'day' };

/** A policy file in the test's folder; returns its name. */
function policyFile(name: string, text: string): string {
  writeFileSync(join(dir, name), text);
  return name;
}

const POLICY = `version: 1
budgets:
  - { id: team-monthly, match: { team: '*' }, limit: 10, window: month, timezone: Europe/Berlin }
  - { id: all-daily, match: {}, limit: 100.5, window: day }
`;

describe('leash budgets', () => {
  it('lists each cap for each label value, nearest its limit first', async () => {
    await withService([PER_TEAM, EVERY_PLAN], async (service) => {
      await spend(service, 'p1', { team: 'ml' }, 9);
      await spend(service, 'p2', { team: 'ops' }, 2);
    });

    const { code, out } = await leash('budgets');

    expect([code, out]).toEqual([
      0,
      [
        'CAP           LABELS       WINDOW          SPENT  RESERVED  LIMIT   USED   RESETS',
        'team-monthly  team=ml      month:2026-11   9.00   0.00      10.00   90.0%  2026-12-01T00:00:00.000Z',
        'team-monthly  team=ops     month:2026-11   2.00   0.00      10.00   20.0%  2026-12-01T00:00:00.000Z',
        'all-daily     (all plans)  day:2026-11-30  11.00  0.00      100.00  11.0%  2026-12-01T00:00:00.000Z',
        '',
      ].join('\n'),
    ]);
  });

  it('shows a cap nothing was counted under in its current window as one row, its labels "-"', async () => {
    await withService([PER_TEAM]);

    const { out } = await leash('budgets');

    expect(out.split('\n')[1]).toMatch(
      /^team-monthly +- +month:2026-11 +0\.00 +0\.00 +10\.00 +0\.0% +2026-12/,
    );
  });

  it('leaves out a window that ended: its spend no longer counts', async () => {
    await withService([EVERY_PLAN], (service) => spend(service, 'p1', {}, 60));
    clock.advance(DAY_MS);

    const rows = JSON.parse((await leash('budgets', '--json')).out) as { window: string; spent: number }[];

    expect(rows.map((r) => [r.window, r.spent])).toEqual([['day:2026-12-01', 0]]);
  });

  it('counts as reserved only the holds that have not lapsed', async () => {
    await withService([EVERY_PLAN], async (service) => {
      await service.configureGuardrails('p1', {});
      await service.reserveBudget('p1', 30, { reservationId: 'r1' });
    });
    const reserved = async () =>
      (JSON.parse((await leash('budgets', '--json')).out) as { reserved: number }[])[0]?.reserved;

    const before = await reserved();
    clock.advance(60 * 60_000);

    expect([before, await reserved()]).toEqual([30, 0]);
  });

  it('prints JSON rows with snake_case keys, exact amounts and null for a lifetime reset', async () => {
    await withService([{ id: 'forever', match: { team: 'ml' }, limit: 0.3, window: 'lifetime' }], (service) =>
      spend(service, 'p1', { team: 'ml' }, 0.1),
    );

    const { code, out } = await leash('budgets', '--json');

    expect([code, JSON.parse(out)]).toEqual([
      0,
      [
        {
          cap: 'forever',
          labels: { team: 'ml' },
          window: 'lifetime',
          spent: 0.1,
          reserved: 0,
          limit: 0.3,
          used: 1 / 3,
          resets_at: null,
        },
      ],
    ]);
  });

  it('says how to install caps when the store has none', async () => {
    await withService([]);

    const { code, out } = await leash('budgets');

    expect([code, out]).toEqual([
      0,
      `no spend caps; install a policy's budgets: block with: npx leash budgets set leash.policy.yaml --db ${db}\n`,
    ]);
  });
});

describe('leash budgets set', () => {
  it("installs a policy's caps and prints one line for each", async () => {
    const file = policyFile('caps.policy.yaml', POLICY);

    const { code, out } = await leash('budgets', 'set', file);

    expect([code, out]).toEqual([
      0,
      [
        'installed 2 spend caps from caps.policy.yaml',
        'CAP           MATCH        LIMIT   WINDOW  TIMEZONE',
        'team-monthly  team=*       10.00   month   Europe/Berlin',
        'all-daily     (all plans)  100.50  day     UTC',
        '',
      ].join('\n'),
    ]);
  });

  it('keeps what a cap spent when it is installed again with another limit', async () => {
    await withService([{ ...PER_TEAM, timezone: 'Europe/Berlin' }], (service) =>
      spend(service, 'p1', { team: 'ml' }, 4),
    );
    await leash('budgets', 'set', policyFile('caps.policy.yaml', POLICY.replace('limit: 10,', 'limit: 8,')));

    const rows = JSON.parse((await leash('budgets', '--json')).out) as Record<string, unknown>[];

    expect(rows.find((r) => r['cap'] === 'team-monthly')).toMatchObject({ spent: 4, limit: 8, used: 0.5 });
  });

  it('installs in the store --db names before set, as after it', async () => {
    const file = policyFile('caps.policy.yaml', POLICY);

    await leashIn(dir, ['budgets', '--db', db, 'set', file], { clock });
    const rows = JSON.parse((await leash('budgets', '--json')).out) as { cap: string }[];

    expect(rows.map((r) => r.cap)).toEqual(['all-daily', 'team-monthly']);
  });

  it('refuses a policy without a budgets: block, installing nothing', async () => {
    await withService([]);
    const file = policyFile('plain.policy.yaml', 'version: 1\nguardrails: { max_steps: 3 }\n');

    const { code } = await leash('budgets', 'set', file);

    expect([code, JSON.parse((await leash('budgets', '--json')).out)]).toEqual([2, []]);
  });
});

describe('leash budgets remove', () => {
  it('removes a cap, which then no longer shows', async () => {
    await withService([PER_TEAM, EVERY_PLAN]);

    const { code, out } = await leash('budgets', 'remove', 'team-monthly');
    const rows = JSON.parse((await leash('budgets', '--json')).out) as { cap: string }[];

    expect([code, out, rows.map((r) => r.cap)]).toEqual([
      0,
      'removed spend cap team-monthly\n',
      ['all-daily'],
    ]);
  });

  it('exits 2 for a cap the store does not have', async () => {
    await withService([]);

    expect((await leash('budgets', 'remove', 'nope')).code).toBe(2);
  });
});

describe('leash run --policy', () => {
  const PLAN = `version: 1
decisions:
  - { id: first, tool: echo, input: { message: one }, cost: 0.25 }
`;

  it("installs the policy's caps, which count the run's spend", async () => {
    writeFileSync(join(dir, 'one.plan.yaml'), PLAN);
    const policy = policyFile('caps.policy.yaml', POLICY);

    const ran = await leash('run', 'one.plan.yaml', '--policy', policy);
    const rows = JSON.parse((await leash('budgets', '--json')).out) as Record<string, unknown>[];

    expect([ran.code, rows.map((r) => [r['cap'], r['labels'], r['spent']])]).toEqual([
      0,
      [
        ['all-daily', {}, 0.25],
        ['team-monthly', null, 0],
      ],
    ]);
  });

  it("stops a run the policy's cap cannot cover", async () => {
    writeFileSync(join(dir, 'one.plan.yaml'), PLAN);
    const policy = policyFile('tight.policy.yaml', POLICY.replace('limit: 100.5', 'limit: 0.2'));

    const ran = await leash('run', 'one.plan.yaml', '--policy', policy, '--json');

    expect([ran.code, JSON.parse(ran.out).outcome.guard]).toEqual([3, 'tool_budget']);
  });
});
