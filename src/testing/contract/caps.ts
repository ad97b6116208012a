// The GuardrailStore contract: spend caps, their windows, and what an update with `capsAt` reads and writes.
import { spendCap, type SpendCap } from '../../guardrails/caps.js';
import { holdIn, spendIn, type CapWindowState } from '../../guardrails/capLedger.js';
import type { CapView, GuardrailStore, PlanChangeFn } from '../../store/GuardrailStore.js';
import type { ContractContext } from './context.js';
import { approval, entry, guardrails, T0 } from './fixtures.js';

/** A cap of every plan (an empty match), `limit` units a day in UTC. */
function everyPlan(id: string, limit: number, window: SpendCap['window'] = 'day'): SpendCap {
  return spendCap({ id, match: {}, limit, window });
}

/** A change that takes `micros` from every cap that applies, held under `key`, or refuses taking any. */
function taking(micros: number, key: string, i = 0): PlanChangeFn<boolean> {
  return (_g, _a, caps) => {
    const view = caps as CapView;
    if (
      view.applying.some((a) => a.state.spentMicros + a.state.reservedMicros + micros > a.cap.limitMicros)
    ) {
      return { result: false, audit: entry('budget_blocked', i) };
    }
    const writes = view.applying.map((a) => ({
      ref: a.ref,
      state: holdIn(a.state, key, micros, T0 + 60_000),
    }));
    return { result: true, audit: entry('budget_allowed', i), caps: writes };
  };
}

