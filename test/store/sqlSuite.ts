// What both SQL stores must do with their tables, beyond the store contract: one suite, run by the
// SQLite and the PostgreSQL tests with a harness that opens stores and runs SQL on their tables.
import { describe, expect, it } from 'vitest';
import {
  AuditEntry,
  AutonomyGuardrails,
  GuardrailError,
  GuardrailEventType,
  type GuardrailStore,
} from '../../src/index.js';
import type { ChainedEntry } from '../../src/audit/chain.js';
import { runSqlRecordsSuite } from './sqlRecordsSuite.js';

/** A SQL store: a store with a schema to migrate. */
export type SqlStore = GuardrailStore & { migrate(): Promise<void> };

/** The tables a suite's SQL names, written `{plans}`, `{audit_entries}`… and replaced by the harness. */
export type Table =
  'plans' | 'audit_entries' | 'approvals' | 'schema_version' | 'principals' | 'tokens' | 'notifications';

export interface SqlStoreHarness {
  /** A new store on tables of its own, migrated; closed after the test. */
  open(options?: { readonly auditCapacity?: number }): Promise<SqlStore>;
  /** Another store on the tables of `store`, through connections of its own; closed after the test. */
  sharing(store: SqlStore): Promise<SqlStore>;
  /** Runs `sql` on the tables of `store` on a connection of its own, `{table}` standing for a table. */
  exec(store: SqlStore, sql: string): Promise<void>;
  /** The rows of one of `store`'s tables. */
  count(store: SqlStore, table: Table): Promise<number>;
  /** Records that `store`'s tables were migrated by a newer version of leash than this one. */
  markNewer(store: SqlStore): Promise<void>;
  /** Makes every insert into `store`'s audit table fail, until the function it resolves with is called. */
  refuseEntries(store: SqlStore): Promise<() => Promise<void>>;
}

const step = (i: number): AuditEntry =>
  AuditEntry.create({
    eventType: GuardrailEventType.STEP_ALLOWED,
    guardName: 'step_limit',
    timestamp: Date.parse('2026-11-30T10:00:00.000Z') + i,
    details: { i },
  });

/** One unit spent per update, with its entry, while the budget lasts; says whether it was allowed. */
const spendOne = (g: AutonomyGuardrails | null) => {
  const allowed = g?.checkToolBudgetMicros(1_000_000).allowed === true;
  return { result: allowed, ...(allowed ? { mutation: { spendMicros: 1_000_000 }, audit: step(1) } : {}) };
};

