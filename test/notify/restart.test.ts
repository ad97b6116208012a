import { Webhook } from 'standardwebhooks';
import { expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { formatIso } from '../../src/iso.js';
import { NotificationDispatcher } from '../../src/notify/dispatcher.js';
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';
import { tempFiles } from '../support/tempFiles.js';
import { receiver, SECRET, webhookHeaders, webhookTarget } from './receiver.js';

const files = tempFiles('leash-notify-');

async function opened(path: string): Promise<SqliteStore> {
  const store = new SqliteStore({ path });
  await store.migrate();
  files.closeAfter(() => store.close());
  return store;
}

it('delivers, from a reopened SQLite file, a notification queued and retried before the store was closed', async () => {
  const path = files.newFile();
  const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);
  const hook = await receiver((_, i) => (i === 0 ? 500 : 200));
  const targets = [webhookTarget('ops', hook.url)];
  const before = await opened(path);
  await before.enqueueNotifications([
    {
      id: 'n1',
      target: 'ops',
      event: 'approval.requested',
      payload: { type: 'approval.requested', timestamp: formatIso(clock.now()), data: {} },
      createdAt: formatIso(clock.now()),
    },
  ]);
  await new NotificationDispatcher({ store: before, clock, targets, random: () => 0 }).runOnce();
  await before.close();

  clock.advance(1_000);
  const after = await opened(path);
  const reports = await new NotificationDispatcher({ store: after, clock, targets }).runOnce();

  const last = hook.received.at(-1);
  expect([
    reports.map((r) => [r.id, r.attempt, r.outcome.kind]),
    new Webhook(SECRET).verify(last?.body ?? '', webhookHeaders(last!)),
  ]).toEqual([
    [['n1', 2, 'delivered']],
    { type: 'approval.requested', timestamp: formatIso(clock.now() - 1_000), data: {} },
  ]);
});
