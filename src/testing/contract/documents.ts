// The GuardrailStore contract: plan documents.
import type { GuardrailStore, PlanDocumentInput } from '../../store/GuardrailStore.js';
import { START, guardrails } from './fixtures.js';
import type { ContractContext } from './context.js';

export function documents(c: ContractContext): void {
  const { describe, it, expect } = c.test;
  describe('plan documents', () => {
    let store!: GuardrailStore;
    c.eachStore((s) => (store = s));

    function doc(planId: string, phase = 'execute', body: PlanDocumentInput['body'] = { step: 1 }) {
      return { planId, phase, body, updatedAt: START };
    }

    it('returns null for a plan with no saved document', async () => {
      expect(await store.getPlanDocument('p')).toBeNull();
    });

    it('returns the document that was saved, at revision 1', async () => {
      await store.savePlanDocument(doc('p', 'execute', { decisions: [{ id: 'a' }] }));
      expect(await store.getPlanDocument('p')).toEqual({
        ...doc('p', 'execute', { decisions: [{ id: 'a' }] }),
        revision: 1,
      });
    });

    it('resolves a save with the document as saved', async () => {
      expect(await store.savePlanDocument(doc('p'))).toEqual({ ...doc('p'), revision: 1 });
    });

    it('counts the revision up with each save', async () => {
      await store.savePlanDocument(doc('p'));
      await store.savePlanDocument(doc('p', 'completed'));
      expect(await store.getPlanDocument('p')).toMatchObject({ phase: 'completed', revision: 2 });
    });

    it('keeps the time of a save in canonical UTC form', async () => {
      await store.savePlanDocument({ ...doc('p'), updatedAt: '2026-11-30T11:00:00+01:00' });
      expect((await store.getPlanDocument('p'))?.updatedAt).toBe(START);
    });

    it('keeps what was saved when the caller changes its object afterwards', async () => {
      const body = { step: 1 };
      await store.savePlanDocument(doc('p', 'execute', body));
      body.step = 2;
      expect((await store.getPlanDocument('p'))?.body).toEqual({ step: 1 });
    });

    it('saves over the expected revision', async () => {
      await store.savePlanDocument(doc('p'));
      await store.savePlanDocument(doc('p', 'completed'), { expectedRevision: 1 });
      expect(await store.getPlanDocument('p')).toMatchObject({ phase: 'completed', revision: 2 });
    });

    it('refuses a save over another revision than expected, changing nothing', async () => {
      await store.savePlanDocument(doc('p'));
      await store.savePlanDocument(doc('p', 'paused'));
      const late = store.savePlanDocument(doc('p', 'completed'), { expectedRevision: 1 });
      await expect(late).rejects.toMatchObject({ code: 'PLAN_DOCUMENT_CONFLICT' });
      expect(await store.getPlanDocument('p')).toMatchObject({ phase: 'paused', revision: 2 });
    });

    it('creates a document expected to be absent', async () => {
      await store.savePlanDocument(doc('p'), { expectedRevision: null });
      expect(await store.getPlanDocument('p')).toMatchObject({ revision: 1 });
    });

    it('refuses to create a document expected to be absent when one is saved', async () => {
      await store.savePlanDocument(doc('p'));
      const second = store.savePlanDocument(doc('p', 'completed'), { expectedRevision: null });
      await expect(second).rejects.toMatchObject({ code: 'PLAN_DOCUMENT_CONFLICT' });
    });

    it('refuses a save over a revision when none is saved', async () => {
      const save = store.savePlanDocument(doc('p'), { expectedRevision: 1 });
      await expect(save).rejects.toMatchObject({ code: 'PLAN_DOCUMENT_CONFLICT' });
      expect(await store.getPlanDocument('p')).toBeNull();
    });

    it('lets exactly one of concurrent saves over one revision through', async () => {
      await store.savePlanDocument(doc('p'));
      const saves = await Promise.allSettled(
        Array.from({ length: 8 }, (_, i) =>
          store.savePlanDocument(doc('p', `claim-${i}`), { expectedRevision: 1 }),
        ),
      );
      expect(saves.filter((s) => s.status === 'fulfilled')).toHaveLength(1);
    });

    const refused: [string, Partial<PlanDocumentInput>, string][] = [
      ['an empty phase', { phase: '' }, 'document.phase'],
      ['a phase with a control character', { phase: 'a\nb' }, 'document.phase'],
      ['a body that is not an object', { body: [] as unknown as PlanDocumentInput['body'] }, 'document.body'],
      ['a time that is not ISO-8601', { updatedAt: 'yesterday' }, 'document.updatedAt'],
      ['an empty plan id', { planId: '' }, 'plan_id'],
    ];
    for (const [what, change, field] of refused) {
      it(`refuses ${what}, naming the field`, async () => {
        await expect(store.savePlanDocument({ ...doc('p'), ...change })).rejects.toMatchObject({ field });
        expect(await store.getPlanDocument('p')).toBeNull();
      });
    }

    it('refuses an expected revision that is not an integer >= 1', async () => {
      const save = store.savePlanDocument(doc('p'), { expectedRevision: 0 });
      await expect(save).rejects.toMatchObject({ field: 'options.expectedRevision' });
    });

    it('lists configured plans and plans with a document, in plan id order', async () => {
      await store.put('b', guardrails());
      await store.savePlanDocument(doc('a', 'completed'));
      await store.put('c', guardrails());
      await store.savePlanDocument(doc('c', 'awaiting_confirmation'));
      expect(await store.listPlans()).toEqual([
        { planId: 'a', configured: false, document: { phase: 'completed', updatedAt: START, revision: 1 } },
        { planId: 'b', configured: true, document: null },
        {
          planId: 'c',
          configured: true,
          document: { phase: 'awaiting_confirmation', updatedAt: START, revision: 1 },
        },
      ]);
    });

    it('lists nothing in a new store', async () => {
      expect(await store.listPlans()).toEqual([]);
    });

    it('forgets the document of a deleted plan', async () => {
      await store.put('p', guardrails());
      await store.savePlanDocument(doc('p'));
      await store.delete('p');
      expect([await store.getPlanDocument('p'), await store.listPlans()]).toEqual([null, []]);
    });

    it('reports deleting a plan that has only a document as deleting something', async () => {
      await store.savePlanDocument(doc('p'));
      expect(await store.delete('p')).toBe(true);
    });
  });
}
