// The GuardrailStore contract: the notification outbox, delivered in order per target by dispatchers
// that claim what is due, each claim atomic.
import type { GuardrailStore, NotificationInput } from '../../store/GuardrailStore.js';
import type { ContractContext } from './context.js';
import { START, T0 } from './fixtures.js';

/** `seconds` after START. */
const at = (seconds: number): string => new Date(T0 + seconds * 1000).toISOString();

/** A notification of approval `id` to `target`. */
function item(id: string, target = 'hook'): NotificationInput {
  return { id, target, event: 'approval.requested', payload: { approval: id }, createdAt: START };
}

export function notifications(c: ContractContext): void {
  const { describe, it, expect } = c.test;
  describe('notifications', () => {
    let store!: GuardrailStore;
    c.eachStore((s) => (store = s));
    /** The ids a claim at `seconds` of `targets`, leases of 30 s, takes. */
    const claimed = async (seconds = 0, targets = ['hook', 'slack'], limit = 10) =>
      (await store.claimNotifications({ targets, now: at(seconds), leaseMs: 30_000, limit })).map(
        (n) => n.id,
      );
    const listed = async (filter?: { status?: 'queued' | 'delivered' | 'failed'; limit?: number }) =>
      (await store.listNotifications(filter)).map((n) => n.id);

    it('lists what it queued newest first, due at once, with no attempt yet', async () => {
      await store.enqueueNotifications([item('n1'), item('n2', 'slack')]);
      const [second, first] = await store.listNotifications();
      expect(first).toStrictEqual({
        ...item('n1'),
        seq: first?.seq,
        status: 'queued',
        attempts: 0,
        nextAttemptAt: START,
      });
      expect([second?.id, (second?.seq ?? 0) > (first?.seq ?? 0)]).toEqual(['n2', true]);
    });

    it('skips a notification whose id is already queued', async () => {
      await store.enqueueNotifications([item('n1')]);
      await store.enqueueNotifications([{ ...item('n1'), payload: { again: true } }, item('n2')]);
      const all = await store.listNotifications();
      expect(all.map((n) => [n.id, n.payload])).toEqual([
        ['n2', { approval: 'n2' }],
        ['n1', { approval: 'n1' }],
      ]);
    });

    it('queues none of a list when one of them is refused, naming its field', async () => {
      const bad = { ...item('n2'), payload: 'not an object' } as unknown as NotificationInput;
      await expect(store.enqueueNotifications([item('n1'), bad])).rejects.toMatchObject({
        field: 'notifications[1].payload',
      });
      expect(await listed()).toEqual([]);
    });

    it('keeps a payload as queued when the caller changes it afterwards', async () => {
      const payload = { approval: 'n1', votes: [1] };
      await store.enqueueNotifications([{ ...item('n1'), payload }]);
      payload.votes.push(2);
      expect((await store.listNotifications())[0]?.payload).toEqual({ approval: 'n1', votes: [1] });
    });

    it("claims each target's oldest queued notification, oldest first", async () => {
      await store.enqueueNotifications([item('n1', 'slack'), item('n2'), item('n3', 'slack'), item('n4')]);
      expect(await claimed()).toEqual(['n1', 'n2']);
    });

    it('claims only for the targets it is asked for, and at most limit', async () => {
      await store.enqueueNotifications([item('n1', 'slack'), item('n2'), item('n3', 'mail')]);
      expect([await claimed(0, ['mail', 'hook'], 1), await claimed(0, [])]).toEqual([['n2'], []]);
    });

    it('takes a lease on what it claims and counts the attempt', async () => {
      await store.enqueueNotifications([item('n1')]);
      await claimed(5);
      const [n1] = await store.listNotifications();
      expect([n1?.leaseUntil, n1?.attempts, n1?.status]).toEqual([at(35), 1, 'queued']);
    });

    it('claims nothing a lease holds until the lease ends, then claims it again', async () => {
      await store.enqueueNotifications([item('n1'), item('n2')]);
      await claimed(0);
      expect([await claimed(29), await claimed(30)]).toEqual([[], ['n1']]);
      expect((await store.listNotifications({ status: 'queued', limit: 2 }))[1]?.attempts).toBe(2);
    });

    it('never hands two claims made at once the same notification', async () => {
      const targets = ['t1', 't2', 't3', 't4', 't5', 't6'];
      await store.enqueueNotifications(targets.flatMap((t) => [item(`${t}-a`, t), item(`${t}-b`, t)]));
      const claims = await Promise.all([1, 2, 3, 4].map(() => claimed(0, targets, 4)));
      const ids = claims.flat().sort();
      expect(ids).toEqual(targets.map((t) => `${t}-a`));
    });

    it("delivers a target's next notification only once its oldest is delivered", async () => {
      await store.enqueueNotifications([item('n1'), item('n2')]);
      await claimed(0);
      const before = await claimed(40);
      await store.finishNotification('n1', { kind: 'delivered', at: at(41) });
      expect([before, await claimed(42)]).toEqual([['n1'], ['n2']]);
    });

    it('records a delivery and lets go of its lease', async () => {
      await store.enqueueNotifications([item('n1')]);
      await claimed(0);
      await store.finishNotification('n1', { kind: 'delivered', at: at(1) });
      const [n1] = await store.listNotifications({ status: 'delivered' });
      expect([n1?.status, n1?.deliveredAt, n1?.leaseUntil]).toEqual(['delivered', at(1), undefined]);
    });

    it("holds a target's later notifications back while its oldest waits to be tried again", async () => {
      await store.enqueueNotifications([item('n1'), item('n2'), item('n3', 'slack')]);
      await claimed(0, ['hook']);
      const retry = { kind: 'retry', at: at(1), error: 'HTTP 503', nextAttemptAt: at(60) } as const;
      await store.finishNotification('n1', retry);
      expect([await claimed(2), await claimed(60, ['hook'])]).toEqual([['n3'], ['n1']]);
      const n1 = (await store.listNotifications()).find((n) => n.id === 'n1');
      expect([n1?.status, n1?.attempts, n1?.lastError]).toEqual(['queued', 2, 'HTTP 503']);
    });

    it("records a failure for good, and moves on to the target's next", async () => {
      await store.enqueueNotifications([item('n1'), item('n2')]);
      await claimed(0);
      await store.finishNotification('n1', { kind: 'failed', at: at(1), error: 'HTTP 410' });
      const [n1] = await store.listNotifications({ status: 'failed' });
      expect([n1?.id, n1?.lastError, n1?.leaseUntil, await claimed(2)]).toEqual([
        'n1',
        'HTTP 410',
        undefined,
        ['n2'],
      ]);
    });

    it('keeps a delivered notification delivered whatever is reported of it later', async () => {
      await store.enqueueNotifications([item('n1')]);
      await store.finishNotification('n1', { kind: 'delivered', at: at(1) });
      await store.finishNotification('n1', { kind: 'failed', at: at(2), error: 'late' });
      expect(await listed({ status: 'delivered' })).toEqual(['n1']);
    });

    it('refuses, with NOTIFICATION_NOT_FOUND, an outcome of a notification never queued', async () => {
      await expect(store.finishNotification('n9', { kind: 'delivered', at: at(1) })).rejects.toMatchObject({
        code: 'NOTIFICATION_NOT_FOUND',
      });
    });

    it('lists only those in the status asked for, newest first, at most limit', async () => {
      await store.enqueueNotifications([item('n1'), item('n2', 'slack'), item('n3', 'mail')]);
      await store.finishNotification('n2', { kind: 'delivered', at: at(1) });
      expect([await listed({ status: 'queued' }), await listed({ limit: 2 })]).toEqual([
        ['n3', 'n1'],
        ['n3', 'n2'],
      ]);
    });

    it('refuses a claim whose lease is not a positive number of milliseconds, naming the field', async () => {
      const claim = store.claimNotifications({ targets: ['hook'], now: at(0), leaseMs: 0, limit: 1 });
      await expect(claim).rejects.toMatchObject({ field: 'claim.leaseMs' });
    });
  });
}
