import { describe, expect, it } from 'vitest';
import { AutonomyGuardrailService } from '../../src/index.js';
import type { Notification } from '../../src/store/notifications.js';
import { as, REQUEST, team, TTL } from '../support/team.js';

const RULES = { deploy: { approvers: ['role:release'], quorum: 2 } };
const ALL = { targets: [{ name: 'ops', events: ['approval.*'] }] };

/** The notifications queued, oldest first, as [target, event]. */
async function queued(store: { listNotifications(): Promise<Notification[]> }): Promise<string[][]> {
  return (await store.listNotifications()).reverse().map((n) => [n.target, n.event]);
}

describe('notifications of approvals', () => {
  it('keeps the targets that want approval events in a new approval', async () => {
    const notify = { targets: [...ALL.targets, { name: 'finance', events: ['budget.alert'] }] };
    const { service } = await team(RULES, { notify });
    await service.requestConfirmation('plan', REQUEST);
    expect((await service.getApproval('a1'))?.notify).toEqual(['ops']);
  });

  it('queues approval.requested, approval.voted and approval.decided as people decide', async () => {
    const { service, store } = await team(RULES, { notify: ALL });
    await service.requestConfirmation('plan', REQUEST);
    await service.approve('a1', as('ann'));
    await service.approve('a1', as('bob'));
    expect(await queued(store)).toEqual([
      ['ops', 'approval.requested'],
      ['ops', 'approval.voted'],
      ['ops', 'approval.decided'],
    ]);
  });

  it('queues approval.requested for an approval a tool call opens', async () => {
    const { service, store } = await team(RULES, { notify: ALL });
    const confirm = { ...REQUEST, toolName: 'deploy' };
    await service.beginToolCall('plan', { confirm, estimate: 0, reservationId: 'r1' });
    expect(await queued(store)).toEqual([['ops', 'approval.requested']]);
  });

  it('queues approval.expired when leash denies an approval nobody decided', async () => {
    const { service, store, clock } = await team(RULES, { notify: ALL });
    await service.requestConfirmation('plan', REQUEST);
    clock.advance(TTL + 1);
    await service.expireApprovals();
    expect((await queued(store)).at(-1)).toEqual(['ops', 'approval.expired']);
  });

  it('queues only the events a target asks for', async () => {
    const notify = { targets: [{ name: 'ops', events: ['approval.decided'] }] };
    const { service, store } = await team(RULES, { notify });
    await service.requestConfirmation('plan', REQUEST);
    await service.deny('a1', as('ann', 'no'));
    expect(await queued(store)).toEqual([['ops', 'approval.decided']]);
  });

  it('tells the approval’s targets of a decision made by a service that does not know them', async () => {
    const first = await team(RULES, { notify: ALL });
    await first.service.requestConfirmation('plan', REQUEST);
    const other = new AutonomyGuardrailService({ store: first.store, clock: first.clock });
    await other.deny('a1', as('ann', 'no'));
    expect((await queued(first.store)).at(-1)).toEqual(['ops', 'approval.decided']);
  });

  it('sends Standard Webhooks style payloads with the approval in snake_case', async () => {
    const { service, store } = await team(RULES, { notify: ALL });
    await service.requestConfirmation('plan', REQUEST);
    const [n] = await store.listNotifications();
    expect(n?.payload).toMatchObject({
      type: 'approval.requested',
      timestamp: '2026-11-30T10:00:00.000Z',
      data: {
        approval: { id: 'a1', plan_id: 'plan', status: 'pending', requester: 'carol', rule: { quorum: 2 } },
      },
    });
  });

  it('gives every notification its own id', async () => {
    const notify = { targets: [...ALL.targets, { name: 'audit', events: ['*'] }] };
    const { service, store } = await team(RULES, { notify });
    await service.requestConfirmation('plan', REQUEST);
    const ids = (await store.listNotifications()).map((n) => n.id);
    expect(new Set(ids).size).toBe(2);
  });

  it('decides all the same when queuing fails', async () => {
    const { service, store } = await team(RULES, { notify: ALL });
    store.enqueueNotifications = () => Promise.reject(new Error('outbox down'));
    await service.requestConfirmation('plan', REQUEST);
    expect((await service.deny('a1', as('ann', 'no'))).status).toBe('denied');
  });

  it('refuses a target asking for an event that does not exist, naming the field', async () => {
    const notify = { targets: [{ name: 'ops', events: ['approval.decide'] }] };
    await expect(team(RULES, { notify })).rejects.toMatchObject({ field: 'notify.targets[0].events[0]' });
  });
});

describe('notifications of spend cap alerts', () => {
  it('queues budget.alert for the targets that want it', async () => {
    const notify = { targets: [{ name: 'finance', events: ['budget.alert'] }, ...ALL.targets] };
    const { service, store } = await team(null, { notify });
    await service.installSpendCaps([
      { id: 'team', match: { user: 'carol' }, limit: 10, window: 'month', alertAt: [0.5] },
    ]);
    await service.configureGuardrails('plan', { toolBudget: 100, labels: { user: 'carol' } });
    await service.checkToolBudget('plan', 6);
    const [n] = await store.listNotifications();
    expect([n?.target, n?.event, (n?.payload['data'] as { alert: { cap: string } }).alert.cap]).toEqual([
      'finance',
      'budget.alert',
      'team',
    ]);
  });
});
