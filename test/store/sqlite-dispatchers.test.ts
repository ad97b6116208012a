import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';
import { exited, messageReader } from '../support/processes.js';
import type { DispatcherMessage } from './sqlite-dispatcher.js';

const DISPATCHER = fileURLToPath(new URL('./sqlite-dispatcher.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NOW = '2026-11-30T10:00:00.000Z';
const PROCESSES = 4;
const TARGETS = ['t1', 't2', 't3', 't4', 't5'];
const EACH = 12;
const IDS = TARGETS.flatMap((t) =>
  Array.from({ length: EACH }, (_, i) => `${t}-${String(i).padStart(2, '0')}`),
);

const next = messageReader<DispatcherMessage>();

describe(`SqliteStore's notifications delivered by ${PROCESSES} dispatcher processes at once`, () => {
  let dir: string;
  let reports: Extract<DispatcherMessage, { type: 'done' }>[];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'leash-sqlite-dispatchers-'));
    const path = join(dir, 'shared.db');
    const store = new SqliteStore({ path });
    await store.migrate();
    // Queued round robin, so that every dispatcher finds several targets with work.
    const order = Array.from({ length: EACH }, (_, i) =>
      TARGETS.map((t) => `${t}-${String(i).padStart(2, '0')}`),
    );
    await store.enqueueNotifications(
      order.flat().map((id) => ({
        id,
        target: id.split('-')[0] as string,
        event: 'approval.requested',
        payload: { id },
        createdAt: NOW,
      })),
    );
    await store.close();
    const children = Array.from({ length: PROCESSES }, () =>
      fork(DISPATCHER, [path, TARGETS.join(','), NOW], { cwd: ROOT, execArgv: ['--import', 'tsx'] }),
    );
    try {
      await Promise.all(children.map((c) => next(c, 'ready')));
      const done = children.map((c) => next(c, 'done'));
      for (const c of children) c.send('go');
      reports = await Promise.all(done);
    } finally {
      for (const c of children) if (c.exitCode === null) c.kill();
      await Promise.all(children.map(exited));
    }
  }, 300_000);

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('delivers every notification exactly once', () => {
    expect(reports.flatMap((r) => r.delivered).sort()).toEqual([...IDS].sort());
  });

  it('never claims a notification while an older one of its target is undelivered', () => {
    expect(reports.flatMap((r) => r.outOfOrder)).toEqual([]);
  });
});