export function caps(c: ContractContext): void {
  const { describe, it, expect } = c.test;
  describe('spend caps', () => {
    let store!: GuardrailStore;
    c.eachStore((s) => (store = s));
    const viewOf = async (planId: string, at = T0): Promise<CapView | null> => {
      let seen: CapView | null = null;
      await store.update(planId, (_g, _a, view) => ((seen = view), { result: null }), { capsAt: at });
      return seen;
    };

    it('lists the caps it installed, in id order', async () => {
      await store.putCaps([everyPlan('b', 2), everyPlan('a', 1)]);
      expect((await store.listCaps()).map((c) => [c.id, c.limitMicros])).toEqual([
        ['a', 1_000_000],
        ['b', 2_000_000],
      ]);
    });

    it('replaces a cap installed again under its id', async () => {
      await store.putCaps([everyPlan('a', 1)]);
      await store.putCaps([everyPlan('a', 3, 'month')]);
      expect((await store.listCaps()).map((c) => [c.id, c.limit, c.window])).toEqual([['a', 3, 'month']]);
    });

    it('gives a change no view of the caps without capsAt', async () => {
      await store.put('p', guardrails());
      await store.putCaps([everyPlan('a', 1)]);
      let seen: unknown = 'not called';
      await store.update('p', (_g, _a, view) => ((seen = view), { result: null }));
      expect(seen).toBeNull();
    });

    it('shows a change each cap that applies, with an empty window never written', async () => {
      await store.put('p', guardrails());
      await store.putCaps([everyPlan('a', 1)]);
      const view = (await viewOf('p')) as CapView;
      expect(view.applying.map((a) => [a.cap.id, a.ref.scope, a.ref.window, a.state.spentMicros])).toEqual([
        ['a', '{}', 'day:2026-11-30', 0],
      ]);
    });

    it('keeps the windows a change writes, with its entry', async () => {
      await store.put('p', guardrails());
      await store.putCaps([everyPlan('a', 1)]);
      expect(await store.update('p', taking(400_000, 'p\nr1'), { capsAt: T0 })).toBe(true);
      const view = (await viewOf('p')) as CapView;
      expect(view.applying[0]?.state.reservedMicros).toBe(400_000);
      const listed = await store.listCapWindows();
      expect(listed.map((w) => [w.cap, w.window, w.state.reservedMicros])).toEqual([
        ['a', 'day:2026-11-30', 400_000],
      ]);
      expect(await store.readAuditLog('p')).toHaveLength(1);
    });

    it('keeps what was spent in a window when its cap is installed again with a new limit', async () => {
      await store.put('p', guardrails());
      await store.putCaps([everyPlan('a', 1)]);
      await store.update('p', taking(400_000, 'p\nr1'), { capsAt: T0 });
      await store.putCaps([everyPlan('a', 2)]);
      const view = (await viewOf('p')) as CapView;
      expect([view.applying[0]?.cap.limitMicros, view.applying[0]?.state.reservedMicros]).toEqual([
        2_000_000, 400_000,
      ]);
    });

    it('lets holds go in a view once they lapse', async () => {
      await store.put('p', guardrails());
      await store.putCaps([everyPlan('a', 1)]);
      await store.update('p', taking(400_000, 'p\nr1'), { capsAt: T0 });
      const view = (await viewOf('p', T0 + 60_000)) as CapView;
      expect(view.applying[0]?.state.reservedMicros).toBe(0);
    });

    it('opens a new window when the day changes, leaving the old one as it was', async () => {
      await store.put('p', guardrails());
      await store.putCaps([everyPlan('a', 1)]);
      await store.update(
        'p',
        (_g, _a, v) => ({
          result: null,
          audit: entry('budget_allowed'),
          caps: (v as CapView).applying.map((a) => ({ ref: a.ref, state: spendIn(a.state, 700_000) })),
        }),
        { capsAt: T0 },
      );
      const next = (await viewOf('p', T0 + 24 * 3_600_000)) as CapView;
      expect([next.applying[0]?.ref.window, next.applying[0]?.state.spentMicros]).toEqual([
        'day:2026-12-01',
        0,
      ]);
      // A store may list the new window, empty, once an update has read it.
      const old = (await store.listCapWindows({ capId: 'a' })).find((w) => w.window === 'day:2026-11-30');
      expect(old?.state.spentMicros).toBe(700_000);
    });

    it('refuses a change that writes a window its view does not hold, changing nothing', async () => {
      await store.put('p', guardrails());
      await store.putCaps([everyPlan('a', 1)]);
      const stray: CapWindowState = {
        startMs: T0,
        endMs: null,
        spentMicros: 5,
        reservedMicros: 0,
        holds: new Map(),
        alertedPpm: 0,
      };
      await expect(
        store.update(
          'p',
          () => ({
            result: null,
            audit: entry('budget_allowed'),
            caps: [{ ref: { cap: 'zz', scope: '{}', window: 'lifetime' }, state: stray }],
          }),
          { capsAt: T0 },
        ),
      ).rejects.toMatchObject({ code: 'STORE_CONTRACT' });
      expect(await store.readAuditLog('p')).toHaveLength(0);
      // A store may keep the windows the update read, empty.
      const windows = await store.listCapWindows();
      expect(windows.filter((w) => w.state.spentMicros + w.state.reservedMicros > 0)).toHaveLength(0);
    });

    it('keeps the approval a change reading the caps adds, with its entry', async () => {
      await store.put('p', guardrails());
      await store.putCaps([everyPlan('a', 1)]);
      const added = approval('a1', 'p');
      await store.update('p', () => ({ result: null, audit: entry('budget_allowed'), newApproval: added }), {
        capsAt: T0,
      });
      expect(await store.getApproval('a1')).toStrictEqual(added);
      expect(await store.readAuditLog('p')).toHaveLength(1);
    });

    it('refuses a change reading the caps whose new approval id is taken, keeping none of it', async () => {
      await store.put('p', guardrails());
      await store.putCaps([everyPlan('a', 1)]);
      await store.update('p', () => ({ result: null, newApproval: approval('a1', 'p') }));
      const change: PlanChangeFn<null> = (_g, _a, v) => ({
        result: null,
        audit: entry('budget_allowed'),
        newApproval: approval('a1', 'p', 1),
        caps: (v as CapView).applying.map((a) => ({ ref: a.ref, state: spendIn(a.state, 1) })),
      });
      await expect(store.update('p', change, { capsAt: T0 })).rejects.toMatchObject({
        code: 'APPROVAL_ID_TAKEN',
      });
      expect(await store.readAuditLog('p')).toHaveLength(0);
      const windows = await store.listCapWindows();
      expect(windows.filter((w) => w.state.spentMicros > 0)).toHaveLength(0);
    });

    it('removes a cap with its windows', async () => {
      await store.put('p', guardrails());
      await store.putCaps([everyPlan('a', 1), everyPlan('b', 1)]);
      await store.update('p', taking(1, 'p\nr1'), { capsAt: T0 });
      expect(await store.deleteCap('a')).toBe(true);
      expect(await store.deleteCap('a')).toBe(false);
      expect((await store.listCaps()).map((c) => c.id)).toEqual(['b']);
      expect((await store.listCapWindows()).map((w) => w.cap)).toEqual(['b']);
    });

    it('refuses a cap that does not validate, installing none of the list', async () => {
      const bad = { ...everyPlan('b', 1), timezone: 'Mars/Olympus' } as SpendCap;
      await expect(store.putCaps([everyPlan('a', 1), bad])).rejects.toMatchObject({
        field: 'caps[1].timezone',
      });
      expect(await store.listCaps()).toHaveLength(0);
    });

    it('takes from one cap exactly, whatever plans take from it at once', async () => {
      await store.putCaps([everyPlan('a', 1)]);
      const plans = Array.from({ length: 12 }, (_, i) => `p${i}`);
      for (const p of plans) await store.put(p, guardrails());
      const taken = await Promise.all(
        plans.flatMap((p) =>
          [0, 1, 2].map((r) => store.update(p, taking(50_000, `${p}\nr${r}`, r), { capsAt: T0 })),
        ),
      );
      // 36 tries of 0.05 against a limit of 1: exactly 20 fit.
      expect(taken.filter(Boolean)).toHaveLength(20);
      const [w] = await store.listCapWindows();
      expect(w?.state.reservedMicros).toBe(1_000_000);
      expect(w?.state.holds.size).toBe(20);
    });
  });
}
