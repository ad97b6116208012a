// The GuardrailStore contract: updates made at once.
import type { GuardrailStore, PlanChangeFn } from '../../store/GuardrailStore.js';
import { guardrails, entry, approval, logIds, storedIn } from './fixtures.js';
import type { ContractContext } from './context.js';

export function concurrency(c: ContractContext): void {
  const { describe, it, expect } = c.test;
  describe('updates made at once', () => {
    let store!: GuardrailStore;
    c.eachStore((s) => (store = s));
    const stored = (planId: string) => storedIn(store, planId);

    const at =
      (i: number): PlanChangeFn<number> =>
      () => ({
        result: i,
        audit: entry('step_allowed', i),
      });

    it('takes them in the order they were made', async () => {
      await store.put('p', guardrails());
      await Promise.all(Array.from({ length: 50 }, (_, i) => store.update('p', at(i))));
      expect(logIds(await store.readAuditLog('p'))).toEqual(Array.from({ length: 50 }, (_, i) => i));
    });

    it('shows each the effects of the ones made before it', async () => {
      await store.put('p', guardrails());
      const seen = await Promise.all(
        Array.from({ length: 5 }, () =>
          store.update('p', (g) => ({ result: g?.stepCount, mutation: { steps: 1 } })),
        ),
      );
      expect(seen).toEqual([0, 1, 2, 3, 4]);
    });

    /** A step with its entry, numbered `i`. */
    const step =
      (i: number): PlanChangeFn<number> =>
      () => ({ result: i, audit: entry('step_allowed', i), mutation: { steps: 1 } });

    /**
     * After entry 0 (so that a store keeping the plan it wrote has it), steps 1 and 3 made at once with
     * `middle` between them: how each settled, the log's entries and the steps counted.
     */
    async function around(middle: PlanChangeFn<unknown>): Promise<[string[], unknown[], number]> {
      await store.update('p', at(0));
      const settled = await Promise.allSettled([
        store.update('p', step(1)),
        store.update('p', middle),
        store.update('p', step(3)),
      ]);
      return [
        settled.map((r) => r.status),
        logIds(await store.readAuditLog('p')),
        (await stored('p')).guardrails.stepCount,
      ];
    }

    it('rejects only the one whose change throws, and records the others', async () => {
      await store.put('p', guardrails());
      const [statuses, log] = await around(() => {
        throw new Error('no decision');
      });
      expect([statuses, log]).toEqual([
        ['fulfilled', 'rejected', 'fulfilled'],
        [0, 1, 3],
      ]);
    });

    it('rejects only the one whose mutation is refused, and records the others', async () => {
      await store.put('p', guardrails());
      const outcome = await around(() => ({
        result: 2,
        audit: entry('step_allowed', 2),
        mutation: { release: 'r1' },
      }));
      expect(outcome).toEqual([['fulfilled', 'rejected', 'fulfilled'], [0, 1, 3], 2]);
    });

    it('records the several entries of one of them between the entries of the others', async () => {
      await store.put('p', guardrails());
      const outcome = await around(() => ({
        result: 2,
        audit: entry('step_allowed', 2),
        entries: [entry('step_allowed', 20), entry('step_allowed', 21)],
        mutation: { steps: 1 },
      }));
      expect(outcome).toEqual([['fulfilled', 'fulfilled', 'fulfilled'], [0, 1, 2, 20, 21, 3], 3]);
    });

    it('rejects only the one with several entries whose mutation is refused, and records the others', async () => {
      await store.put('p', guardrails());
      const outcome = await around(() => ({
        result: 2,
        audit: entry('step_allowed', 2),
        entries: [entry('step_allowed', 20), entry('step_allowed', 21)],
        mutation: { steps: 1, release: 'r1' },
      }));
      expect(outcome).toEqual([['fulfilled', 'rejected', 'fulfilled'], [0, 1, 3], 2]);
    });

    it('rejects only the one whose new approval id is taken, and records the others', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => ({ result: null, newApproval: approval('a1', 'p') }));
      const outcome = await around(() => ({
        result: 2,
        audit: entry('step_allowed', 2),
        mutation: { steps: 1 },
        newApproval: approval('a1', 'p', 5),
      }));
      expect(outcome).toEqual([['fulfilled', 'rejected', 'fulfilled'], [0, 1, 3], 2]);
    });
  });
}
