// The GuardrailStore contract: changes with several entries.
import { verifyAuditLog } from '../../audit/verify.js';
import type { GuardrailStore, PlanChange } from '../../store/GuardrailStore.js';
import { guardrails, entry, ids, logIds, storedIn } from './fixtures.js';
import type { ContractContext } from './context.js';

export function severalEntries(c: ContractContext): void {
  const { describe, it, expect } = c.test;
  describe('changes with several entries', () => {
    let store!: GuardrailStore;
    c.eachStore((s) => (store = s));
    const stored = (planId: string) => storedIn(store, planId);

    /** A change that records entry `first` as its audit entry, then `more` as its entries. */
    function several(first: number | undefined, ...more: number[]): PlanChange<null> {
      const entries = more.map((i) => entry('step_allowed', i));
      return first === undefined
        ? { result: null, entries }
        : { result: null, audit: entry('step_allowed', first), entries };
    }

    it('records the entries of a change in order, after its audit entry, with consecutive seqs', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => ({ result: null, audit: entry('step_allowed', 0) }));
      await store.update('p', () => ({ ...several(1, 2, 3), mutation: { steps: 1 } }));
      const log = await store.readAuditLog('p');
      expect([ids((await stored('p')).audit), log.map((c) => [c.seq, c.entry.details['i']])]).toEqual([
        [0, 1, 2, 3],
        [
          [1, 0],
          [2, 1],
          [3, 2],
          [4, 3],
        ],
      ]);
    });

    it('records the entries of a change that has no audit entry', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => several(undefined, 1, 2));
      expect(logIds(await store.readAuditLog('p'))).toEqual([1, 2]);
    });

    it('keeps a log that verifies after changes with several entries', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => several(1, 2, 3));
      await store.update('p', () => ({ result: null, audit: entry('step_allowed', 4) }));
      await store.update('p', () => ({ ...several(undefined, 5, 6), mutation: { steps: 2 } }));
      const report = await verifyAuditLog(store, 'p');
      expect([report.ok, report.size]).toEqual([true, 6]);
    });

    it('records none of the entries of a change whose mutation is refused', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => several(1));
      await expect(
        store.update('p', () => ({ ...several(2, 3, 4), mutation: { steps: 1, release: 'r1' } })),
      ).rejects.toBeInstanceOf(Error);
      await store.update('p', () => several(5));
      const record = await stored('p');
      expect([logIds(await store.readAuditLog('p')), ids(record.audit), record.guardrails.stepCount]).toEqual(
        [[1, 5], [1, 5], 0],
      );
    });

    it('refuses entries that are not audit entries, naming the one, and records nothing', async () => {
      await store.put('p', guardrails());
      const bad = { ...several(1, 2), entries: [entry('step_allowed', 2), { i: 3 } as never] };
      await expect(store.update('p', () => ({ ...bad, mutation: { steps: 1 } }))).rejects.toMatchObject({
        field: 'entries[1]',
      });
      const record = await stored('p');
      expect([await store.readAuditLog('p'), record.audit.size, record.guardrails.stepCount]).toEqual([
        [],
        0,
        0,
      ]);
    });

    it('refuses to record a change with entries and a mutation for an unconfigured plan', async () => {
      await expect(
        store.update('missing', () => ({ ...several(1, 2), mutation: { steps: 1 } })),
      ).rejects.toBeInstanceOf(Error);
      expect(await store.get('missing')).toBeNull();
    });

    it('refuses to record a change with entries alone for an unconfigured plan', async () => {
      await expect(store.update('missing', () => several(undefined, 1))).rejects.toBeInstanceOf(Error);
      expect(await store.get('missing')).toBeNull();
    });

    it('records nothing for a change whose entries are empty', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => several(undefined));
      expect([await store.readAuditLog('p'), (await stored('p')).audit.size]).toEqual([[], 0]);
    });

    it('answers a change whose entries are empty for an unconfigured plan, as one that writes nothing', async () => {
      expect(await store.update('missing', () => ({ result: 7, entries: [] }))).toBe(7);
      expect(await store.get('missing')).toBeNull();
    });
  });
}
