/**
 * One of the processes of sqlite-dispatchers.test.ts: a dispatcher on the shared database. Says it is
 * ready and, on "go", claims and delivers until nothing is queued, then reports what it delivered, in
 * order, and every claim it took of a notification while an older one of its target was undelivered.
 *
 * Arguments: <database file> <targets, comma-separated> <the time it claims at>.
 */
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';

export type DispatcherMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'done'; readonly delivered: string[]; readonly outOfOrder: string[] }
  | { readonly type: 'error'; readonly message: string };

function send(message: DispatcherMessage): Promise<void> {
  return new Promise((resolve) => {
    if (process.send === undefined) resolve();
    else process.send(message, undefined, {}, () => resolve());
  });
}

async function run(
  path: string,
  targets: string[],
  now: string,
): Promise<Extract<DispatcherMessage, { type: 'done' }>> {
  const store = new SqliteStore({ path, busyTimeoutMs: 60_000 });
  try {
    await store.migrate();
    await new Promise<void>((resolve) => {
      process.once('message', () => resolve());
      void send({ type: 'ready' });
    });
    const delivered: string[] = [];
    const outOfOrder: string[] = [];
    // A lease of an hour at a fixed time: nothing is claimed again, so a notification claimed twice was
    // handed to two dispatchers.
    const claim = { targets, now, leaseMs: 3_600_000, limit: 3 };
    while ((await store.listNotifications({ status: 'queued', limit: 1 })).length > 0) {
      for (const n of await store.claimNotifications(claim)) {
        const earlier = (await store.listNotifications({ status: 'queued', limit: 10_000 })).filter(
          (q) => q.target === n.target && q.seq < n.seq,
        );
        if (earlier.length > 0) outOfOrder.push(n.id);
        await store.finishNotification(n.id, { kind: 'delivered', at: now });
        delivered.push(n.id);
      }
    }
    return { type: 'done', delivered, outOfOrder };
  } finally {
    await store.close();
  }
}

const [path, targets, now] = process.argv.slice(2);
run(path ?? '', (targets ?? '').split(','), now ?? '').then(
  async (done) => {
    await send(done);
    process.disconnect?.();
  },
  async (error: unknown) => {
    await send({
      type: 'error',
      message: error instanceof Error ? (error.stack ?? error.message) : String(error),
    });
    process.disconnect?.();
  },
);
