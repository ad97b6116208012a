import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { parsePolicy } from '../../src/policy/policy.js';
import { parsePlanFile } from '../../src/runner/planFile.js';
import { PlanRunner } from '../../src/runner/runner.js';
import { MemoryStore } from '../../src/store/memory/MemoryStore.js';
import { describeRun } from '../../src/cli/views.js';
import { RELEASE_PLAN, T0 } from '../dashboard/support.js';

const POLICY = 'version: 1\napprovals:\n  deploy: { approvers: [role:release], quorum: 2 }\n';

/** A runner over a store knowing ann and bob (release), and the release plan started under POLICY. */
async function paused() {
  const store = new MemoryStore();
  const createdAt = new Date(T0).toISOString();
  for (const id of ['ann', 'bob']) await store.putPrincipal({ id, name: id, roles: ['release'], createdAt });
  const runner = new PlanRunner({ store, clock: new ManualClock(T0) });
  const run = await runner.start({
    file: parsePlanFile(RELEASE_PLAN),
    source: '/plans/release.plan.yaml',
    baseDir: '/plans',
    name: 'release',
    policy: parsePolicy(POLICY),
  });
  return { runner, run, approvalId: run.outcome.approvalId as string };
}

const as = (id: string) => ({
  by: id,
  identity: { kind: 'token', subject: `tok_${id}`, name: id, principal: id } as const,
});

describe('a plan run under a policy with approval rules', () => {
  it('opens its approval under the policy’s rule', async () => {
    const { runner, approvalId } = await paused();
    expect((await runner.service.getApproval(approvalId))?.rule?.quorum).toBe(2);
  });

  it('stays paused after a vote short of the quorum', async () => {
    const { runner, approvalId } = await paused();
    const decided = await runner.approve(approvalId, as('ann'), { resume: true });
    expect([decided.approval.status, decided.run]).toEqual(['pending', null]);
  });

  it('resumes once the quorum approved', async () => {
    const { runner, approvalId } = await paused();
    await runner.approve(approvalId, as('ann'), { resume: true });
    const decided = await runner.approve(approvalId, as('bob'), { resume: true });
    expect(decided.run?.outcome.status).toBe('completed');
  });

  it('prints commands that decide with a personal token, as the rule asks', async () => {
    const { run } = await paused();
    const printed = describeRun(run, { leash: 'leash', dbArg: '' });
    expect(printed).toContain('leash approve');
    expect([printed.includes('--token "$LEASH_TOKEN"'), printed.includes('--by')]).toEqual([true, false]);
  });
});
