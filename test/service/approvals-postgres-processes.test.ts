import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalRules, AutonomyGuardrailService } from '../../src/index.js';
import { postgresEngine, type FreshDatabase } from '../caps/databases.js';
import { skipWithoutServer } from '../store/postgres-support.js';
import { exited, messageReader } from '../support/processes.js';
import type { ApprovalJob, ApprovalWorkerMessage } from './approval-worker.js';

// Two processes, each a person of a rule asking for two, approving the same approvals at once on one
// PostgreSQL database, then both using the grants: every approval gets both votes and one grant, used
// once.

const skip = await skipWithoutServer('test/service/approvals-postgres-processes.test.ts');

const WORKER = fileURLToPath(new URL('./approval-worker.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const APPROVALS = 8;
const PEOPLE = ['ann', 'bob'];

const next = messageReader<ApprovalWorkerMessage>();

function forkWorker(job: ApprovalJob): ChildProcess {
  return fork(WORKER, [JSON.stringify(job)], {
    cwd: ROOT,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

describe.skipIf(skip)('two processes approving at once on PostgreSQL', () => {
  let db: FreshDatabase;
  let service: AutonomyGuardrailService;
  let voted: string[][];
  let used: string[][];
  let approvals: ApprovalJob['approvals'];

  beforeAll(async () => {
    db = await postgresEngine.fresh();
    const rules = approvalRules({ deploy: { approvers: ['role:release'], quorum: 2 } });
    service = new AutonomyGuardrailService({ store: db.store, approvalRules: rules });
    const createdAt = new Date().toISOString();
    for (const id of PEOPLE) await db.store.putPrincipal({ id, name: id, roles: ['release'], createdAt });
    await service.configureGuardrails('plan', {
      requiredConfirmations: ['deploy'],
      labels: { user: 'carol' },
    });
    const asked = [];
    for (let i = 0; i < APPROVALS; i++) {
      const request = { decisionId: `d${i}`, operation: 'deploy', input: { n: `d${i}` }, ttlMs: 600_000 };
      const { approval } = await service.requestConfirmation('plan', { ...request, pauseClock: false });
      if (approval === undefined) throw new Error('no approval opened');
      asked.push({ id: approval.id, planId: 'plan', decisionId: `d${i}` });
    }
    approvals = asked;
    const children = PEOPLE.map((person) =>
      forkWorker({ target: db.target, person, approvals, operation: 'deploy' }),
    );
    try {
      await Promise.all(children.map((c) => next(c, 'ready')));
      const votes = children.map((c) => next(c, 'voted'));
      for (const c of children) c.send('go');
      voted = (await Promise.all(votes)).map((m) => [...m.outcomes]);
      const uses = children.map((c) => next(c, 'used'));
      for (const c of children) c.send('go');
      used = (await Promise.all(uses)).map((m) => [...m.outcomes]);
    } finally {
      for (const c of children) if (c.exitCode === null) c.kill();
      await Promise.all(children.map(exited));
    }
  }, 120_000);

  afterAll(async () => {
    await db?.drop();
  });

  it('counts both votes of every approval: one leaves it pending, the other grants it', () => {
    const pairs = approvals.map((_, i) => [voted[0]?.[i], voted[1]?.[i]].sort());
    expect(pairs).toEqual(approvals.map(() => ['approved', 'pending']));
  });

  it('keeps both people’s votes in every approval', async () => {
    const stored = await Promise.all(approvals.map((a) => service.getApproval(a.id)));
    expect(stored.map((a) => a?.votes?.map((v) => v.by.principal).sort())).toEqual(
      approvals.map(() => PEOPLE),
    );
  });

  it('lets every grant be used exactly once across the processes', () => {
    const granted = approvals.map(
      (_, i) => [used[0]?.[i], used[1]?.[i]].filter((o) => o === 'granted').length,
    );
    expect(granted).toEqual(approvals.map(() => 1));
  });

  it('records one grant per approval in the plan’s log', async () => {
    const log = await db.store.readAuditLog('plan');
    const count = (type: string) => log.filter((e) => e.entry.event_type === type).length;
    expect([
      count('confirmation_vote'),
      count('confirmation_approved'),
      count('confirmation_grant_used'),
    ]).toEqual([APPROVALS, APPROVALS, APPROVALS]);
  });
});
