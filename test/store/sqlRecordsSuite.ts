// What both SQL stores must do with the tables of people, approvals' reviews and notifications, beyond
// the store contract: stores sharing the tables, and rows no writer could have written.
import { describe, expect, it } from 'vitest';
import { AutonomyGuardrails, type NotificationInput } from '../../src/index.js';
import type { SqlStoreHarness } from './sqlSuite.js';

const START = '2026-11-30T10:00:00.000Z';

function item(id: string, target: string): NotificationInput {
  return { id, target, event: 'approval.requested', payload: { id }, createdAt: START };
}

const TOKEN = {
  id: 'tok_1',
  principalId: 'ann',
  hash: 'a'.repeat(64),
  createdAt: START,
};

export function runSqlRecordsSuite(name: string, h: SqlStoreHarness): void {
  describe(`${name}: people and notifications in its tables`, () => {
    it('never hands two stores claiming at once the same notification', async () => {
      const store = await h.open();
      const other = await h.sharing(store);
      const targets = ['t1', 't2', 't3', 't4', 't5', 't6'];
      await store.enqueueNotifications(targets.flatMap((t) => [item(`${t}-a`, t), item(`${t}-b`, t)]));
      const claim = { targets, now: START, leaseMs: 30_000, limit: 4 };
      const claims = await Promise.all([store, other, store, other].map((s) => s.claimNotifications(claim)));
      expect(
        claims
          .flat()
          .map((n) => n.id)
          .sort(),
      ).toEqual(targets.map((t) => `${t}-a`));
    });

    it('delivers in the order two stores queued in', async () => {
      const store = await h.open();
      const other = await h.sharing(store);
      await store.enqueueNotifications([item('n1', 'hook')]);
      await other.enqueueNotifications([item('n2', 'hook')]);
      await other.finishNotification('n1', { kind: 'delivered', at: START });
      const claim = { targets: ['hook'], now: START, leaseMs: 30_000, limit: 4 };
      expect((await store.claimNotifications(claim)).map((n) => n.id)).toEqual(['n2']);
    });

    it('refuses, with TOKEN_HASH_TAKEN, a token whose hash another store stored', async () => {
      const store = await h.open();
      await store.putToken(TOKEN);
      const other = await h.sharing(store);
      await expect(other.putToken({ ...TOKEN, id: 'tok_2' })).rejects.toMatchObject({
        code: 'TOKEN_HASH_TAKEN',
      });
    });

    it('rejects, with STORE_CORRUPT, a read of a notification whose payload is not a JSON object', async () => {
      const store = await h.open();
      await store.enqueueNotifications([item('n1', 'hook')]);
      await h.exec(store, `UPDATE {notifications} SET payload = '[1]'`);
      await expect(store.listNotifications()).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
    });

    it('rejects, with STORE_CORRUPT, a read of a principal whose roles are not a list', async () => {
      const store = await h.open();
      await store.putPrincipal({ id: 'ann', name: 'Ann', roles: ['release'], createdAt: START });
      await h.exec(store, `UPDATE {principals} SET roles = '"release"'`);
      await expect(store.getPrincipal('ann')).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
    });

    it('rejects, with STORE_CORRUPT, a read of an approval whose review has a rule of no shape', async () => {
      const store = await h.open();
      await store.put('p', AutonomyGuardrails.create());
      const approval = {
        id: 'a1',
        planId: 'p',
        decisionId: 'd1',
        operation: 'deploy',
        inputHash: 'a'.repeat(64),
        requestedAt: START,
        expiresAt: START,
        status: 'pending',
        requester: 'dave',
      } as const;
      await store.update('p', () => ({ result: null, newApproval: approval }));
      await h.exec(store, `UPDATE {approvals} SET review = '{"rule":{"quorum":2}}'`);
      await expect(store.getApproval('a1')).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
    });

    it('keeps NULL for the review of an approval that has none', async () => {
      const store = await h.open();
      await store.put('p', AutonomyGuardrails.create());
      const approval = {
        id: 'a1',
        planId: 'p',
        decisionId: 'd1',
        operation: 'deploy',
        inputHash: 'a'.repeat(64),
        requestedAt: START,
        expiresAt: START,
        status: 'pending',
      } as const;
      await store.update('p', () => ({ result: null, newApproval: approval }));
      await h.exec(store, `DELETE FROM {approvals} WHERE review IS NULL`);
      expect(await store.getApproval('a1')).toBeNull();
    });
  });
}
