// The GuardrailStore contract: put, get and delete.
import { AuditTrail } from '../../audit/AuditTrail.js';
import type { GuardrailStore } from '../../store/GuardrailStore.js';
import { guardrails, entry, ids, START, storedIn } from './fixtures.js';
import type { ContractContext } from './context.js';

export function basics(c: ContractContext): void {
  const { describe, it, expect } = c.test;
  describe('put, get and delete', () => {
    let store!: GuardrailStore;
    c.eachStore((s) => (store = s));
    const stored = (planId: string) => storedIn(store, planId);

    it('returns null for a plan that was never stored', async () => {
      expect(await store.get('missing')).toBeNull();
    });

    it('returns the guardrails that were put', async () => {
      const g = guardrails({ requiredConfirmations: ['deploy'], stepCount: 2, budgetSpent: 1.25 });
      await store.put('p', g);
      expect((await stored('p')).guardrails.toJSON()).toEqual(g.toJSON());
    });

    it("returns the labels of a plan's guardrails that were put", async () => {
      await store.put('p', guardrails({ labels: { team: 'ml', user: 'ann' } }));
      expect((await stored('p')).guardrails.labels).toEqual({ team: 'ml', user: 'ann' });
    });

    it("returns the labels of a plan's guardrails that were created", async () => {
      if (!store.create) return;
      await store.create('p', guardrails({ labels: { team: 'ml' } }));
      expect((await stored('p')).guardrails.labels).toEqual({ team: 'ml' });
    });

    it('keeps the labels of a plan through a change that starts it, takes a step and spends', async () => {
      await store.put('p', guardrails({ labels: { user: 'ann' } }));
      await store.update('p', () => ({
        result: null,
        audit: entry('budget_allowed', 1),
        mutation: { startTime: START, steps: 1, spendMicros: 250_000 },
      }));
      expect((await stored('p')).guardrails.labels).toEqual({ user: 'ann' });
      if (store.getGuardrails) expect((await store.getGuardrails('p'))?.labels).toEqual({ user: 'ann' });
    });

    it('starts an empty audit trail with the store capacity for a new plan put without one', async () => {
      await store.put('p', guardrails());
      const { audit } = await stored('p');
      expect(audit.size).toBe(0);
      expect(audit.allowedCount).toBe(0);
      expect(audit.deniedCount).toBe(0);
      expect(audit.maxEntries).toBe(store.auditCapacity);
    });

    it('keeps the existing audit trail when guardrails are put again without one', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => ({ result: null, audit: entry('step_allowed', 1) }));
      await store.update('p', () => ({ result: null, audit: entry('step_blocked', 2) }));
      await store.put('p', guardrails({ maxSteps: 3 }));
      const record = await stored('p');
      expect(record.guardrails.maxSteps).toBe(3);
      expect(ids(record.audit)).toEqual([1, 2]);
      expect(record.audit.allowedCount).toBe(1);
      expect(record.audit.deniedCount).toBe(1);
    });

    it('replaces the audit trail when guardrails are put with one', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => ({ result: null, audit: entry('step_allowed', 1) }));
      const trail = new AuditTrail({ maxEntries: 4 });
      trail.add(entry('step_blocked', 7));
      trail.add(entry('budget_blocked', 8));
      await store.put('p', guardrails(), trail);
      const { audit } = await stored('p');
      expect(ids(audit)).toEqual([7, 8]);
      expect(audit.allowedCount).toBe(0);
      expect(audit.deniedCount).toBe(2);
    });

    it("keeps a trail that was put at the store's own capacity, whatever capacity it came with", async () => {
      const small = new AuditTrail({ maxEntries: 1 });
      small.add(entry('step_allowed', 1));
      await store.put('p', guardrails(), small);
      const { audit } = await stored('p');
      expect(audit.maxEntries).toBe(store.auditCapacity);
    });

    it('keeps the newest entries of a trail larger than its capacity', async () => {
      const large = new AuditTrail({ maxEntries: store.auditCapacity + 2 });
      for (let i = 0; i < store.auditCapacity + 2; i++) large.add(entry('step_allowed', i));
      await store.put('p', guardrails(), large);
      const kept = ids((await stored('p')).audit);
      expect(kept.length).toBe(store.auditCapacity);
      expect(kept[0]).toBe(2);
      expect(kept.at(-1)).toBe(store.auditCapacity + 1);
    });

    it('stores copies of what was put, so later changes by the caller change nothing stored', async () => {
      const g = guardrails();
      const trail = new AuditTrail({ maxEntries: 4 });
      trail.add(entry('step_allowed', 1));
      await store.put('p', g, trail);
      g.incrementStep();
      g.recordCost(1);
      trail.add(entry('step_allowed', 2));
      const record = await stored('p');
      expect(record.guardrails.stepCount).toBe(0);
      expect(record.guardrails.budgetSpent).toBe(0);
      expect(ids(record.audit)).toEqual([1]);
    });

    it('returns copies from get, so changing them changes nothing stored', async () => {
      await store.put('p', guardrails());
      const first = await stored('p');
      first.guardrails.incrementStep();
      first.guardrails.recordCost(2);
      first.audit.add(entry('step_allowed', 1));
      const second = await stored('p');
      expect(second.guardrails.stepCount).toBe(0);
      expect(second.guardrails.budgetSpent).toBe(0);
      expect(second.audit.size).toBe(0);
    });

    it('creates a plan that is not configured, with an empty trail, and says it did', async () => {
      if (!store.create) return;
      const g = guardrails({ maxSteps: 4 });
      expect(await store.create('p', g)).toBe(true);
      const { guardrails: created, audit } = await stored('p');
      expect(created.toJSON()).toEqual(g.toJSON());
      expect([audit.size, audit.maxEntries]).toEqual([0, store.auditCapacity]);
    });

    it('leaves a configured plan as it is when asked to create it, and says it did not', async () => {
      if (!store.create) return;
      await store.put('p', guardrails({ maxSteps: 4 }));
      await store.update('p', () => ({
        result: null,
        audit: entry('step_allowed', 1),
        mutation: { steps: 1 },
      }));
      expect(await store.create('p', guardrails({ maxSteps: 9 }))).toBe(false);
      const record = await stored('p');
      expect([record.guardrails.maxSteps, record.guardrails.stepCount]).toEqual([4, 1]);
      expect(ids(record.audit)).toEqual([1]);
    });

    it('creates a plan once when two creates of it come at once', async () => {
      if (!store.create) return;
      const made = await Promise.all([
        store.create('p', guardrails({ maxSteps: 1 })),
        store.create('p', guardrails({ maxSteps: 2 })),
      ]);
      expect(made.filter(Boolean)).toHaveLength(1);
      expect((await stored('p')).guardrails.maxSteps).toBe(made[0] ? 1 : 2);
    });

    it('reads the guardrails alone as get reads them, after updates', async () => {
      if (!store.getGuardrails) return;
      await store.put('p', guardrails({ requiredConfirmations: ['deploy'] }));
      await store.update('p', () => ({ result: null, mutation: { steps: 2 } }));
      expect((await store.getGuardrails('p'))?.toJSON()).toEqual((await stored('p')).guardrails.toJSON());
      expect((await store.getGuardrails('p'))?.stepCount).toBe(2);
    });

    it('reads null guardrails for a plan that was never stored', async () => {
      if (!store.getGuardrails) return;
      expect(await store.getGuardrails('missing')).toBeNull();
    });

    it('returns a copy from getGuardrails, so changing it changes nothing stored', async () => {
      if (!store.getGuardrails) return;
      await store.put('p', guardrails());
      (await store.getGuardrails('p'))?.incrementStep();
      expect((await store.getGuardrails('p'))?.stepCount).toBe(0);
    });

    it('deletes a plan, its guardrails and its audit trail', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => ({ result: null, audit: entry('step_allowed', 1) }));
      expect(await store.delete('p')).toBe(true);
      expect(await store.get('p')).toBeNull();
      await store.put('p', guardrails());
      expect((await stored('p')).audit.size).toBe(0);
    });

    it('answers false when deleting a plan that is not stored', async () => {
      expect(await store.delete('missing')).toBe(false);
    });

    it('keeps plans apart', async () => {
      await store.put('a', guardrails());
      await store.put('b', guardrails());
      await store.update('a', () => ({
        result: null,
        audit: entry('step_allowed', 1),
        mutation: { steps: 1 },
      }));
      const b = await stored('b');
      expect(b.guardrails.stepCount).toBe(0);
      expect(b.audit.size).toBe(0);
      expect((await stored('a')).guardrails.stepCount).toBe(1);
    });
  });
}
