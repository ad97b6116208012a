import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { parsePlanFile } from '../../src/runner/planFile.js';
import { PlanRunner } from '../../src/runner/runner.js';
import { parsePolicy } from '../../src/policy/policy.js';
import { MemoryStore } from '../../src/store/memory/MemoryStore.js';
import { T0 } from '../dashboard/support.js';

const LABELLED = `version: 1
labels: { team: ml, user: ann }
guardrails: { max_steps: 5 }
decisions:
  - { id: a, tool: echo, input: { message: hi } }
`;

function setup() {
  const store = new MemoryStore();
  const runner = new PlanRunner({ store, clock: new ManualClock(T0) });
  const start = (extra: { labels?: Record<string, string>; policy?: string } = {}) =>
    runner.start({
      file: parsePlanFile(LABELLED),
      source: '/plans/train.plan.yaml',
      baseDir: '/plans',
      name: 'train',
      ...(extra.labels === undefined ? {} : { labels: extra.labels }),
      ...(extra.policy === undefined ? {} : { policy: parsePolicy(extra.policy) }),
    });
  return { runner, start };
}

describe('PlanRunner labels', () => {
  it('configures the plan with the plan file’s labels', async () => {
    const { runner, start } = setup();
    await start();
    expect((await runner.service.getGuardrails('train'))?.labels).toEqual({ team: 'ml', user: 'ann' });
  });

  it('adds the labels it is given to the file’s, overriding those of the same name', async () => {
    const { runner, start } = setup();
    await start({ labels: { user: 'bob', key: 'k-1' } });
    expect((await runner.service.getGuardrails('train'))?.labels).toEqual({
      key: 'k-1',
      team: 'ml',
      user: 'bob',
    });
  });

  it('keeps the labels when a policy binds the plan file', async () => {
    const { runner, start } = setup();
    await start({ policy: 'version: 1\nguardrails: { max_steps: 2 }\n' });
    const g = await runner.service.getGuardrails('train');
    expect([g?.maxSteps, g?.labels]).toEqual([2, { team: 'ml', user: 'ann' }]);
  });

  it('refuses a bad label before claiming the plan id, leaving nothing behind', async () => {
    const { runner, start } = setup();
    const error = await start({ labels: { Team: 'ml' } }).catch((e: unknown) => e);
    expect((error as { field?: string }).field).toBe('labels.Team');
    expect(await runner.store.listPlans()).toEqual([]);
    expect(await runner.store.getPlanDocument('train')).toBeNull();
  });

  it('refuses more than 16 labels in all, the file’s and those given', async () => {
    const { start } = setup();
    const given = Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`l${i}`, 'x']));
    const error = await start({ labels: given }).catch((e: unknown) => e);
    expect((error as Error).message).toBe('labels must hold at most 16 labels, got 17');
  });
});
