import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { formatIso } from '../../src/iso.js';
import { NotificationDispatcher, type NotificationDispatcherOptions } from '../../src/notify/dispatcher.js';
import type { DeliveryTarget } from '../../src/notify/targets.js';
import { MemoryStore } from '../../src/store/memory/MemoryStore.js';
import type { GuardrailStore } from '../../src/store/GuardrailStore.js';
import { thrown } from '../support/thrown.js';
import { receiver, SECRET, webhookHeaders, webhookTarget, type Answer } from './receiver.js';

/** A clock at a whole second near now: the Standard Webhooks library refuses a timestamp far from now. */
const newClock = () => new ManualClock(Math.floor(Date.now() / 1000) * 1000);

async function queue(
  store: GuardrailStore,
  clock: ManualClock,
  target: string,
  ids: readonly string[],
  event = 'approval.requested',
): Promise<void> {
  await store.enqueueNotifications?.(
    ids.map((id) => ({
      id,
      target,
      event,
      payload: { type: event, timestamp: formatIso(clock.now()), data: { approval: { id: `ap-${id}` } } },
      createdAt: formatIso(clock.now()),
    })),
  );
}

function dispatcher(
  store: GuardrailStore,
  clock: ManualClock,
  targets: DeliveryTarget[],
  options: Partial<NotificationDispatcherOptions> = {},
): NotificationDispatcher {
  return new NotificationDispatcher({ store, clock, targets, random: () => 0, ...options });
}

/** Answers `statuses` in turn, then 200. */
const inTurn =
  (...statuses: Answer[]) =>
  (_: unknown, i: number): Answer =>
    statuses[i] ?? 200;

