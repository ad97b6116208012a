import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AutonomyGuardrailService,
  ManualClock,
  type BudgetReservation,
  type SpendCapInit,
} from '../../src/index.js';
import type { CapWindowRecord } from '../../src/store/GuardrailStore.js';
import { exited } from '../support/processes.js';
import type { CapWorkerMessage } from './cap-worker.js';
import type { Engine, FreshDatabase } from './databases.js';
import { forkCapWorker, nextFrom } from './workers.js';

// A process killed while it holds reservations never settles them: its holds must lapse at their expiry
// in every cap they are in, so that no plan is refused for money nobody will spend.

const T0 = Date.parse('2026-11-30T10:00:00.000Z');
const TTL = 60_000;
const LABELS = { team: 'ml', org: 'acme' };
const TEAM: SpendCapInit = { id: 'team-ml', match: { team: 'ml' }, limit: 1, window: 'day' };
const ORG: SpendCapInit = { id: 'org-acme', match: { org: 'acme' }, limit: 100, window: 'lifetime' };
const AMOUNT = 0.010007;
const AMOUNT_MICROS = 10_007;
/** The team cap is full after 99 holds: 9307 micros are left, too few for one more. */
const HELD = Math.floor(1_000_000 / AMOUNT_MICROS);

type Holding = Extract<CapWorkerMessage, { type: 'holding' }>;

/** A service of the test process whose clock reads `at`. */
function serviceAt(db: FreshDatabase, at: number): AutonomyGuardrailService {
  return new AutonomyGuardrailService({ store: db.store, clock: new ManualClock(at), reservationTtlMs: TTL });
}

/** Each window as [cap, reserved micros, spent micros, the plans holding in it]. */
function holdsOf(windows: readonly CapWindowRecord[]): [string, number, number, string[]][] {
  return windows.map((w) => [
    w.cap,
    w.state.reservedMicros,
    w.state.spentMicros,
    [...new Set([...w.state.holds.keys()].map((key) => key.split('\n')[0] ?? ''))].sort(),
  ]);
}

/** The suite, on `engine` (skipped when `skip`). */
export function describeKilledHolder(engine: Engine, skip = false): void {
  describe.skipIf(skip)(`a process killed with SIGKILL while holding reservations on ${engine.name}`, () => {
    let db: FreshDatabase;
    let holding: Holding;
    let atKill: CapWindowRecord[];
    let rightAfter: BudgetReservation;
    let atExpiry: BudgetReservation;
    let afterWrite: CapWindowRecord[];

    beforeAll(async () => {
      db = await engine.fresh();
      await serviceAt(db, T0).installSpendCaps([TEAM, ORG]);
      const child = forkCapWorker({
        mode: 'hold',
        target: db.target,
        plans: ['dead-1', 'dead-2', 'dead-3'],
        planBudget: 10,
        labels: LABELS,
        amount: AMOUNT,
        lanes: 4,
        at: T0,
        reservationTtlMs: TTL,
      });
      try {
        holding = await nextFrom(child, 'holding');
        child.kill('SIGKILL');
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
        await exited(child);
      }
      atKill = await db.store.listCapWindows();
      await serviceAt(db, T0).configureGuardrails('alive', { toolBudget: 10, labels: LABELS });
      rightAfter = await serviceAt(db, T0).reserveBudget('alive', AMOUNT, { reservationId: 'a1' });
      // Every hold was made at T0, on the dead process's clock, so each lapses at T0 + TTL.
      atExpiry = await serviceAt(db, T0 + TTL).reserveBudget('alive', 1, { reservationId: 'a2' });
      afterWrite = await db.store.listCapWindows();
    }, 120_000);

    afterAll(async () => {
      await db?.drop();
    });

    it('fills the team cap with its holds before it is killed', () => {
      expect([holding.allowed, Object.keys(holding.refusals)]).toEqual([HELD, ['budget_cap_blocked']]);
    });

    it('leaves its holds in every cap they were taken from', () => {
      const held = HELD * AMOUNT_MICROS;
      expect(holdsOf(atKill)).toEqual([
        ['org-acme', held, 0, ['dead-1', 'dead-2', 'dead-3']],
        ['team-ml', held, 0, ['dead-1', 'dead-2', 'dead-3']],
      ]);
    });

    it('has another plan of the team refused as budget_cap_blocked while the holds last', () => {
      expect([rightAfter.allowed, rightAfter.check.eventType]).toEqual([false, 'budget_cap_blocked']);
      expect(rightAfter.check.reason).toContain('spend cap "team-ml"');
    });

    it('lets another plan reserve the whole team limit once the holds reach their expiry', () => {
      expect([atExpiry.allowed, atExpiry.amount]).toEqual([true, 1]);
    });

    it("drops the dead holds from every cap window at the other plan's write", () => {
      expect(holdsOf(afterWrite)).toEqual([
        ['org-acme', 1_000_000, 0, ['alive']],
        ['team-ml', 1_000_000, 0, ['alive']],
      ]);
    });
  });
}
