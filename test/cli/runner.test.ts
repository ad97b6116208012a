import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { AutonomyGuardrailService } from '../../src/service/AutonomyGuardrailService.js';
import { parsePlanFile } from '../../src/runner/planFile.js';
import { PlanRunner } from '../../src/runner/runner.js';
import { parsePolicy } from '../../src/policy/policy.js';
import type { GuardrailStore } from '../../src/store/GuardrailStore.js';
import { MemoryStore } from '../../src/store/memory/MemoryStore.js';
import { RELEASE_PLAN, T0 } from '../dashboard/support.js';

function setup() {
  const store = new MemoryStore();
  const runner = new PlanRunner({ store, clock: new ManualClock(T0) });
  const start = (text = RELEASE_PLAN, extra: { id?: string; policy?: string } = {}) =>
    runner.start({
      file: parsePlanFile(text),
      source: '/plans/release.plan.yaml',
      baseDir: '/plans',
      name: 'release',
      ...(extra.id === undefined ? {} : { id: extra.id }),
      ...(extra.policy === undefined ? {} : { policy: parsePolicy(extra.policy) }),
    });
  return { store, runner, start };
}

/** The paused plan as a resume that was killed leaves it: claimed (execute), with no outcome. */
async function leftRunning(store: MemoryStore): Promise<void> {
  const doc = await store.getPlanDocument('release');
  await store.savePlanDocument({
    planId: 'release',
    phase: 'execute',
    body: { ...doc?.body, outcome: null },
    updatedAt: '2026-11-30T10:05:00Z',
  });
}

