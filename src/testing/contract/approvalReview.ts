// The GuardrailStore contract: what an approval carries for a team's review of it (the targets to tell,
// the requester, the rule, the votes, the decider), kept through every way an update writes approvals.
import { spendCap } from '../../guardrails/caps.js';
import type { Approval, ApprovalVote, GuardrailStore } from '../../store/GuardrailStore.js';
import type { ContractContext } from './context.js';
import { approval, guardrails, LATER, T0, withReview } from './fixtures.js';

export function approvalReview(c: ContractContext): void {
  const { describe, it, expect } = c.test;
  describe('the review fields of approvals', () => {
    let store!: GuardrailStore;
    c.eachStore((s) => (store = s));

    /** `a` with Ann's approval added to its votes, decided by her. */
    const decided = (a: Approval): Approval => {
      const ann: ApprovalVote = {
        by: { kind: 'operator', subject: 'ann', name: 'Ann' },
        at: LATER,
      };
      return { ...a, status: 'approved', votes: [...(a.votes ?? []), ann], decider: ann.by };
    };

    it('keeps them on a new approval', async () => {
      await store.put('p', guardrails());
      const a = withReview(approval('a1', 'p'));
      await store.update('p', () => ({ result: null, newApproval: a }));
      expect(await store.getApproval('a1')).toStrictEqual(a);
    });

    it('keeps them on an approval that replaces one', async () => {
      await store.put('p', guardrails());
      const a = withReview(approval('a1', 'p'));
      await store.update('p', () => ({ result: null, newApproval: a }));
      await store.update('p', () => ({ result: null, approval: decided(a) }), { approvalId: 'a1' });
      expect(await store.getApproval('a1')).toStrictEqual(decided(a));
    });

    it('keeps them on an approval written by an update that reads the spend caps', async () => {
      await store.put('p', guardrails());
      await store.putCaps([spendCap({ id: 'c', match: {}, limit: 1, window: 'day' })]);
      const a = withReview(approval('a1', 'p'));
      await store.update('p', () => ({ result: null, newApproval: a }), { capsAt: T0 });
      await store.update('p', () => ({ result: null, approval: decided(a) }), { capsAt: T0 });
      expect(await store.getApproval('a1')).toStrictEqual(decided(a));
    });

    it('hands them to a change, and lists and finds them', async () => {
      await store.put('p', guardrails());
      const a = withReview(approval('a1', 'p'));
      await store.update('p', () => ({ result: null, newApproval: a }));
      const handed = await store.update('p', (_g, found) => ({ result: found }), { approvalId: 'a1' });
      const found = await store.findApproval?.('p', a.decisionId);
      expect([handed, (await store.listApprovals())[0], found ?? a]).toStrictEqual([a, a, a]);
    });

    it('reads an approval given none of them with none of them', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => ({ result: null, newApproval: approval('a1', 'p') }));
      const read = await store.getApproval('a1');
      expect(Object.keys(read ?? {})).toEqual(Object.keys(approval('a1', 'p')));
    });

    it('refuses an approval whose rule asks for no approval, naming the field, keeping nothing', async () => {
      await store.put('p', guardrails());
      const a = withReview(approval('a1', 'p'));
      const bad = { ...a, rule: { ...(a.rule as NonNullable<Approval['rule']>), quorum: 0 } };
      await expect(store.update('p', () => ({ result: null, newApproval: bad }))).rejects.toMatchObject({
        field: 'approval.rule.quorum',
      });
      expect(await store.getApproval('a1')).toBeNull();
    });

    it('refuses a vote by an identity of no known kind, naming the field', async () => {
      await store.put('p', guardrails());
      const a = withReview(approval('a1', 'p'));
      const vote = { by: { kind: 'guest', subject: 'x', name: 'X' }, at: LATER };
      const bad = { ...a, votes: [vote] } as unknown as Approval;
      await expect(store.update('p', () => ({ result: null, newApproval: bad }))).rejects.toMatchObject({
        field: 'approval.votes[0].by.kind',
      });
    });

    it('keeps the votes as they were stored when the caller changes its array afterwards', async () => {
      await store.put('p', guardrails());
      const a = withReview(approval('a1', 'p'));
      const votes = [...(a.votes ?? [])];
      await store.update('p', () => ({ result: null, newApproval: { ...a, votes } }));
      votes.pop();
      expect((await store.getApproval('a1'))?.votes).toHaveLength(1);
    });
  });
}