describe('NotificationDispatcher delivering webhooks', () => {
  it('posts each notification signed, so that the Standard Webhooks library verifies it', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    const hook = await receiver();
    await queue(store, clock, 'ops', ['n1']);

    await dispatcher(store, clock, [webhookTarget('ops', hook.url)]).runOnce();

    const [got] = hook.received;
    expect(new Webhook(SECRET).verify(got?.body ?? '', webhookHeaders(got!))).toEqual({
      type: 'approval.requested',
      timestamp: formatIso(clock.now()),
      data: { approval: { id: 'ap-n1' } },
    });
  });

  it('records a 2xx answer as delivered', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    const hook = await receiver();
    await queue(store, clock, 'ops', ['n1']);

    const reports = await dispatcher(store, clock, [webhookTarget('ops', hook.url)]).runOnce();

    expect([reports, await store.listNotifications?.()]).toEqual([
      [
        {
          id: 'n1',
          target: 'ops',
          event: 'approval.requested',
          attempt: 1,
          outcome: { kind: 'delivered', at: formatIso(clock.now()) },
        },
      ],
      [
        expect.objectContaining({
          id: 'n1',
          status: 'delivered',
          attempts: 1,
          deliveredAt: formatIso(clock.now()),
        }),
      ],
    ]);
  });

  it('gets each event to a receiver answering 500 twice then 200 exactly once, in order', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    const hook = await receiver(inTurn(500, 500));
    await queue(store, clock, 'ops', ['n1', 'n2', 'n3']);
    const d = dispatcher(store, clock, [webhookTarget('ops', hook.url)]);

    for (let pass = 0; pass < 6; pass++) {
      await d.runOnce();
      clock.advance(60_000);
    }

    const delivered = hook.received
      .slice(2)
      .map((r) => new Webhook(SECRET).verify(r.body, webhookHeaders(r)));
    expect(delivered.map((p) => (p as { data: { approval: { id: string } } }).data.approval.id)).toEqual([
      'ap-n1',
      'ap-n2',
      'ap-n3',
    ]);
  });

  it('sends a later notification of a target only once the one before it is delivered', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    const hook = await receiver(inTurn(500));
    await queue(store, clock, 'ops', ['n1', 'n2']);
    const d = dispatcher(store, clock, [webhookTarget('ops', hook.url)]);

    await d.runOnce();
    await d.runOnce(); // n1 waits for its retry: n2 is not sent before it

    expect(hook.received.map((r) => r.headers['webhook-id'])).toEqual(['n1']);
  });

  it('keeps the webhook-id of a notification on every retry, signing each attempt anew', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    const hook = await receiver(inTurn(500, 503));
    await queue(store, clock, 'ops', ['n1']);
    const d = dispatcher(store, clock, [webhookTarget('ops', hook.url)]);

    for (let pass = 0; pass < 3; pass++) {
      await d.runOnce();
      clock.advance(10_000);
    }

    expect(hook.received.map((r) => r.headers['webhook-id'])).toEqual(['n1', 'n1', 'n1']);
    expect(new Set(hook.received.map((r) => r.headers['webhook-timestamp'])).size).toBe(3);
  });

  it('waits 1 s after a first failed attempt, doubling after each next, at most maxBackoffMs', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    const hook = await receiver(() => 500);
    await queue(store, clock, 'ops', ['n1']);
    const d = dispatcher(store, clock, [webhookTarget('ops', hook.url)], {
      maxAttempts: 10,
      maxBackoffMs: 5_000,
    });

    const waits: number[] = [];
    for (let pass = 0; pass < 5; pass++) {
      const [report] = await d.runOnce();
      if (report?.outcome.kind !== 'retry') throw new Error('expected a retry');
      waits.push(Date.parse(report.outcome.nextAttemptAt) - clock.now());
      clock.advance(waits.at(-1) ?? 0);
    }

    expect(waits).toEqual([1_000, 2_000, 4_000, 5_000, 5_000]);
  });

  it('cuts each wait by up to half at random, so that retries spread', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    const hook = await receiver(() => 500);
    await queue(store, clock, 'ops', ['n1']);

    const [report] = await dispatcher(store, clock, [webhookTarget('ops', hook.url)], {
      random: () => 0.5,
    }).runOnce();

    expect(report?.outcome).toMatchObject({ kind: 'retry', nextAttemptAt: formatIso(clock.now() + 750) });
  });

  it('waits as long as a receiver asks with Retry-After', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    await queue(store, clock, 'ops', ['n1']);
    const fetch = async () => new Response('slow down', { status: 429, headers: { 'retry-after': '30' } });

    const [report] = await dispatcher(store, clock, [webhookTarget('ops', 'http://127.0.0.1:9/x')], {
      fetch,
    }).runOnce();

    expect(report?.outcome).toEqual({
      kind: 'retry',
      at: formatIso(clock.now()),
      error: 'answered HTTP 429: slow down',
      nextAttemptAt: formatIso(clock.now() + 30_000),
    });
  });

  it('fails a notification for good after maxAttempts, and the next of its target goes on', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    const hook = await receiver((r) => (r.headers['webhook-id'] === 'n1' ? 500 : 200));
    await queue(store, clock, 'ops', ['n1', 'n2']);
    const d = dispatcher(store, clock, [webhookTarget('ops', hook.url)], { maxAttempts: 3 });

    for (let pass = 0; pass < 4; pass++) {
      await d.runOnce();
      clock.advance(60_000);
    }

    expect(await store.listNotifications?.()).toEqual([
      expect.objectContaining({ id: 'n2', status: 'delivered', attempts: 1 }),
      expect.objectContaining({
        id: 'n1',
        status: 'failed',
        attempts: 3,
        lastError: 'answered HTTP 500: no (after 3 attempts)',
      }),
    ]);
  });

  it('fails a notification at once when the receiver answers 410 Gone', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    const hook = await receiver(() => 410);
    await queue(store, clock, 'ops', ['n1']);

    const [report] = await dispatcher(store, clock, [webhookTarget('ops', hook.url)]).runOnce();

    expect(report?.outcome).toEqual({
      kind: 'failed',
      at: formatIso(clock.now()),
      error: 'answered HTTP 410: no',
    });
  });

  it('retries a receiver that does not answer within timeoutMs, while another target is delivered', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    const slow = await receiver(() => 'hang');
    const fast = await receiver();
    await queue(store, clock, 'slow', ['s1']);
    await queue(store, clock, 'fast', ['f1']);
    const d = dispatcher(store, clock, [webhookTarget('slow', slow.url), webhookTarget('fast', fast.url)], {
      timeoutMs: 100,
    });

    const reports = await d.runOnce();

    const outcomes = Object.fromEntries(reports.map((r) => [r.id, r.outcome]));
    expect(outcomes).toEqual({
      f1: expect.objectContaining({ kind: 'delivered' }),
      s1: expect.objectContaining({ kind: 'retry', error: 'no answer within 100 ms' }),
    });
  });

  it('keeps delivering to other targets, polling, while one receiver does not answer', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    const slow = await receiver(() => 'hang');
    const fast = await receiver();
    await queue(store, clock, 'slow', ['s1']);
    await queue(store, clock, 'fast', ['f1', 'f2', 'f3']);
    const d = dispatcher(store, clock, [webhookTarget('slow', slow.url), webhookTarget('fast', fast.url)]);
    const third = new Promise<void>((resolve) => {
      const next = (): void => void fast.next().then(() => (fast.received.length >= 3 ? resolve() : next()));
      next();
    });

    d.start({ intervalMs: 5 });
    await third;
    await d.stop();

    expect([fast.received.length, slow.received.length]).toEqual([3, 1]);
  });

  it('ends an attempt still waiting for its answer when stopped, leaving it queued', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    const slow = await receiver(() => 'hang');
    await queue(store, clock, 'slow', ['s1']);
    const d = dispatcher(store, clock, [webhookTarget('slow', slow.url)]);
    const asked = slow.next();

    d.start({ intervalMs: 5 });
    await asked;
    await d.stop();

    expect(await store.listNotifications?.()).toEqual([
      expect.objectContaining({ id: 's1', status: 'queued' }),
    ]);
  });

  it('does not send a target an event it does not take, and fails it saying so', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    const hook = await receiver();
    await queue(store, clock, 'ops', ['n1'], 'budget.alert');
    const target = { ...webhookTarget('ops', hook.url), events: ['approval.requested' as const] };

    const [report] = await dispatcher(store, clock, [target]).runOnce();

    expect([hook.received.length, report?.outcome]).toEqual([
      0,
      { kind: 'failed', at: formatIso(clock.now()), error: 'target "ops" does not take budget.alert events' },
    ]);
  });

  it('leaves notifications of targets it does not know queued', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    const hook = await receiver();
    await queue(store, clock, 'elsewhere', ['n1']);

    const reports = await dispatcher(store, clock, [webhookTarget('ops', hook.url)]).runOnce();

    expect([reports, hook.received.length]).toEqual([[], 0]);
  });
});

