// The GuardrailStore contract: approvals.
import { AutonomyGuardrails } from '../../guardrails/AutonomyGuardrails.js';
import type { Approval, ApprovalStatus, GuardrailStore } from '../../store/GuardrailStore.js';
import { LATER, guardrails, entry, approval, withTool, ids, storedIn } from './fixtures.js';
import type { ContractContext } from './context.js';

export function approvals(c: ContractContext): void {
  const { describe, it, expect } = c.test;
  describe('approvals', () => {
    let store!: GuardrailStore;
    c.eachStore((s) => (store = s));
    const stored = (planId: string) => storedIn(store, planId);

    /** Stores `a` with a change of `planId`, whatever plan `a` names. */
    function insertInto(planId: string, a: Approval): Promise<null> {
      return store.update(planId, () => ({ result: null, approval: a }));
    }

    /** Stores `a` with a change of its own plan that does nothing else. */
    function insert(a: Approval): Promise<null> {
      return insertInto(a.planId, a);
    }

    /** What a change is handed for the approval named `approvalId` in an update of `planId`. */
    function handed(planId: string, approvalId?: string): Promise<Approval | null> {
      const change = (_g: AutonomyGuardrails | null, a: Approval | null) => ({ result: a });
      return approvalId === undefined
        ? store.update(planId, change)
        : store.update(planId, change, { approvalId });
    }

    async function listedIds(filter?: { planId?: string; status?: ApprovalStatus }): Promise<string[]> {
      return (await store.listApprovals(filter)).map((a) => a.id);
    }

    it('returns null for an approval that was never stored', async () => {
      expect(await store.getApproval('missing')).toBeNull();
    });

    it('stores the approval of a change', async () => {
      await store.put('p', guardrails());
      await insert(approval('a1', 'p'));
      expect(await store.getApproval('a1')).toEqual(approval('a1', 'p'));
    });

    it('replaces an approval of the same id with the one a later change gives', async () => {
      await store.put('p', guardrails());
      await insert(approval('a1', 'p'));
      const approved: Approval = {
        ...approval('a1', 'p'),
        status: 'approved',
        decidedBy: 'ann',
        decidedAt: LATER,
        reason: 'looks right',
      };
      await insert(approved);
      expect(await store.getApproval('a1')).toEqual(approved);
      expect(await listedIds()).toEqual(['a1']);
    });

    it('commits the approval together with the audit entry and the mutation of its change', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => ({
        result: null,
        approval: approval('a1', 'p'),
        audit: entry('step_allowed', 1),
        mutation: { steps: 1 },
      }));
      const record = await stored('p');
      expect(await store.getApproval('a1')).toEqual(approval('a1', 'p'));
      expect(ids(record.audit)).toEqual([1]);
      expect(record.guardrails.stepCount).toBe(1);
    });

    it('stores neither the approval nor the audit entry when the change throws', async () => {
      await store.put('p', guardrails());
      await insert(approval('a1', 'p'));
      const boom = new Error('boom');
      await expect(
        store.update(
          'p',
          () => {
            throw boom;
          },
          { approvalId: 'a1' },
        ),
      ).rejects.toBe(boom);
      expect(await store.getApproval('a1')).toEqual(approval('a1', 'p'));
      expect((await stored('p')).audit.size).toBe(0);
    });

    it('stores neither the approval nor the audit entry of a change whose mutation is refused', async () => {
      await store.put('p', guardrails());
      await expect(
        store.update('p', () => ({
          result: null,
          approval: approval('a1', 'p'),
          audit: entry('budget_allowed', 1),
          mutation: { release: 'never-reserved' },
        })),
      ).rejects.toBeInstanceOf(Error);
      expect(await store.getApproval('a1')).toBeNull();
      expect((await stored('p')).audit.size).toBe(0);
    });

    it('refuses an approval of another plan than the one updated', async () => {
      await store.put('p', guardrails());
      await store.put('q', guardrails());
      await expect(insertInto('p', approval('a1', 'q'))).rejects.toBeInstanceOf(Error);
      expect(await store.getApproval('a1')).toBeNull();
    });

    it('inserts a new approval, and refuses a new one whose id is in use', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => ({ result: null, newApproval: approval('a1', 'p') }));
      const taken = store.update('p', () => ({ result: null, newApproval: approval('a1', 'p', 5) }));
      await expect(taken).rejects.toMatchObject({ code: 'APPROVAL_ID_TAKEN' });
      expect(await store.getApproval('a1')).toEqual(approval('a1', 'p'));
    });

    it("changes neither counters nor trail when a new approval's id is in use", async () => {
      await store.put('p', guardrails({ maxSteps: 5 }));
      await store.update('p', () => ({ result: null, newApproval: approval('a1', 'p') }));
      const taken = store.update('p', () => ({
        result: null,
        newApproval: approval('a1', 'p', 5),
        audit: entry('step_allowed'),
        mutation: { steps: 1 },
      }));
      await expect(taken).rejects.toMatchObject({ code: 'APPROVAL_ID_TAKEN' });
      const after = await stored('p');
      expect([after.guardrails.stepCount, after.audit.size]).toEqual([0, 0]);
    });

    it('refuses to replace an approval that belongs to another plan', async () => {
      await store.put('p', guardrails());
      await store.put('q', guardrails());
      await insert(approval('a1', 'q'));
      await expect(insert(approval('a1', 'p'))).rejects.toBeInstanceOf(Error);
      expect(await store.getApproval('a1')).toEqual(approval('a1', 'q'));
    });

    it('refuses an approval for an unconfigured plan', async () => {
      await expect(insert(approval('a1', 'missing'))).rejects.toBeInstanceOf(Error);
      expect(await store.getApproval('a1')).toBeNull();
    });

    it('stores a copy of the approval, so later changes by the caller change nothing stored', async () => {
      await store.put('p', guardrails());
      const a = approval('a1', 'p');
      await insert(a);
      (a as { status: ApprovalStatus }).status = 'used';
      expect((await store.getApproval('a1'))?.status).toBe('pending');
    });

    it('hands the change the approval named in the options when it belongs to the plan', async () => {
      await store.put('p', guardrails());
      await insert(approval('a1', 'p'));
      expect(await handed('p', 'a1')).toEqual(approval('a1', 'p'));
    });

    it('hands the change null for an approval of another plan', async () => {
      await store.put('p', guardrails());
      await store.put('q', guardrails());
      await insert(approval('a1', 'q'));
      expect(await handed('p', 'a1')).toBeNull();
    });

    it('hands the change null for an approval id that is not stored', async () => {
      await store.put('p', guardrails());
      expect(await handed('p', 'missing')).toBeNull();
    });

    it('hands the change null when the options name no approval', async () => {
      await store.put('p', guardrails());
      await insert(approval('a1', 'p'));
      expect(await handed('p')).toBeNull();
    });

    it('reads back the tool and the input preview of an approval by id, listed and handed to a change', async () => {
      await store.put('p', guardrails());
      await insert(withTool(approval('a1', 'p')));
      const read = [
        await store.getApproval('a1'),
        ...(await store.listApprovals({ planId: 'p', status: 'pending' })),
        await handed('p', 'a1'),
      ];
      expect(read).toStrictEqual([1, 2, 3].map(() => withTool(approval('a1', 'p'))));
    });

    it('reads back an approval stored without a tool or a preview without them', async () => {
      await store.put('p', guardrails());
      await insert(approval('a1', 'p'));
      const read = [await store.getApproval('a1'), ...(await store.listApprovals()), await handed('p', 'a1')];
      expect(read.map((a) => a !== null && ('toolName' in a || 'inputPreview' in a))).toEqual([
        false,
        false,
        false,
      ]);
    });

    it('keeps the tool and the input preview when a decided approval replaces the pending one', async () => {
      await store.put('p', guardrails());
      await insert(withTool(approval('a1', 'p')));
      const denied: Approval = { ...withTool(approval('a1', 'p')), status: 'denied', reason: 'no' };
      await insert(denied);
      expect(await store.getApproval('a1')).toStrictEqual(denied);
    });

    it('lists approvals oldest request first', async () => {
      await store.put('p', guardrails());
      await store.put('q', guardrails());
      await insert(approval('a1', 'q', 1));
      await insert(approval('a2', 'p', 2));
      await insert(approval('a3', 'q', 3));
      expect(await listedIds()).toEqual(['a1', 'a2', 'a3']);
    });

    it('keeps the place of an approval in the list when it is replaced', async () => {
      await store.put('p', guardrails());
      await insert(approval('a1', 'p', 1));
      await insert(approval('a2', 'p', 2));
      await insert(approval('a1', 'p', 1, 'approved'));
      expect(await listedIds()).toEqual(['a1', 'a2']);
    });

    it('lists the approvals of one plan', async () => {
      await store.put('p', guardrails());
      await store.put('q', guardrails());
      await insert(approval('a1', 'p', 1));
      await insert(approval('a2', 'q', 2));
      await insert(approval('a3', 'p', 3));
      expect(await listedIds({ planId: 'p' })).toEqual(['a1', 'a3']);
    });

    it('lists the approvals in one status', async () => {
      await store.put('p', guardrails());
      await insert(approval('a1', 'p', 1, 'approved'));
      await insert(approval('a2', 'p', 2));
      await insert(approval('a3', 'p', 3, 'approved'));
      expect(await listedIds({ status: 'approved' })).toEqual(['a1', 'a3']);
    });

    it('lists the approvals of one plan in one status', async () => {
      await store.put('p', guardrails());
      await store.put('q', guardrails());
      await insert(approval('a1', 'p', 1, 'denied'));
      await insert(approval('a2', 'q', 2, 'denied'));
      await insert(approval('a3', 'p', 3));
      expect(await listedIds({ planId: 'p', status: 'denied' })).toEqual(['a1']);
    });

    /** `a`, asked for decision `decisionId`. */
    const forDecision = (a: Approval, decisionId: string): Approval => ({ ...a, decisionId });

    it('finds the newest approval of a plan asked for a decision', async () => {
      if (!store.findApproval) return;
      await store.put('p', guardrails());
      await insert(forDecision(approval('a2', 'p', 2), 'd1'));
      await insert(forDecision(approval('a1', 'p', 1), 'd1'));
      await insert(forDecision(approval('a3', 'p', 3), 'd2'));
      expect((await store.findApproval('p', 'd1'))?.id).toBe('a2');
    });

    it('finds, of approvals asked at the same time for a decision, the one with the greater id', async () => {
      if (!store.findApproval) return;
      await store.put('p', guardrails());
      await insert(forDecision(approval('b', 'p', 1), 'd1'));
      await insert(forDecision(approval('a', 'p', 1), 'd1'));
      expect((await store.findApproval('p', 'd1'))?.id).toBe('b');
    });

    it('finds the approval of a decision as a later change left it', async () => {
      if (!store.findApproval) return;
      await store.put('p', guardrails());
      await insert(forDecision(approval('a1', 'p', 1), 'd1'));
      await insert(forDecision(approval('a2', 'p', 2), 'd1'));
      await insert({ ...forDecision(approval('a2', 'p', 2), 'd1'), status: 'denied', decidedBy: 'ann' });
      expect(await store.findApproval('p', 'd1')).toMatchObject({ id: 'a2', status: 'denied' });
    });

    it('finds no approval of a decision once its plan is deleted', async () => {
      if (!store.findApproval) return;
      await store.put('p', guardrails());
      await insert(forDecision(approval('a1', 'p', 1), 'd1'));
      await store.delete('p');
      await store.put('p', guardrails());
      expect(await store.findApproval('p', 'd1')).toBeNull();
    });

    it('finds no approval of a decision asked in another plan only', async () => {
      if (!store.findApproval) return;
      await store.put('p', guardrails());
      await store.put('q', guardrails());
      await insert(forDecision(approval('a1', 'q', 1), 'd1'));
      expect(await store.findApproval('p', 'd1')).toBeNull();
    });

    it('lists nothing when no approval matches', async () => {
      await store.put('p', guardrails());
      await insert(approval('a1', 'p'));
      expect(await listedIds({ planId: 'q' })).toEqual([]);
      expect(await listedIds({ status: 'used' })).toEqual([]);
    });

    it("deletes a plan's approvals with the plan and keeps the other plans' approvals", async () => {
      await store.put('p', guardrails());
      await store.put('q', guardrails());
      await insert(approval('a1', 'p', 1));
      await insert(approval('a2', 'q', 2));
      await store.delete('p');
      expect(await store.getApproval('a1')).toBeNull();
      expect(await listedIds()).toEqual(['a2']);
    });
  });
}