describe('PlanRunner', () => {
  it('saves a paused plan’s document in the store, awaiting confirmation', async () => {
    const { store, start } = setup();
    await start();
    expect((await store.getPlanDocument('release'))?.phase).toBe('awaiting_confirmation');
  });

  it('resumes an approved plan to completion and saves its phase', async () => {
    const { store, runner, start } = setup();
    const paused = await start();
    await runner.approve(paused.outcome.approvalId as string, { by: 'alice' });
    const resumed = await runner.resume('release');
    expect([resumed.outcome.status, (await store.getPlanDocument('release'))?.phase]).toEqual([
      'completed',
      'completed',
    ]);
  });

  it('lets only one of two concurrent resumes of a paused plan run it', async () => {
    const { runner, start } = setup();
    const paused = await start();
    await runner.approve(paused.outcome.approvalId as string, { by: 'alice' });
    const both = await Promise.allSettled([runner.resume('release'), runner.resume('release')]);
    const refused = both.flatMap((r) =>
      r.status === 'rejected' ? [(r.reason as { code: string }).code] : [],
    );
    expect([both.filter((r) => r.status === 'fulfilled').length, refused]).toEqual([1, ['PLAN_CLAIMED']]);
  });

  it('ends a denied plan failed, stopped by the confirmation guard, without running the step', async () => {
    const { runner, start } = setup();
    const paused = await start();
    const { run } = await runner.deny(
      paused.outcome.approvalId as string,
      { by: 'bob', reason: 'freeze' },
      { resume: true },
    );
    expect([run?.outcome.status, run?.outcome.guard, run?.completed.map((c) => c.decisionId)]).toEqual([
      'failed',
      'confirmation',
      ['build'],
    ]);
  });

  it('leaves nothing behind for a plan file it refuses', async () => {
    const { store, runner } = setup();
    const file = parsePlanFile(RELEASE_PLAN);
    const bad = { ...file, decisions: file.decisions.map((d) => ({ ...d, cost: -1 })) };
    const started = runner.start({ file: bad, source: 'x.yaml', baseDir: '/plans', name: 'release' });
    await expect(started).rejects.toMatchObject({ field: 'decisions[0].cost' });
    expect(await store.listPlans()).toEqual([]);
  });

  it('applies the policy’s guardrails instead of the plan file’s', async () => {
    const { start } = setup();
    const run = await start(RELEASE_PLAN, { policy: 'version: 1\nguardrails: { max_steps: 1 }\n' });
    expect([run.outcome.status, run.outcome.guard]).toEqual(['failed', 'step_limit']);
  });

  it('says it resumes a plan it started after an approval', async () => {
    const { runner, start } = setup();
    const paused = await start();
    const decided = await runner.approve(
      paused.outcome.approvalId as string,
      { by: 'alice' },
      { resume: true },
    );
    expect([decided.resumedBy, decided.run?.outcome.status]).toEqual(['runner', 'completed']);
  });

  it('leaves a plan it did not start to the application that asked, after an approval', async () => {
    const { runner } = setup();
    await runner.service.configureGuardrails('agent', { requiredConfirmations: ['deploy'] });
    const asked = await runner.service.requestConfirmation('agent', {
      decisionId: 'call-1',
      operation: 'deploy',
      ttlMs: 60_000,
    });
    const decided = await runner.approve(asked.approval?.id as string, { by: 'alice' }, { resume: true });
    expect([decided.approval.status, decided.run, decided.resumedBy]).toEqual([
      'approved',
      null,
      'application',
    ]);
  });

  it('leaves a paused plan whose document another program saved to that program, after a denial', async () => {
    const { store, runner } = setup();
    await runner.service.configureGuardrails('other', { requiredConfirmations: ['deploy'] });
    const asked = await runner.service.requestConfirmation('other', {
      decisionId: 'd1',
      operation: 'deploy',
      ttlMs: 60_000,
    });
    await store.savePlanDocument({
      planId: 'other',
      phase: 'awaiting_confirmation',
      body: { mine: true },
      updatedAt: '2026-11-30T10:00:00Z',
    });
    const decided = await runner.deny(
      asked.approval?.id as string,
      { by: 'bob', reason: 'no' },
      { resume: true },
    );
    expect([decided.approval.status, decided.run, decided.resumedBy]).toEqual([
      'denied',
      null,
      'application',
    ]);
  });

  it('refuses to resume a plan whose document another program saved', async () => {
    const { store, runner } = setup();
    await store.savePlanDocument({
      planId: 'other',
      phase: 'awaiting_confirmation',
      body: { mine: true },
      updatedAt: '2026-11-30T10:00:00Z',
    });
    await expect(runner.resume('other')).rejects.toMatchObject({ code: 'PLAN_NOT_RUNNABLE' });
  });

  it('shows the status of a plan whose document another program saved, without a run record', async () => {
    const { store, runner } = setup();
    await store.savePlanDocument({
      planId: 'other',
      phase: 'done',
      body: { mine: true },
      updatedAt: '2026-11-30T10:00:00Z',
    });
    expect(await runner.status('other')).toMatchObject({ phase: 'done', record: null });
  });

  it('saves an interrupted run as failed, keeping the decisions done', async () => {
    const store = new MemoryStore();
    const controller = new AbortController();
    const runner = new PlanRunner({
      store,
      clock: new ManualClock(T0),
      signal: controller.signal,
      onEvent: (event) => {
        if (event === 'decision') controller.abort();
      },
    });
    const run = await runner.start({
      file: parsePlanFile(RELEASE_PLAN),
      source: 'r.yaml',
      baseDir: '/plans',
      name: 'release',
    });
    const doc = await store.getPlanDocument('release');
    expect([run.outcome.status, run.outcome.completed, doc?.phase]).toEqual(['failed', 1, 'failed']);
  });

  it('resumes a plan approved before its pause was saved', async () => {
    const inner = new MemoryStore();
    const clock = new ManualClock(T0);
    const person = new AutonomyGuardrailService({ store: inner, clock });
    // Approves the moment the pause is about to be saved: the window in which nothing could resume it.
    const save: GuardrailStore['savePlanDocument'] = async (doc, options) => {
      if (doc.phase === 'awaiting_confirmation') {
        const [pending] = await inner.listApprovals({ status: 'pending' });
        if (pending) await person.approve(pending.id, { by: 'alice' });
      }
      return inner.savePlanDocument(doc, options);
    };
    const store = new Proxy(inner, {
      get: (target, key) => {
        if (key === 'savePlanDocument') return save;
        const value: unknown = Reflect.get(target, key);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const runner = new PlanRunner({ store, clock });
    const run = await runner.start({
      file: parsePlanFile(RELEASE_PLAN),
      source: 'r.yaml',
      baseDir: '/plans',
      name: 'release',
    });
    expect(run.outcome.status).toBe('completed');
  });

  it('marks a plan left in execute as failed when abandoned, saying by whom', async () => {
    const { store, runner, start } = setup();
    await start();
    await leftRunning(store);
    const s = await runner.abandon('release', 'alice');
    expect([s.phase, s.record?.outcome?.reason]).toEqual([
      'failed',
      'abandoned by alice: its process was gone',
    ]);
  });

  it('counts the decisions done before the process died in the abandoned plan’s outcome', async () => {
    const { store, runner, start } = setup();
    await start(); // build done, paused at deploy
    await leftRunning(store);
    expect((await runner.abandon('release', 'alice')).record?.outcome?.completed).toBe(1);
  });

  it('marks a plan another program left in execute (a killed MCP session) as failed when abandoned, keeping its document', async () => {
    const { store, runner } = setup();
    const body = { format: 'leash.mcp', version: 1, started_at: '2026-11-30T10:00:00.000Z' };
    await store.savePlanDocument({ planId: 'mcp-1', phase: 'execute', body, updatedAt: body.started_at });
    await runner.abandon('mcp-1', 'alice');
    const doc = await store.getPlanDocument('mcp-1');
    expect([doc?.phase, doc?.body]).toEqual(['failed', body]);
  });

  it('refuses to abandon a plan that is not running', async () => {
    const { runner, start } = setup();
    await start();
    await expect(runner.abandon('release', 'alice')).rejects.toMatchObject({ code: 'PLAN_NOT_RUNNING' });
  });

  it('keeps the plan file’s tighter limit under a looser policy', async () => {
    const { start } = setup();
    const tight = RELEASE_PLAN.replace('max_steps: 10', 'max_steps: 1');
    const run = await start(tight, { policy: 'version: 1\nguardrails: { max_steps: 50 }\n' });
    expect([run.outcome.status, run.outcome.guard]).toEqual(['failed', 'step_limit']);
  });
});
