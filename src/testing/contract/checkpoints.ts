// The GuardrailStore contract: checkpoints.
import { AuditTrail } from '../../audit/AuditTrail.js';
import { verifyAuditLog } from '../../audit/verify.js';
import { generateKeyPairSync } from 'node:crypto';
import type { GuardrailStore } from '../../store/GuardrailStore.js';
import { T0, guardrails, entry, spend } from './fixtures.js';
import type { ContractContext } from './context.js';

export function checkpoints(c: ContractContext): void {
  const { describe, it, expect, beforeEach, afterEach } = c.test;
  const { options } = c;
  describe('checkpoints', () => {
    let store!: GuardrailStore;
    c.eachStore((s) => (store = s));

    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    let cps: GuardrailStore;

    beforeEach(async () => {
      cps = await options.newStore({ checkpoints: { every: 3, privateKey } });
      await cps.put('p', guardrails({ toolBudget: 100 }));
    });

    afterEach(async () => {
      await cps.close();
    });

    async function record(n: number, planId = 'p') {
      for (let i = 0; i < n; i++) await cps.update(planId, spend(1, i));
    }

    it('writes none without the option', async () => {
      await store.put('p', guardrails({ toolBudget: 100 }));
      for (let i = 0; i < 4; i++) await store.update('p', spend(1, i));
      expect(await store.readCheckpoints('p')).toEqual([]);
    });

    it('writes a checkpoint after every n-th entry, covering it', async () => {
      await record(7);
      const log = await cps.readAuditLog('p');
      expect((await cps.readCheckpoints('p')).map((c) => [c.size, c.head])).toEqual([
        [3, log[2]?.hash],
        [6, log[5]?.hash],
      ]);
    });

    it('reads checkpoints back oldest first past nine of them', async () => {
      await record(33);
      expect((await cps.readCheckpoints('p')).map((c) => c.size)).toEqual([
        3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33,
      ]);
    });

    it('dates a checkpoint at the time of the entry it covers', async () => {
      await record(3);
      expect((await cps.readCheckpoints('p'))[0]?.ts).toBe(new Date(T0 + 2).toISOString());
    });

    it('signs checkpoints so that the log verifies with the public key', async () => {
      await record(6);
      const report = await verifyAuditLog(cps, 'p', { publicKey });
      expect([report.ok, (await cps.readCheckpoints('p')).every((c) => c.signature !== undefined)]).toEqual([
        true,
        true,
      ]);
    });

    it('writes the checkpoint that falls inside a change with several entries for the entry it covers', async () => {
      await record(1);
      await cps.update('p', () => ({
        result: null,
        audit: entry('step_allowed', 10),
        entries: [entry('step_allowed', 11), entry('step_allowed', 12), entry('step_allowed', 13)],
      }));
      const log = await cps.readAuditLog('p');
      const report = await verifyAuditLog(cps, 'p', { publicKey });
      expect([(await cps.readCheckpoints('p')).map((c) => [c.size, c.head, c.ts]), report.ok]).toEqual([
        [[3, log[2]?.hash, new Date(T0 + 11).toISOString()]],
        true,
      ]);
    });

    it('writes checkpoints for the entries of a trail that is put', async () => {
      const trail = new AuditTrail({ maxEntries: 10 });
      for (let i = 0; i < 4; i++) trail.add(entry('step_allowed', i));
      await cps.put('q', guardrails(), trail);
      expect((await cps.readCheckpoints('q')).map((c) => c.size)).toEqual([3]);
    });

    it('forgets the checkpoints of a deleted plan', async () => {
      await record(3);
      await cps.delete('p');
      expect(await cps.readCheckpoints('p')).toEqual([]);
    });

    it('prunes the log through a checkpoint, keeping a log that verifies from it', async () => {
      await record(7);
      const removed = await cps.pruneAuditLog('p', 3);
      const report = await verifyAuditLog(cps, 'p', { publicKey });
      expect([
        removed,
        (await cps.readAuditLog('p')).map((e) => e.seq),
        report.ok,
        report.prunedThrough,
      ]).toEqual([3, [4, 5, 6, 7], true, 3]);
    });

    it('keeps appending to the chain after a prune', async () => {
      await record(4);
      await cps.pruneAuditLog('p', 3);
      await record(3);
      const report = await verifyAuditLog(cps, 'p', { publicKey });
      expect([report.ok, (await cps.readAuditLog('p')).map((e) => e.seq)]).toEqual([true, [4, 5, 6, 7]]);
    });

    it('refuses to prune through a seq no checkpoint covers, removing nothing', async () => {
      await record(7);
      await expect(cps.pruneAuditLog('p', 4)).rejects.toMatchObject({ field: 'throughSeq' });
      expect(await cps.readAuditLog('p')).toHaveLength(7);
    });

    it('refuses to prune through 0', async () => {
      await expect(cps.pruneAuditLog('p', 0)).rejects.toMatchObject({ field: 'throughSeq' });
    });

    it('refuses checkpoints every 0 entries, naming the field', async () => {
      await expect(
        Promise.resolve().then(() => options.newStore({ checkpoints: { every: 0 } })),
      ).rejects.toMatchObject({
        field: 'checkpoints.every',
      });
    });
  });
}
