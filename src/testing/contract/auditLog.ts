// The GuardrailStore contract: durable audit log.
import { AuditTrail } from '../../audit/AuditTrail.js';
import { verifyAuditLog } from '../../audit/verify.js';
import { GENESIS } from '../../audit/chain.js';
import type { GuardrailStore } from '../../store/GuardrailStore.js';
import { guardrails, entry, spend, approval, ids, logIds, storedIn } from './fixtures.js';
import type { ContractContext } from './context.js';

export function auditLog(c: ContractContext): void {
  const { describe, it, expect } = c.test;
  describe('durable audit log', () => {
    let store!: GuardrailStore;
    c.eachStore((s) => (store = s));
    const stored = (planId: string) => storedIn(store, planId);

    /** A trail holding entries of `is`, oldest first. */
    function trailOf(...is: number[]): AuditTrail {
      const trail = new AuditTrail({ maxEntries: 10 });
      for (const i of is) trail.add(entry('step_blocked', i));
      return trail;
    }

    async function record(planId: string, i: number): Promise<void> {
      await store.update(planId, () => ({ result: null, audit: entry('step_allowed', i) }));
    }

    it('reads an empty log for a plan that was never stored', async () => {
      expect(await store.readAuditLog('missing')).toEqual([]);
    });

    it('keeps every recorded entry in the log, oldest first, numbered from 1', async () => {
      await store.put('p', guardrails());
      for (let i = 1; i <= 3; i++) await record('p', i);
      const log = await store.readAuditLog('p');
      expect(log.map((c) => [c.planId, c.seq, c.entry.details['i']])).toEqual([
        ['p', 1, 1],
        ['p', 2, 2],
        ['p', 3, 3],
      ]);
    });

    it('links each entry to the hash of the one before it, the first to GENESIS', async () => {
      await store.put('p', guardrails());
      for (let i = 1; i <= 3; i++) await record('p', i);
      const log = await store.readAuditLog('p');
      expect(log.map((c) => c.prev)).toEqual([GENESIS, log[0]?.hash, log[1]?.hash]);
    });

    it('keeps a log that verifies after a mix of updates', async () => {
      await store.put('p', guardrails({ toolBudget: 1 }));
      await record('p', 1);
      await store.update('p', spend(400_000, 2));
      await store.update('p', () => ({ result: null, mutation: { steps: 1 } }));
      await store.update('p', () => ({ result: null, replace: guardrails({ maxSteps: 4 }) }));
      await store.update('p', spend(900_000, 3));
      await store.update('p', () => ({
        result: null,
        audit: entry('step_allowed', 4),
        newApproval: approval('a1', 'p'),
      }));
      const report = await verifyAuditLog(store, 'p');
      expect([report.ok, report.size]).toEqual([true, 4]);
    });

    it('keeps the earlier entries in the log when guardrails are put with a trail', async () => {
      await store.put('p', guardrails());
      await record('p', 1);
      await record('p', 2);
      await store.put('p', guardrails(), trailOf(7, 8));
      expect(logIds(await store.readAuditLog('p'))).toEqual([1, 2, 7, 8]);
    });

    it('keeps a log that verifies across a put with a trail', async () => {
      await store.put('p', guardrails());
      await record('p', 1);
      await store.put('p', guardrails(), trailOf(7, 8));
      await record('p', 9);
      const report = await verifyAuditLog(store, 'p');
      expect([report.ok, report.size]).toEqual([true, 4]);
    });

    it('starts the trail get returns at the first entry of a trail that was put', async () => {
      await store.put('p', guardrails());
      await record('p', 1);
      await store.put('p', guardrails(), trailOf(7, 8));
      await record('p', 9);
      expect(ids((await stored('p')).audit)).toEqual([7, 8, 9]);
    });

    it('keeps the log when guardrails are put again without a trail', async () => {
      await store.put('p', guardrails());
      await record('p', 1);
      await store.put('p', guardrails({ maxSteps: 3 }));
      expect(logIds(await store.readAuditLog('p'))).toEqual([1]);
    });

    it('removes the log of a deleted plan', async () => {
      await store.put('p', guardrails());
      await record('p', 1);
      await store.delete('p');
      expect(await store.readAuditLog('p')).toEqual([]);
    });

    it('starts a new log at seq 1 for a plan put again after it was deleted', async () => {
      await store.put('p', guardrails());
      await record('p', 1);
      await store.delete('p');
      await store.put('p', guardrails());
      await record('p', 2);
      const log = await store.readAuditLog('p');
      expect(log.map((c) => [c.seq, c.prev, c.entry.details['i']])).toEqual([[1, GENESIS, 2]]);
    });

    it('keeps the logs of plans apart', async () => {
      await store.put('p', guardrails());
      await store.put('q', guardrails());
      await record('p', 1);
      await record('q', 2);
      expect(logIds(await store.readAuditLog('q'))).toEqual([2]);
      expect((await verifyAuditLog(store, 'q')).ok).toBe(true);
    });

    it('leaves out the entry of a change whose mutation is refused', async () => {
      await store.put('p', guardrails());
      await record('p', 1);
      await expect(
        store.update('p', () => ({
          result: null,
          audit: entry('budget_allowed', 2),
          mutation: { release: 'r1' },
        })),
      ).rejects.toBeInstanceOf(Error);
      await record('p', 3);
      expect(logIds(await store.readAuditLog('p'))).toEqual([1, 3]);
    });

    it('leaves out the entry of a change that throws', async () => {
      await store.put('p', guardrails());
      await expect(
        store.update('p', () => {
          throw new Error('no decision');
        }),
      ).rejects.toThrow('no decision');
      expect(await store.readAuditLog('p')).toEqual([]);
    });

    it('keeps a log of 1,000 entries that verifies after 1,000 concurrent updates', async () => {
      const calls = 1000;
      await store.put('p', guardrails({ toolBudget: 0.0001 }));
      await Promise.all(Array.from({ length: calls }, (_, i) => store.update('p', spend(1, i))));
      const report = await verifyAuditLog(store, 'p');
      expect([report.ok, report.size]).toEqual([true, calls]);
    });
  });
}