export function runSqlStoreSuite(name: string, h: SqlStoreHarness): void {
  runSqlRecordsSuite(name, h);
  describe(`${name}: its tables`, () => {
    it('migrates again without changing what is stored', async () => {
      const store = await h.open();
      await store.put('p', AutonomyGuardrails.create({ maxSteps: 3 }));
      await store.migrate();
      expect((await store.get('p'))?.guardrails.maxSteps).toBe(3);
    });

    it('refuses, with STORE_SCHEMA_TOO_NEW, to migrate tables a newer version migrated', async () => {
      const store = await h.open();
      await h.markNewer(store);
      await expect(store.migrate()).rejects.toMatchObject({ code: 'STORE_SCHEMA_TOO_NEW' });
    });

    it('keeps every audit entry in its table while get returns the newest auditCapacity', async () => {
      const store = await h.open({ auditCapacity: 2 });
      await store.put('p', AutonomyGuardrails.create());
      for (let i = 0; i < 5; i++) await store.update('p', () => ({ result: null, audit: step(i) }));
      const newest = (await store.get('p'))?.audit.entries.map((e) => e.details['i']);
      expect([await h.count(store, 'audit_entries'), newest]).toEqual([5, [3, 4]]);
    });

    it('removes the entries and approvals of a deleted plan from its tables', async () => {
      const store = await h.open();
      await store.put('p', AutonomyGuardrails.create());
      await store.update('p', () => ({
        result: null,
        audit: step(1),
        newApproval: {
          id: 'a1',
          planId: 'p',
          decisionId: 'd1',
          operation: 'deploy',
          inputHash: 'a'.repeat(64),
          requestedAt: '2026-11-30T10:00:00.000Z',
          expiresAt: '2026-11-30T10:10:00.000Z',
          status: 'pending',
        },
      }));
      await store.delete('p');
      expect([await h.count(store, 'audit_entries'), await h.count(store, 'approvals')]).toEqual([0, 0]);
    });

    /** A store whose plan p it spent 1 of (of a budget of 2), and so holds cached. */
    const spentOnce = async (): Promise<SqlStore> => {
      const store = await h.open();
      await store.put('p', AutonomyGuardrails.create({ toolBudget: 2 }));
      await store.update('p', spendOne);
      return store;
    };

    describe.each([
      [
        'another store committed',
        async (store: SqlStore) => void (await (await h.sharing(store)).update('p', spendOne)),
      ],
      [
        'a change was written to its tables without going through a store',
        (store: SqlStore) =>
          h.exec(
            store,
            `UPDATE {plans} SET guardrails = replace(guardrails, '"budget_spent":1', '"budget_spent":2')`,
          ),
      ],
    ])('once %s since its own last update', (_what, spendBehind) => {
      /** A plan this store spent 1 of, then 1 more spent behind its back. */
      const spentBehind = async (): Promise<SqlStore> => {
        const store = await spentOnce();
        await spendBehind(store);
        return store;
      };

      it('decides the next update from what the database holds', async () => {
        expect(await (await spentBehind()).update('p', spendOne)).toBe(false);
      });

      it('reads the plan as the database holds it', async () => {
        expect((await (await spentBehind()).getGuardrails?.('p'))?.budgetSpent).toBe(2);
      });

      it("reports to onCommit its next entry as chained after the database's last, once", async () => {
        const store = await spentBehind();
        const calls: (readonly ChainedEntry[])[] = [];
        await store.update('p', () => ({ result: null, audit: step(9) }), { onCommit: (e) => calls.push(e) });
        expect(calls).toEqual([(await store.readAuditLog('p')).slice(-1)]);
      });
    });

    it('reads a plan put again since its own last update', async () => {
      const store = await spentOnce();
      await store.put('p', AutonomyGuardrails.create({ toolBudget: 5 }));
      expect((await store.getGuardrails?.('p'))?.toolBudget).toBe(5);
    });

    it('reads no plan once it was deleted since its own last update', async () => {
      const store = await spentOnce();
      await store.delete('p');
      expect(await store.getGuardrails?.('p')).toBeNull();
    });

    it('hands each read of a plan its own copy, which the store never sees changed', async () => {
      const store = await spentOnce();
      (await store.getGuardrails?.('p'))?.recordCost(1);
      expect([(await store.getGuardrails?.('p'))?.budgetSpent, await store.update('p', spendOne)]).toEqual([
        1,
        true,
      ]);
    });

    it('decides the next update from the committed plan after a write that failed', async () => {
      const store = await h.open();
      await store.put('p', AutonomyGuardrails.create({ toolBudget: 2 }));
      await store.update('p', spendOne);
      const allow = await h.refuseEntries(store);
      await expect(store.update('p', spendOne)).rejects.toBeInstanceOf(GuardrailError);
      await allow();
      expect([await store.update('p', spendOne), (await store.get('p'))?.guardrails.budgetSpent]).toEqual([
        true,
        2,
      ]);
    });

    it('does not call onCommit for an update whose write failed', async () => {
      const store = await h.open();
      await store.put('p', AutonomyGuardrails.create({ toolBudget: 2 }));
      await store.update('p', spendOne);
      const allow = await h.refuseEntries(store);
      let calls = 0;
      await expect(store.update('p', spendOne, { onCommit: () => calls++ })).rejects.toBeInstanceOf(
        GuardrailError,
      );
      await allow();
      expect(calls).toBe(0);
    });

    it('rejects, with STORE_CORRUPT, an update of a plan whose stored guardrails cannot be read', async () => {
      const store = await h.open();
      await store.put('p', AutonomyGuardrails.create({ toolBudget: 1 }));
      await h.exec(store, `UPDATE {plans} SET guardrails = '{"max_steps": 0}'`);
      const check = store.update('p', (g) => ({ result: g?.checkToolBudgetMicros(1).allowed }));
      await expect(check).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
    });
  });
}
