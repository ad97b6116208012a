// The GuardrailStore contract: runtime mutations.
import { AutonomyGuardrails } from '../../guardrails/AutonomyGuardrails.js';
import type { GuardrailStore } from '../../store/GuardrailStore.js';
import { T0, START, LATER, guardrails, entry, reserving, storedIn } from './fixtures.js';
import type { ContractContext } from './context.js';

export function mutations(c: ContractContext): void {
  const { describe, it, expect } = c.test;
  describe('runtime mutations', () => {
    let store!: GuardrailStore;
    c.eachStore((s) => (store = s));
    const stored = (planId: string) => storedIn(store, planId);

    it('opens a reservation and adds it to the amount reserved', async () => {
      await store.put('p', guardrails());
      await store.update('p', reserving('r1', 250_000));
      const g = (await stored('p')).guardrails;
      expect(g.reservationMicros('r1')).toBe(250_000);
      expect(g.budgetReservedMicros).toBe(250_000);
    });

    it('keeps the total of several open reservations', async () => {
      await store.put('p', guardrails());
      await store.update('p', reserving('r1', 250_000));
      await store.update('p', reserving('r2', 500_000));
      expect((await stored('p')).guardrails.budgetReservedMicros).toBe(750_000);
    });

    it('closes a released reservation and takes it off the amount reserved', async () => {
      await store.put('p', guardrails());
      await store.update('p', reserving('r1', 250_000));
      await store.update('p', reserving('r2', 500_000));
      await store.update('p', () => ({ result: null, mutation: { release: 'r1' } }));
      const g = (await stored('p')).guardrails;
      expect(g.reservationMicros('r1')).toBeUndefined();
      expect(g.budgetReservedMicros).toBe(500_000);
    });

    it('releases a reservation and spends in one mutation', async () => {
      await store.put('p', guardrails());
      await store.update('p', reserving('r1', 250_000));
      await store.update('p', () => ({ result: null, mutation: { release: 'r1', spendMicros: 300_000 } }));
      const g = (await stored('p')).guardrails;
      expect([g.budgetReservedMicros, g.budgetSpentMicros]).toEqual([0, 300_000]);
    });

    it('releases before it reserves, so one mutation can reopen the same id', async () => {
      await store.put('p', guardrails());
      await store.update('p', reserving('r1', 250_000));
      await store.update('p', () => ({
        result: null,
        mutation: { release: 'r1', reserve: { id: 'r1', micros: 100_000 } },
      }));
      const g = (await stored('p')).guardrails;
      expect([g.reservationMicros('r1'), g.budgetReservedMicros]).toEqual([100_000, 100_000]);
    });

    it("keeps a reservation's expiry", async () => {
      await store.put('p', guardrails());
      await store.update('p', reserving('r1', 250_000, 1_000));
      expect((await stored('p')).guardrails.reservationExpiresAt('r1')).toBe(1_000);
    });

    it('gives back the reservations lapsed at expireBefore and keeps the others', async () => {
      await store.put('p', guardrails());
      await store.update('p', reserving('r1', 250_000, 1_000));
      await store.update('p', reserving('r2', 500_000, 1_001));
      await store.update('p', () => ({ result: null, mutation: { expireBefore: 1_000 } }));
      const g = (await stored('p')).guardrails;
      expect([g.reservationMicros('r1'), g.reservationMicros('r2')]).toEqual([undefined, 500_000]);
      expect(g.budgetReservedMicros).toBe(500_000);
    });

    it('expires before it reserves, so one mutation can reopen a lapsed id', async () => {
      await store.put('p', guardrails());
      await store.update('p', reserving('r1', 250_000, 1_000));
      await store.update('p', () => ({
        result: null,
        mutation: { expireBefore: 2_000, reserve: { id: 'r1', micros: 100_000, expiresAt: 3_000 } },
      }));
      const g = (await stored('p')).guardrails;
      expect([g.reservationMicros('r1'), g.reservationExpiresAt('r1')]).toEqual([100_000, 3_000]);
      expect(g.budgetReservedMicros).toBe(100_000);
    });

    it('refuses to release a reservation that is not open and records nothing', async () => {
      await store.put('p', guardrails());
      await expect(
        store.update('p', () => ({
          result: null,
          audit: entry('budget_allowed', 1),
          mutation: { release: 'r1', spendMicros: 100_000 },
        })),
      ).rejects.toBeInstanceOf(Error);
      const record = await stored('p');
      expect(record.guardrails.budgetSpentMicros).toBe(0);
      expect(record.audit.size).toBe(0);
    });

    it('refuses to reserve an id that is already open and records nothing', async () => {
      await store.put('p', guardrails());
      await store.update('p', reserving('r1', 250_000));
      await expect(
        store.update('p', () => ({
          result: null,
          audit: entry('budget_allowed', 1),
          mutation: { reserve: { id: 'r1', micros: 100_000 } },
        })),
      ).rejects.toBeInstanceOf(Error);
      const record = await stored('p');
      expect(record.guardrails.budgetReservedMicros).toBe(250_000);
      expect(record.audit.size).toBe(0);
    });

    it('grants exactly the budget to 1,000 concurrent check-and-reserve updates', async () => {
      await store.put('p', guardrails({ toolBudget: 0.0001 }));
      const reserve = (i: number) => (g: AutonomyGuardrails | null) => {
        const allowed = g?.checkToolBudgetMicros(1).allowed ?? false;
        return allowed
          ? { result: true, mutation: { reserve: { id: `r${i}`, micros: 1 } } }
          : { result: false };
      };
      const granted = await Promise.all(
        Array.from({ length: 1000 }, (_, i) => store.update('p', reserve(i))),
      );
      expect(granted.filter(Boolean)).toHaveLength(100);
      expect((await stored('p')).guardrails.budgetReservedMicros).toBe(100);
    });

    it('starts a wait for a person at the time of a pause', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => ({ result: null, mutation: { pause: START } }));
      const g = (await stored('p')).guardrails;
      expect([g.pausedSince, g.pausedMs]).toEqual([START, 0]);
    });

    it('keeps the wait going on when paused again', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => ({ result: null, mutation: { pause: START } }));
      await store.update('p', () => ({ result: null, mutation: { pause: LATER } }));
      expect((await stored('p')).guardrails.pausedSince).toBe(START);
    });

    it('adds the wait to the time paused when unpaused', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => ({ result: null, mutation: { pause: START } }));
      await store.update('p', () => ({ result: null, mutation: { unpause: T0 + 90_000 } }));
      const g = (await stored('p')).guardrails;
      expect([g.pausedSince, g.pausedMs]).toEqual([null, 90_000]);
    });

    it('adds up the time of every wait', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => ({ result: null, mutation: { pause: START } }));
      await store.update('p', () => ({ result: null, mutation: { unpause: T0 + 1_000 } }));
      await store.update('p', () => ({ result: null, mutation: { pause: LATER } }));
      await store.update('p', () => ({ result: null, mutation: { unpause: Date.parse(LATER) + 2_500 } }));
      expect((await stored('p')).guardrails.pausedMs).toBe(3_500);
    });

    it('changes nothing when unpaused without a wait going on', async () => {
      await store.put('p', guardrails());
      await store.update('p', () => ({ result: null, mutation: { unpause: T0 + 90_000 } }));
      const g = (await stored('p')).guardrails;
      expect([g.pausedSince, g.pausedMs]).toEqual([null, 0]);
    });

    it('counts the calls of each tool', async () => {
      await store.put('p', guardrails());
      for (const tool of ['search', 'fetch', 'search']) {
        await store.update('p', () => ({ result: null, mutation: { toolCall: tool } }));
      }
      const g = (await stored('p')).guardrails;
      expect([g.toolCallCount('search'), g.toolCallCount('fetch'), g.toolCallCount('email')]).toEqual([
        2, 1, 0,
      ]);
    });

    it('stores the runtime state of guardrails that are put', async () => {
      const g = AutonomyGuardrails.fromJSON({
        ...guardrails().toJSON(),
        reservations: [{ id: 'r1', amount: 0.25 }],
        paused_ms: 1_500,
        paused_since: START,
        tool_calls: { search: 2 },
      });
      await store.put('p', g);
      expect((await stored('p')).guardrails.toJSON()).toEqual(g.toJSON());
    });
  });
}
