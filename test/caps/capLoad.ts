import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutonomyGuardrailService } from '../../src/index.js';
import type { GuardrailStore } from '../../src/store/GuardrailStore.js';
import { exited } from '../support/processes.js';
import type { CapWorkerMessage, Refusals } from './cap-worker.js';
import type { Engine, FreshDatabase } from './databases.js';
import { forkCapWorker, nextFrom } from './workers.js';

// Many processes, each with plans of its own, reserving against one team cap at once: the cap never
// holds more than its limit, and lets through exactly as many reservations as it has room for.

const PROCESSES = 8;
const PLANS_EACH = 5;
const RESERVATIONS_EACH = 500;
const LANES = 4;
const CAP = 'team-ml';
const AMOUNT = 0.010007;
const AMOUNT_MICROS = 10_007;
const LIMIT = 12.345678;
const LIMIT_MICROS = 12_345_678;
/**
 * Every allowed reservation is committed at its full amount, so the cap holds exactly this many of them:
 * 1233, with 7047 micros left over, too few for one more.
 */
const CAPACITY = Math.floor(LIMIT_MICROS / AMOUNT_MICROS);

type Done = Extract<CapWorkerMessage, { type: 'done' }>;

/** The largest spent + reserved, and reserved alone, seen in the cap's window while the processes ran. */
interface Samples {
  count: number;
  maxTakenMicros: number;
  maxReservedMicros: number;
}

/** Reads the cap's windows again and again until `until` settles. */
async function sample(store: GuardrailStore, until: Promise<unknown>): Promise<Samples> {
  let running = true;
  const stop = () => (running = false);
  until.then(stop, stop);
  const seen: Samples = { count: 0, maxTakenMicros: 0, maxReservedMicros: 0 };
  while (running) {
    for (const { state } of await store.listCapWindows({ capId: CAP })) {
      seen.maxTakenMicros = Math.max(seen.maxTakenMicros, state.spentMicros + state.reservedMicros);
      seen.maxReservedMicros = Math.max(seen.maxReservedMicros, state.reservedMicros);
    }
    seen.count++;
    // A sampling pace, not a wait for anything: it leaves the two cores to the writers between reads.
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return seen;
}

function sumRefusals(all: readonly Refusals[]): Refusals {
  const sum: Refusals = {};
  for (const r of all) for (const [event, n] of Object.entries(r)) sum[event] = (sum[event] ?? 0) + n;
  return sum;
}

/** The suite, on `engine` (skipped when `skip`). */
export function describeCapLoad(engine: Engine, skip = false): void {
  describe.skipIf(skip)(
    `a team cap on ${engine.name}, reserved against by ${PROCESSES} processes at once`,
    () => {
      let db: FreshDatabase;
      let reports: Done[];
      let samples: Samples;

      beforeAll(async () => {
        db = await engine.fresh();
        await new AutonomyGuardrailService({ store: db.store }).installSpendCaps([
          { id: CAP, match: { team: 'ml' }, limit: LIMIT, window: 'lifetime' },
        ]);
        const children = Array.from({ length: PROCESSES }, (_, i) =>
          forkCapWorker({
            mode: 'load',
            target: db.target,
            plans: Array.from({ length: PLANS_EACH }, (_, j) => `w${i}-p${j}`),
            planBudget: 10,
            labels: { team: 'ml' },
            amount: AMOUNT,
            lanes: LANES,
            reservations: RESERVATIONS_EACH,
            seed: i + 1,
          }),
        );
        try {
          await Promise.all(children.map((c) => nextFrom(c, 'ready')));
          const done = Promise.all(children.map((c) => nextFrom(c, 'done')));
          // All start together once every process has its plans, so their reservations contend.
          for (const c of children) c.send('go');
          [reports, samples] = await Promise.all([done, sample(db.store, done)]);
        } finally {
          for (const c of children) if (c.exitCode === null) c.kill();
          await Promise.all(children.map(exited));
        }
        // About 5,200 updates (4,000 reservations, 1,233 commits), one after the other on the window's row
        // or file lock: on PostgreSQL, on a busy two-core machine, over a minute.
      }, 300_000);

      afterAll(async () => {
        await db?.drop();
      });

      it(`allows exactly as many reservations as the cap has room for (${CAPACITY}), across all processes`, () => {
        expect(reports.reduce((sum, r) => sum + r.allowed, 0)).toBe(CAPACITY);
      });

      it('refuses every other reservation as budget_cap_blocked', () => {
        const refusals = sumRefusals(reports.map((r) => r.refusals));
        expect(refusals).toEqual({ budget_cap_blocked: PROCESSES * RESERVATIONS_EACH - CAPACITY });
      });

      it('records in the cap exactly what the processes committed, to the micro, with nothing left held', async () => {
        const windows = await db.store.listCapWindows({ capId: CAP });
        expect(windows.map((w) => [w.state.spentMicros, w.state.reservedMicros, w.state.holds.size])).toEqual(
          [[CAPACITY * AMOUNT_MICROS, 0, 0]],
        );
        expect(reports.reduce((sum, r) => sum + r.committedMicros, 0)).toBe(CAPACITY * AMOUNT_MICROS);
      });

      it("spends in the team's plans together exactly what the cap records", async () => {
        let spent = 0;
        for (let i = 0; i < PROCESSES; i++) {
          for (let j = 0; j < PLANS_EACH; j++) {
            spent += (await db.store.get(`w${i}-p${j}`))?.guardrails.budgetSpentMicros ?? NaN;
          }
        }
        expect(spent).toBe(CAPACITY * AMOUNT_MICROS);
      });

      it('never has more spent and reserved than the limit at any moment sampled while the processes run', () => {
        expect([samples.count > 0, samples.maxTakenMicros > 0]).toEqual([true, true]); // it saw the run
        expect(samples.maxTakenMicros).toBeLessThanOrEqual(LIMIT_MICROS);
      });
    },
  );
}
