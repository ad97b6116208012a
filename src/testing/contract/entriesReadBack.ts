// The GuardrailStore contract: entries read back.
import { AuditEntry } from '../../audit/AuditEntry.js';
import { verifyAuditLog } from '../../audit/verify.js';
import type { GuardrailStore } from '../../store/GuardrailStore.js';
import { T0, guardrails, entry, storedIn } from './fixtures.js';
import type { ContractContext } from './context.js';

export function entriesReadBack(c: ContractContext): void {
  const { describe, it, expect } = c.test;
  const { options } = c;
  describe('entries read back', () => {
    let store!: GuardrailStore;
    c.eachStore((s) => (store = s));
    const stored = (planId: string) => storedIn(store, planId);

    // Larger than AuditEntry.create allows, as metadata read with a higher maxDetailsBytes makes one.
    const large = AuditEntry.trusted('step_allowed', T0, Object.freeze({ note: 'x'.repeat(5000) }));

    async function recordLarge(): Promise<void> {
      await store.put('p', guardrails());
      await store.update('p', () => ({ result: null, audit: large }));
    }

    it('reads back an entry with details over 4 KiB as it was written', async () => {
      await recordLarge();
      const fromTrail = (await stored('p')).audit.entries[0]?.toJSON();
      const fromLog = (await store.readAuditLog('p'))[0]?.entry;
      expect([fromTrail, fromLog]).toEqual([large.toJSON(), large.toJSON()]);
    });

    it('keeps a log that verifies with an entry with details over 4 KiB', async () => {
      await recordLarge();
      expect((await verifyAuditLog(store, 'p')).ok).toBe(true);
    });

    const setEntryColumn = options.setEntryColumn;
    if (setEntryColumn !== undefined) {
      /** A plan of three entries whose second was overwritten with `text` in `column`. */
      async function damaged(column: 'event_type' | 'details', text: string): Promise<void> {
        await store.put('p', guardrails());
        for (let i = 1; i <= 3; i++) {
          await store.update('p', () => ({ result: null, audit: entry('step_allowed', i) }));
        }
        await setEntryColumn?.(store, 'p', 2, column, text);
      }

      it('refuses, with STORE_CORRUPT, a plan whose stored details are not JSON', async () => {
        await damaged('details', '{"i": 2');
        await expect(store.get('p')).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
      });

      it('refuses, with STORE_CORRUPT, a plan whose stored entry has an unknown event type', async () => {
        await damaged('event_type', 'step_maybe');
        await expect(store.get('p')).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
      });

      it('refuses, with STORE_CORRUPT, to read a log holding details that are not a JSON object', async () => {
        await damaged('details', '[2]');
        await expect(store.readAuditLog('p')).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
      });

      it('names the plan and the seq of an entry it cannot read back', async () => {
        await damaged('details', '{"i": 2');
        await expect(store.readAuditLog('p')).rejects.toThrow(/audit entry 2 of plan "p"/);
      });

      it('hands a verifier a row whose details are not JSON as a MALFORMED_ENTRY at its seq', async () => {
        await damaged('details', '{"i": 2');
        const report = await verifyAuditLog(store, 'p');
        expect(report.findings.map((f) => [f.code, f.seq])).toEqual([['MALFORMED_ENTRY', 2]]);
      });

      it('hands a verifier a row of an unknown event type as a MALFORMED_ENTRY at its seq', async () => {
        await damaged('event_type', 'step_maybe');
        const report = await verifyAuditLog(store, 'p');
        expect(report.findings.map((f) => [f.code, f.seq])).toEqual([['MALFORMED_ENTRY', 2]]);
      });
    }
  });
}