describe('NotificationDispatcher draining and stopping', () => {
  it('drains what is due, and stops at a notification waiting for its retry', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    const hook = await receiver((r) => (r.headers['webhook-id'] === 'b1' ? 500 : 200));
    await queue(store, clock, 'a', ['a1', 'a2']);
    const hookB = await receiver(() => 500);
    await queue(store, clock, 'b', ['b1', 'b2']);
    const d = dispatcher(store, clock, [webhookTarget('a', hook.url), webhookTarget('b', hookB.url)]);

    const reports = await d.drain();

    expect(reports.map((r) => `${r.id} ${r.outcome.kind}`).sort()).toEqual([
      'a1 delivered',
      'a2 delivered',
      'b1 retry',
    ]);
  });

  it('delivers what is due when stopped with flushMs', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    const hook = await receiver();
    await queue(store, clock, 'ops', ['n1', 'n2']);
    const d = dispatcher(store, clock, [webhookTarget('ops', hook.url)]);

    await d.stop({ flushMs: 5_000 });

    expect(hook.received.map((r) => r.headers['webhook-id'])).toEqual(['n1', 'n2']);
  });
});

describe('NotificationDispatcher to Slack', () => {
  it('posts a Block Kit message, unsigned', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    const hook = await receiver();
    await queue(store, clock, 'team', ['n1']);
    const target: DeliveryTarget = {
      name: 'team',
      kind: 'slack',
      url: hook.url,
      events: ['approval.requested'],
    };

    await dispatcher(store, clock, [target]).runOnce();

    const [got] = hook.received;
    expect([got?.headers['webhook-signature'], JSON.parse(got?.body ?? '{}')]).toEqual([
      undefined,
      { text: expect.stringMatching(/^Approval needed/), blocks: expect.any(Array) },
    ]);
  });
});

describe('NotificationDispatcher when things break', () => {
  it('resolves and tells onError when the store fails to claim', async () => {
    const errors: unknown[] = [];
    const broken = {
      claimNotifications: () => Promise.reject(new Error('database is gone')),
      finishNotification: () => Promise.resolve(),
    } as unknown as GuardrailStore;
    const d = dispatcher(broken, newClock(), [webhookTarget('ops', 'http://127.0.0.1:9/x')], {
      onError: (e) => errors.push(e),
    });

    expect([await d.runOnce(), errors.map(String)]).toEqual([[], ['Error: database is gone']]);
  });

  it('records a refused connection as an attempt to retry', async () => {
    const store = new MemoryStore();
    const clock = newClock();
    await queue(store, clock, 'ops', ['n1']);

    const [report] = await dispatcher(store, clock, [webhookTarget('ops', 'http://127.0.0.1:9/x')]).runOnce();

    expect(report?.outcome).toMatchObject({ kind: 'retry', error: expect.stringMatching(/^fetch failed/) });
  });

  it('refuses a webhook target without a secret, naming it', () => {
    const { secret: _, ...target } = webhookTarget('ops', 'http://127.0.0.1:9/x');

    expect(thrown(() => dispatcher(new MemoryStore(), newClock(), [target])).message).toBe(
      'targets[0].secret is required for a webhook target',
    );
  });

  it('refuses two targets of one name', () => {
    const target = webhookTarget('ops', 'http://127.0.0.1:9/x');

    expect(thrown(() => dispatcher(new MemoryStore(), newClock(), [target, target])).field).toBe(
      'targets[1].name',
    );
  });
});
