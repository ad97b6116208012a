// The GuardrailStore contract: update.
import { AuditTrail } from '../../audit/AuditTrail.js';
import type { GuardrailStore } from '../../store/GuardrailStore.js';
import { START, LATER, guardrails, entry, spend, ids, storedIn } from './fixtures.js';
import type { ContractContext } from './context.js';

export function update(c: ContractContext): void {
  const { describe, it, expect } = c.test;
  describe('update', () => {
    let store!: GuardrailStore;
    c.eachStore((s) => (store = s));
    const stored = (planId: string) => storedIn(store, planId);

    it('passes the stored guardrails to the change', async () => {
      await store.put('p', guardrails({ stepCount: 4, budgetSpent: 0.5 }));
      const seen = await store.update('p', (g) => ({
        result: g ? { steps: g.stepCount, spent: g.budgetSpentMicros } : null,
      }));
      expect(seen).toEqual({ steps: 4, spent: 500_000 });
    });

    it('returns the result of the change', async () => {
      await store.put('p', guardrails());
      expect(await store.update('p', () => ({ result: 'decided' }))).toBe('decided');
    });

    it('applies both the audit entry and the mutation of a change', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => ({
        result: null,
        audit: entry('budget_allowed', 1),
        mutation: { spendMicros: 250_000, steps: 1 },
      }));
      const record = await stored('p');
      expect(record.guardrails.budgetSpentMicros).toBe(250_000);
      expect(record.guardrails.stepCount).toBe(1);
      expect(ids(record.audit)).toEqual([1]);
      expect(record.audit.allowedCount).toBe(1);
    });

    it('records an audit entry without a mutation', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => ({ result: null, audit: entry('step_blocked', 3) }));
      const record = await stored('p');
      expect(ids(record.audit)).toEqual([3]);
      expect(record.audit.deniedCount).toBe(1);
      expect(record.guardrails.toJSON()).toEqual(guardrails().toJSON());
    });

    it('changes nothing for a change with neither audit entry nor mutation', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => ({ result: null }));
      const record = await stored('p');
      expect(record.audit.size).toBe(0);
      expect(record.guardrails.toJSON()).toEqual(guardrails().toJSON());
    });

    it('passes null for an unconfigured plan and returns the result without storing anything', async () => {
      const seen: unknown[] = [];
      const result = await store.update('missing', (g) => {
        seen.push(g);
        return { result: 42 };
      });
      expect(seen).toEqual([null]);
      expect(result).toBe(42);
      expect(await store.get('missing')).toBeNull();
    });

    it('refuses to record a change for an unconfigured plan', async () => {
      await expect(
        store.update('missing', () => ({
          result: null,
          audit: entry('step_allowed'),
          mutation: { steps: 1 },
        })),
      ).rejects.toBeInstanceOf(Error);
      expect(await store.get('missing')).toBeNull();
    });

    it('rejects with the error of a change that throws and changes nothing', async () => {
      await store.put('p', guardrails());
      const boom = new Error('boom');
      await expect(
        store.update('p', () => {
          throw boom;
        }),
      ).rejects.toBe(boom);
      const record = await stored('p');
      expect(record.audit.size).toBe(0);
      expect(record.guardrails.toJSON()).toEqual(guardrails().toJSON());
    });

    it('adds mutation steps to the step count', async () => {
      await store.put('p', guardrails({ stepCount: 1 }));
      await store.update('p', () => ({ result: null, mutation: { steps: 2 } }));
      expect((await stored('p')).guardrails.stepCount).toBe(3);
    });

    it('adds mutation spending, in micro-units, to the budget spent', async () => {
      await store.put('p', guardrails({ budgetSpent: 0.1 }));
      await store.update('p', () => ({ result: null, mutation: { spendMicros: 200_000 } }));
      const g = (await stored('p')).guardrails;
      expect(g.budgetSpentMicros).toBe(300_000);
      expect(g.budgetSpent).toBe(0.3);
    });

    it('sets the start time when it is unset', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => ({ result: null, mutation: { startTime: START } }));
      expect((await stored('p')).guardrails.startTime).toBe(START);
    });

    it('keeps a start time that is already set', async () => {
      await store.put('p', guardrails({ startTime: START }));
      await store.update('p', () => ({ result: null, mutation: { startTime: LATER } }));
      expect((await stored('p')).guardrails.startTime).toBe(START);
    });

    it('keeps the other fields when setting the start time', async () => {
      await store.put('p', guardrails({ stepCount: 2, budgetSpent: 1 }));
      await store.update('p', () => ({ result: null, mutation: { startTime: START, steps: 1 } }));
      const g = (await stored('p')).guardrails;
      expect(g.toJSON()).toEqual(guardrails({ stepCount: 3, budgetSpent: 1, startTime: START }).toJSON());
    });

    it('shows each update the effects of the ones before it', async () => {
      await store.put('p', guardrails());
      for (let i = 0; i < 3; i++) await store.update('p', () => ({ result: null, mutation: { steps: 1 } }));
      const steps = await store.update('p', (g) => ({ result: g?.stepCount }));
      expect(steps).toBe(3);
    });

    it('grants exactly the budget to 1,000 concurrent check-and-spend updates and records every one', async () => {
      const calls = 1000;
      await store.put('p', guardrails({ toolBudget: 0.0001 }), new AuditTrail({ maxEntries: 2 * calls }));
      expect((await stored('p')).guardrails.toolBudgetMicros).toBe(100);

      const checks = await Promise.all(
        Array.from({ length: calls }, (_, i) => store.update('p', spend(1, i))),
      );

      expect(checks.filter((c) => c.allowed)).toHaveLength(100);
      const record = await stored('p');
      expect(record.guardrails.budgetSpentMicros).toBe(100);
      expect(record.audit.size).toBe(calls);
      expect(record.audit.allowedCount).toBe(100);
      expect(record.audit.deniedCount).toBe(calls - 100);
      // Serialized updates grant the first 100 they run, so the trail holds 100 grants, then denials.
      const results = record.audit.entries.map((e) => e.result);
      expect(results.slice(0, 100).every((r) => r === 'allowed')).toBe(true);
      expect(results.slice(100).every((r) => r === 'denied')).toBe(true);
    });
  });
}
