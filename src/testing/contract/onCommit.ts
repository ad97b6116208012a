// The GuardrailStore contract: an update's onCommit, told the entries it appended once they are committed.
//
// The contract is that of a store keeping a durable chained log (readAuditLog); a MemoryStore with
// `keepLog: false` keeps none, so has no seq or hash to report, never calls onCommit and is not run
// against it (its own tests check it never calls it).
import type { ChainedEntry } from '../../audit/chain.js';
import { spendCap } from '../../guardrails/caps.js';
import { holdIn } from '../../guardrails/capLedger.js';
import type { CapView, GuardrailStore, PlanChangeFn } from '../../store/GuardrailStore.js';
import type { ContractContext } from './context.js';
import { approval, entry, guardrails, storedIn, T0 } from './fixtures.js';

/** Every call of an onCommit, in order: the entries each was told. */
function reports(): { calls: (readonly ChainedEntry[])[]; onCommit: (e: readonly ChainedEntry[]) => void } {
  const calls: (readonly ChainedEntry[])[] = [];
  return { calls, onCommit: (e) => void calls.push(e) };
}

/** A change recording entry `i` (and a step), answering `i`. */
const step =
  (i: number): PlanChangeFn<number> =>
  () => ({ result: i, audit: entry('step_allowed', i), mutation: { steps: 1 } });

/** A change taking `micros` from every cap that applies, with entry `i`. */
const taking =
  (micros: number, key: string, i: number): PlanChangeFn<number> =>
  (_g, _a, caps) => ({
    result: i,
    audit: entry('budget_allowed', i),
    caps: (caps as CapView).applying.map((a) => ({
      ref: a.ref,
      state: holdIn(a.state, key, micros, T0 + 60_000),
    })),
  });

export function onCommit(c: ContractContext): void {
  const { describe, it, expect } = c.test;
  describe('onCommit', () => {
    let store!: GuardrailStore;
    c.eachStore((s) => (store = s));
    /** The entries of plan `planId`'s log with the seqs of `reported`, as readAuditLog reads them. */
    const logged = async (planId: string, reported: readonly ChainedEntry[]) => {
      const seqs = new Set(reported.map((r) => r.seq));
      return (await store.readAuditLog(planId)).filter((l) => seqs.has(l.seq));
    };

    it('reports the entry a change appended as readAuditLog reads it afterwards', async () => {
      await store.put('p', guardrails());
      await store.update('p', step(0));
      const { calls, onCommit } = reports();
      await store.update('p', step(1), { onCommit });
      const reported = calls[0] ?? [];
      expect([calls.length, reported.map((r) => r.seq)]).toEqual([1, [2]]);
      expect(reported).toEqual(await logged('p', reported));
    });

    it('reports the several entries of one change in order, in one call', async () => {
      await store.put('p', guardrails());
      const { calls, onCommit } = reports();
      const more = [entry('step_allowed', 2), entry('step_allowed', 3)];
      await store.update('p', () => ({ result: null, audit: entry('step_allowed', 1), entries: more }), {
        onCommit,
      });
      expect(calls).toEqual([await store.readAuditLog('p')]);
      expect(calls[0]?.map((r) => [r.seq, r.entry.details['i']])).toEqual([
        [1, 1],
        [2, 2],
        [3, 3],
      ]);
    });

    it('is not called for a change that writes nothing', async () => {
      await store.put('p', guardrails());
      const { calls, onCommit } = reports();
      expect(await store.update('p', () => ({ result: 7 }), { onCommit })).toBe(7);
      expect(calls).toEqual([]);
    });

    it('is not called for a change that changes the plan but records no entry', async () => {
      await store.put('p', guardrails());
      const { calls, onCommit } = reports();
      await store.update('p', () => ({ result: null, mutation: { steps: 1 }, entries: [] }), { onCommit });
      expect([calls, (await storedIn(store, 'p')).guardrails.stepCount]).toEqual([[], 1]);
    });

    it('is not called when the change throws', async () => {
      await store.put('p', guardrails());
      const { calls, onCommit } = reports();
      const throwing = () => {
        throw new Error('no decision');
      };
      await expect(store.update('p', throwing, { onCommit })).rejects.toThrow('no decision');
      expect(calls).toEqual([]);
    });

    it('is not called for a change the store refuses', async () => {
      await store.put('p', guardrails());
      const { calls, onCommit } = reports();
      const refused = store.update(
        'p',
        () => ({ result: null, audit: entry('step_allowed', 1), mutation: { release: 'r1' } }),
        { onCommit },
      );
      await expect(refused).rejects.toBeInstanceOf(Error);
      expect([calls, await store.readAuditLog('p')]).toEqual([[], []]);
    });

    it('leaves the update resolved and committed when it throws', async () => {
      await store.put('p', guardrails());
      const onCommit = () => {
        throw new Error('tracer down');
      };
      expect(await store.update('p', step(1), { onCommit })).toBe(1);
      const log = await store.readAuditLog('p');
      expect([log.map((l) => l.seq), (await storedIn(store, 'p')).guardrails.stepCount]).toEqual([[1], 1]);
    });

    it('reports to each of 20 updates of a plan made at once its own entry, every seq once', async () => {
      await store.put('p', guardrails({ maxSteps: 100 }));
      const each = Array.from({ length: 20 }, () => reports());
      await Promise.all(each.map((r, i) => store.update('p', step(i), { onCommit: r.onCommit })));
      const log = await store.readAuditLog('p');
      // Each told once, of its own entry, as the log holds it.
      expect(each.map((r) => r.calls)).toEqual(log.map((l) => [[l]]));
      expect(log.map((l) => [l.seq, l.entry.details['i']])).toEqual(each.map((_, i) => [i + 1, i]));
    });

    it('reports to the others of updates made at once, once each, when one is refused while writing', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => ({ result: null, newApproval: approval('a1', 'p') }));
      const [first, third] = [reports(), reports()];
      const settled = await Promise.allSettled([
        store.update('p', step(1), { onCommit: first.onCommit }),
        store.update('p', () => ({ ...step(2)(null, null, null), newApproval: approval('a1', 'p', 5) })),
        store.update('p', step(3), { onCommit: third.onCommit }),
      ]);
      const log = await store.readAuditLog('p');
      expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect([first.calls, third.calls]).toEqual([[[log[0]]], [[log[1]]]]);
    });

    it('reports the entry of an update that reads the spend caps', async () => {
      await store.put('p', guardrails());
      await store.putCaps([spendCap({ id: 'a', match: {}, limit: 1, window: 'day' })]);
      const { calls, onCommit } = reports();
      await store.update('p', taking(100_000, 'p\nr1', 1), { capsAt: T0, onCommit });
      expect(calls).toEqual([await store.readAuditLog('p')]);
    });

    it('reports to each of updates of several plans reading one cap at once its own entry', async () => {
      const plans = ['p1', 'p2', 'p3', 'p4', 'p5'];
      for (const planId of plans) await store.put(planId, guardrails());
      await store.putCaps([spendCap({ id: 'a', match: {}, limit: 1, window: 'day' })]);
      const each = plans.map((planId) => ({ planId, ...reports() }));
      await Promise.all(
        each.map(({ planId, onCommit }, i) =>
          store.update(planId, taking(100_000, `${planId}\nr1`, i), { capsAt: T0, onCommit }),
        ),
      );
      const logs = await Promise.all(plans.map((planId) => store.readAuditLog(planId)));
      expect(each.map((r) => r.calls)).toEqual(logs.map((log) => [log]));
    });
  });
}
