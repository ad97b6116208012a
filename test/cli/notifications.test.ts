import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { formatIso } from '../../src/iso.js';
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';
import { leashIn } from '../support/cli.js';
import { receiver, SECRET } from '../notify/receiver.js';

let dir = '';
let db = '';
const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leash-cli-notify-'));
  db = join(dir, 'leash.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A store at `db` holding `ids` queued for `target`. */
async function queued(target: string, ...ids: string[]): Promise<void> {
  const store = new SqliteStore({ path: db });
  try {
    await store.migrate();
    await store.enqueueNotifications(
      ids.map((id) => ({
        id,
        target,
        event: 'approval.requested',
        payload: { type: 'approval.requested', timestamp: formatIso(clock.now()), data: {} },
        createdAt: formatIso(clock.now()),
      })),
    );
  } finally {
    await store.close();
  }
}

/** A policy file notifying `url` as the webhook target `ops`. */
function policy(url: string): string {
  const path = join(dir, 'notify.policy.yaml');
  writeFileSync(
    path,
    `version: 1\nnotify:\n  targets:\n    ops: { webhook: "${url}", secret_env: OPS_SECRET }\n`,
  );
  return path;
}

const leash = (argv: string[], env: NodeJS.ProcessEnv = {}) => leashIn(dir, argv, { clock, env });

describe('leash notifications', () => {
  it('lists the outbox newest first with target, event, status and attempts', async () => {
    await queued('ops', 'n1', 'n2');

    const r = await leash(['notifications', '--db', db]);

    expect([r.code, r.out.split('\n').map((line) => line.split(/\s+/).slice(0, 5).join(' '))]).toEqual([
      0,
      [
        'ID TARGET EVENT STATUS ATTEMPTS',
        'n2 ops approval.requested queued 0',
        'n1 ops approval.requested queued 0',
        '',
      ],
    ]);
  });

  it('lists only the notifications in a status, as JSON', async () => {
    await queued('ops', 'n1');

    const r = await leash(['notifications', '--status', 'failed', '--json', '--db', db]);

    expect([r.code, JSON.parse(r.out)]).toEqual([0, []]);
  });

  it('refuses a limit that is not a whole number from 1', async () => {
    await queued('ops', 'n1');

    expect((await leash(['notifications', '--limit', '0', '--db', db])).code).toBe(2);
  });
});

describe('leash notifications deliver', () => {
  it("delivers what is due to the policy's targets and says so", async () => {
    const hook = await receiver();
    await queued('ops', 'n1', 'n2');

    const r = await leash(['notifications', 'deliver', '--policy', policy(hook.url), '--db', db], {
      OPS_SECRET: SECRET,
    });

    expect([r.code, r.out, hook.received.map((got) => got.headers['webhook-id'])]).toEqual([
      0,
      'delivered n1 to ops (approval.requested, attempt 1)\ndelivered n2 to ops (approval.requested, attempt 1)\n',
      ['n1', 'n2'],
    ]);
  });

  it('makes one attempt per target with --once', async () => {
    const hook = await receiver();
    await queued('ops', 'n1', 'n2');

    await leash(['notifications', 'deliver', '--once', '--policy', policy(hook.url), '--db', db], {
      OPS_SECRET: SECRET,
    });

    expect(hook.received.map((got) => got.headers['webhook-id'])).toEqual(['n1']);
  });

  it('refuses to start without the secret the policy names', async () => {
    await queued('ops', 'n1');

    const r = await leash([
      'notifications',
      'deliver',
      '--policy',
      policy('http://127.0.0.1:9/'),
      '--db',
      db,
    ]);

    expect(r.code).toBe(2);
  });

  it('refuses a policy without notify: targets', async () => {
    await queued('ops', 'n1');
    const path = join(dir, 'plain.policy.yaml');
    writeFileSync(path, 'version: 1\n');

    expect((await leash(['notifications', 'deliver', '--policy', path, '--db', db])).code).toBe(2);
  });
});

describe('leash run with a notify: policy', () => {
  it('delivers what is queued before it exits', async () => {
    const hook = await receiver();
    await queued('ops', 'n1');
    const plan = join(dir, 'hello.plan.yaml');
    writeFileSync(plan, 'version: 1\ndecisions:\n  - { id: first, tool: echo, input: { message: one } }\n');

    const r = await leash(['run', plan, '--policy', policy(hook.url), '--db', db], { OPS_SECRET: SECRET });

    expect([r.code, hook.received.map((got) => got.headers['webhook-id'])]).toEqual([0, ['n1']]);
  });
});

describe('leash serve with a notify: policy', () => {
  it('delivers what is queued while it runs', async () => {
    const hook = await receiver();
    await queued('ops', 'n1');
    const stop = new AbortController();
    const delivered = hook.next();

    const serving = leashIn(dir, ['serve', '--port', '0', '--policy', policy(hook.url), '--db', db], {
      clock,
      env: { OPS_SECRET: SECRET },
      signal: stop.signal,
      serve: () => Promise.resolve({ url: 'http://127.0.0.1:1', token: 't', close: () => Promise.resolve() }),
    });
    await delivered;
    stop.abort();

    expect([(await serving).code, hook.received.map((got) => got.headers['webhook-id'])]).toEqual([
      0,
      ['n1'],
    ]);
  });
});
