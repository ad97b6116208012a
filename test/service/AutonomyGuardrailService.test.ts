import { describe, expect, it } from 'vitest';
import {
  AutonomyGuardrailService,
  GuardrailError,
  ManualClock,
  MAX_PLAN_ID_LENGTH,
  MemoryStore,
  StoreOutcomeUnknownError,
  type AutonomyGuardrailServiceOptions,
  type GuardCheck,
  type GuardrailsInit,
} from '../../src/index.js';
import { fieldOf } from '../support/thrown.js';
import { guardrailsOf, rejectedField, trailOf } from '../support/service.js';

const T0 = Date.parse('2026-11-30T10:00:00.000Z');
const T0_ISO = '2026-11-30T10:00:00.000Z';

function setup(options: AutonomyGuardrailServiceOptions = {}) {
  const clock = new ManualClock(T0);
  const service = new AutonomyGuardrailService({ clock, ...options });
  return { clock, service };
}

async function configured(init: GuardrailsInit, options: AutonomyGuardrailServiceOptions = {}) {
  const s = setup(options);
  await s.service.configureGuardrails('plan', init);
  return s;
}

/** Every method that takes a plan id, called with harmless arguments. */
const PLAN_METHODS: [string, (s: AutonomyGuardrailService, planId: string) => Promise<unknown>][] = [
  ['configureGuardrails', (s, id) => s.configureGuardrails(id, {})],
  ['getGuardrails', (s, id) => s.getGuardrails(id)],
  ['checkStepLimit', (s, id) => s.checkStepLimit(id, 0)],
  ['takeStep', (s, id) => s.takeStep(id)],
  ['checkToolBudget', (s, id) => s.checkToolBudget(id, 0)],
  ['checkConfirmation', (s, id) => s.checkConfirmation(id, 'deploy')],
  ['checkWallClock', (s, id) => s.checkWallClock(id)],
  ['checkActorToolCalls', (s, id) => s.checkActorToolCalls(id, 0)],
  ['checkRetries', (s, id) => s.checkRetries(id, 0)],
  ['markStarted', (s, id) => s.markStarted(id)],
  ['getAuditTrail', (s, id) => s.getAuditTrail(id)],
  ['toMetadata', (s, id) => s.toMetadata(id, {})],
  ['loadFromMetadata', (s, id) => s.loadFromMetadata(id, {})],
  ['removePlan', (s, id) => s.removePlan(id)],
];

/** The six checks, each called so that it is allowed on a plan configured with none of their limits. */
const CHECKS: [string, (s: AutonomyGuardrailService, planId: string) => Promise<GuardCheck>][] = [
  ['checkStepLimit', (s, id) => s.checkStepLimit(id, 3)],
  ['takeStep', (s, id) => s.takeStep(id)],
  ['checkToolBudget', (s, id) => s.checkToolBudget(id, 1)],
  ['checkConfirmation', (s, id) => s.checkConfirmation(id, 'deploy')],
  ['checkWallClock', (s, id) => s.checkWallClock(id)],
  ['checkActorToolCalls', (s, id) => s.checkActorToolCalls(id, 3)],
  ['checkRetries', (s, id) => s.checkRetries(id, 3)],
];

describe('AutonomyGuardrailService options', () => {
  it('refuses an unknown option key', () => {
    const options = { clock: new ManualClock(), maxSteps: 5 } as AutonomyGuardrailServiceOptions;
    expect(fieldOf(() => new AutonomyGuardrailService(options))).toBe('options.maxSteps');
  });

  it('refuses options that are not an object', () => {
    const options = 'fast' as unknown as AutonomyGuardrailServiceOptions;
    expect(fieldOf(() => new AutonomyGuardrailService(options))).toBe('options');
  });

  it.each([
    ['null', null],
    ['an object without now()', {}],
    ['a now that is not a function', { now: 5 }],
    ['a function', () => 1],
  ])('refuses a clock that is %s', (_label, clock) => {
    const options = { clock } as unknown as AutonomyGuardrailServiceOptions;
    expect(fieldOf(() => new AutonomyGuardrailService(options))).toBe('clock');
  });

  it('refuses a store together with an auditCapacity', () => {
    const options = { store: new MemoryStore(), auditCapacity: 10 };
    expect(fieldOf(() => new AutonomyGuardrailService(options))).toBe('auditCapacity');
  });

  it('refuses an auditCapacity above metadataLimits.maxAuditEntries', () => {
    const options = { auditCapacity: 101, metadataLimits: { maxAuditEntries: 100 } };
    expect(fieldOf(() => new AutonomyGuardrailService(options))).toBe('auditCapacity');
  });

  it('accepts an auditCapacity equal to metadataLimits.maxAuditEntries', async () => {
    const { service } = setup({ auditCapacity: 100, metadataLimits: { maxAuditEntries: 100 } });
    await service.configureGuardrails('plan', {});
    expect((await trailOf(service)).maxEntries).toBe(100);
  });

  it('refuses a store whose audit capacity is above metadataLimits.maxAuditEntries', () => {
    const options = {
      store: new MemoryStore({ auditCapacity: 101 }),
      metadataLimits: { maxAuditEntries: 100 },
    };
    expect(fieldOf(() => new AutonomyGuardrailService(options))).toBe('auditCapacity');
  });

  it.each([
    ['zero', 0],
    ['fractional', 2.5],
    ['a string', '10'],
  ])('refuses an auditCapacity that is %s', (_label, auditCapacity) => {
    const options = { auditCapacity } as unknown as AutonomyGuardrailServiceOptions;
    expect(fieldOf(() => new AutonomyGuardrailService(options))).toBe('auditCapacity');
  });

  it.each([
    ['unknown', 'maybe'],
    ['null', null],
  ])('refuses an unconfiguredPlans value that is %s', (_label, unconfiguredPlans) => {
    const options = { unconfiguredPlans } as unknown as AutonomyGuardrailServiceOptions;
    expect(fieldOf(() => new AutonomyGuardrailService(options))).toBe('unconfiguredPlans');
  });

  it('refuses an unknown metadata limit', () => {
    const options = { metadataLimits: { maxEntries: 5 } } as unknown as AutonomyGuardrailServiceOptions;
    expect(fieldOf(() => new AutonomyGuardrailService(options))).toBe('metadataLimits.maxEntries');
  });

  it('refuses metadata limits that are not a plain object', () => {
    const options = { metadataLimits: new Map([['maxTotalBytes', 10]]) } as never;
    expect(fieldOf(() => new AutonomyGuardrailService(options))).toBe('metadataLimits');
  });

  it('refuses a metadata limit below 1', () => {
    const options = { metadataLimits: { maxDetailsBytes: 0 } };
    expect(fieldOf(() => new AutonomyGuardrailService(options))).toBe('metadataLimits.maxDetailsBytes');
  });

  it('refuses a maxDetailsBytes too small to hold the entries the service itself writes', () => {
    const options = { metadataLimits: { maxOperationNameLength: 128, maxDetailsBytes: 512 } };
    expect(fieldOf(() => new AutonomyGuardrailService(options))).toBe('metadataLimits.maxDetailsBytes');
  });

  it('reads back its own longest confirmation entry at the smallest maxDetailsBytes it accepts', async () => {
    const metadataLimits = { maxOperationNameLength: 40, maxDetailsBytes: 6 * 40 + 96 };
    const { service } = await configured({ requiredConfirmations: ['界'.repeat(40)] }, { metadataLimits });
    await service.checkConfirmation('plan', '界'.repeat(40));
    const wire = JSON.parse(JSON.stringify(await service.toMetadata('plan')));
    await expect(service.loadFromMetadata('copy', wire)).resolves.toBeDefined();
  });

  it('writes to the store it is given', async () => {
    const store = new MemoryStore();
    const service = new AutonomyGuardrailService({ store, clock: new ManualClock(T0) });
    await service.configureGuardrails('plan', { maxSteps: 2 });
    expect(service.store).toBe(store);
    expect((await store.get('plan'))?.guardrails.maxSteps).toBe(2);
  });

  it('gives new plans an audit trail of auditCapacity entries', async () => {
    const { service } = await configured({}, { auditCapacity: 3 });
    for (let i = 0; i < 5; i++) await service.checkStepLimit('plan', i);
    const trail = await trailOf(service);
    expect(trail.maxEntries).toBe(3);
    expect(trail.entries.map((e) => e.details['step'])).toEqual([2, 3, 4]);
  });

  it('refuses a check when the clock reads a time it could not write to the audit trail', async () => {
    const { service, clock } = await configured({ maxSteps: 5 });
    clock.set(Date.parse('9999-12-31T23:59:59.999Z') + 1);
    expect(await rejectedField(service.checkStepLimit('plan', 0))).toBe('clock');
    expect((await trailOf(service)).size).toBe(0);
  });
});

describe('configure, get and remove', () => {
  it('returns the configured guardrails from configureGuardrails and getGuardrails', async () => {
    const { service } = setup();
    const init = { maxSteps: 5, toolBudget: 10, requiredConfirmations: ['deploy'] };
    const returned = await service.configureGuardrails('plan', init);
    const got = await guardrailsOf(service);
    expect(returned.maxSteps).toBe(5);
    expect(returned.toolBudget).toBe(10);
    expect(returned.requiredConfirmations).toEqual(['deploy']);
    expect(got.toJSON()).toEqual(returned.toJSON());
  });

  it('configures a plan with no limits when given no init', async () => {
    const { service } = setup();
    const g = await service.configureGuardrails('plan');
    expect(g.maxSteps).toBeNull();
    expect(g.toolBudget).toBeNull();
    expect(g.requiredConfirmations).toEqual([]);
  });

  it('returns null for a plan that is not configured', async () => {
    const { service } = setup();
    expect(await service.getGuardrails('plan')).toBeNull();
    expect(await service.getAuditTrail('plan')).toBeNull();
  });

  it('hands out copies of the guardrails, so changing them changes nothing stored', async () => {
    const { service } = await configured({ maxSteps: 5 });
    const returned = await service.configureGuardrails('plan', { maxSteps: 5 });
    returned.incrementStep();
    const got = await guardrailsOf(service);
    got.incrementStep();
    expect((await guardrailsOf(service)).stepCount).toBe(0);
  });

  it('hands out copies of the audit trail, so changing them changes nothing stored', async () => {
    const { service } = await configured({ maxSteps: 5 });
    await service.checkStepLimit('plan', 0);
    const trail = await trailOf(service);
    const first = trail.entries[0];
    if (!first) throw new Error('the trail should hold an entry');
    trail.add(first);
    expect((await trailOf(service)).size).toBe(1);
  });

  it('replaces the guardrails but keeps the audit trail when a plan is configured again', async () => {
    const { service } = await configured({ maxSteps: 5 });
    await service.checkStepLimit('plan', 1);
    await service.configureGuardrails('plan', { maxSteps: 2 });
    expect((await guardrailsOf(service)).maxSteps).toBe(2);
    expect((await trailOf(service)).size).toBe(1);
  });

  it('keeps the money spent, the steps taken and the start time when a plan is configured again', async () => {
    const { service, clock } = await configured({ toolBudget: 10, maxWallClockSeconds: 60 });
    await service.markStarted('plan');
    await service.checkToolBudget('plan', 9);
    await service.takeStep('plan');
    clock.advance(1000);
    await service.configureGuardrails('plan', { toolBudget: 10, maxWallClockSeconds: 60 });
    const g = await guardrailsOf(service);
    expect([g.budgetSpent, g.stepCount, g.startTime]).toEqual([9, 1, T0_ISO]);
    expect((await service.checkToolBudget('plan', 9)).allowed).toBe(false);
  });

  it('takes counters given explicitly when a plan is configured again', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.checkToolBudget('plan', 9);
    await service.configureGuardrails('plan', { toolBudget: 10, budgetSpent: 1, stepCount: 4 });
    const g = await guardrailsOf(service);
    expect([g.budgetSpent, g.stepCount]).toEqual([1, 4]);
  });

  it('keeps what was spent when another caller configured the new plan while it was configuring', async () => {
    let other: AutonomyGuardrailService | undefined;
    // Another caller configures the plan and spends right after this one found it not configured.
    class Racing extends MemoryStore {
      override async update<T>(...args: Parameters<MemoryStore['update']>): Promise<T> {
        const out = (await super.update(...args)) as T;
        const caller = other;
        other = undefined;
        if (caller) {
          await caller.configureGuardrails('plan', { toolBudget: 1 });
          await caller.checkToolBudget('plan', 1);
        }
        return out;
      }
    }
    const store = new Racing();
    other = new AutonomyGuardrailService({ clock: new ManualClock(T0), store });
    const { service } = setup({ store });
    await service.configureGuardrails('plan', { toolBudget: 1 });
    expect((await guardrailsOf(service)).budgetSpent).toBe(1);
    expect((await service.checkToolBudget('plan', 1)).allowed).toBe(false);
  });

  it('refuses to configure through a store whose create and update disagree, after a few tries', async () => {
    class Disagreeing extends MemoryStore {
      override async create(): Promise<boolean> {
        return false;
      }
    }
    const { service } = setup({ store: new Disagreeing() });
    await expect(service.configureGuardrails('plan', { maxSteps: 1 })).rejects.toMatchObject({
      code: 'STORE_CONTRACT',
    });
  });

  it('leaves the previous guardrails and trail untouched when a configure is refused', async () => {
    const { service } = await configured({ maxSteps: 5, toolBudget: 1 });
    await service.checkToolBudget('plan', 0.5);
    const before = (await guardrailsOf(service)).toJSON();
    expect(await rejectedField(service.configureGuardrails('plan', { maxSteps: 2, toolBudget: -1 }))).toBe(
      'tool_budget',
    );
    expect((await guardrailsOf(service)).toJSON()).toEqual(before);
    expect((await trailOf(service)).size).toBe(1);
  });

  it('stores nothing when the first configure of a plan is refused', async () => {
    const { service } = setup();
    await rejectedField(service.configureGuardrails('plan', { maxSteps: 0 }));
    expect(await service.getGuardrails('plan')).toBeNull();
  });

  it('refuses an unknown guardrails key, naming it', async () => {
    const { service } = setup();
    const init = { maxStep: 5 } as GuardrailsInit;
    expect(await rejectedField(service.configureGuardrails('plan', init))).toBe('maxStep');
  });

  it('refuses more required confirmations than metadataLimits.maxRequiredConfirmations', async () => {
    const { service } = setup({ metadataLimits: { maxRequiredConfirmations: 2 } });
    const init = { requiredConfirmations: ['a', 'b', 'c'] };
    expect(await rejectedField(service.configureGuardrails('plan', init))).toBe('required_confirmations');
  });

  it('refuses a required confirmation longer than metadataLimits.maxOperationNameLength', async () => {
    const { service } = setup({ metadataLimits: { maxOperationNameLength: 4 } });
    const init = { requiredConfirmations: ['ok', 'deploy'] };
    expect(await rejectedField(service.configureGuardrails('plan', init))).toBe('required_confirmations[1]');
  });

  it('removes a plan with its guardrails and audit trail', async () => {
    const { service } = await configured({ maxSteps: 5 });
    await service.checkStepLimit('plan', 0);
    expect(await service.removePlan('plan')).toBe(true);
    expect(await service.getGuardrails('plan')).toBeNull();
    expect(await service.getAuditTrail('plan')).toBeNull();
  });

  it('answers false when removing a plan that is not configured', async () => {
    const { service } = setup();
    expect(await service.removePlan('plan')).toBe(false);
  });
});

describe('plan ids', () => {
  const badIds: [string, unknown][] = [
    ['empty', ''],
    ['longer than 256 characters', 'p'.repeat(MAX_PLAN_ID_LENGTH + 1)],
    ['holding a newline', 'plan\n1'],
    ['holding a NUL', 'plan\u00001'],
    ['holding DEL', 'plan\u007f'],
    ['not a string', 42],
  ];

  for (const [method, call] of PLAN_METHODS) {
    it.each(badIds)(`${method} refuses a plan id that is %s`, async (_label, planId) => {
      const { service } = setup();
      expect(await rejectedField(call(service, planId as string))).toBe('plan_id');
    });
  }

  it('accepts a plan id of exactly 256 characters', async () => {
    const { service } = setup();
    const planId = 'p'.repeat(MAX_PLAN_ID_LENGTH);
    await service.configureGuardrails(planId, { maxSteps: 1 });
    expect((await service.getGuardrails(planId))?.maxSteps).toBe(1);
  });

  it('keeps plans with different ids apart', async () => {
    const { service } = setup();
    await service.configureGuardrails('a', { maxSteps: 1 });
    await service.configureGuardrails('b', { maxSteps: 1 });
    await service.takeStep('a');
    expect((await guardrailsOf(service, 'a')).stepCount).toBe(1);
    expect((await guardrailsOf(service, 'b')).stepCount).toBe(0);
    expect((await trailOf(service, 'b')).size).toBe(0);
  });
});

describe('audit entries of the checks', () => {
  const limits: GuardrailsInit = {
    maxSteps: 5,
    toolBudget: 10,
    requiredConfirmations: ['deploy'],
    maxWallClockSeconds: 60,
    startTime: T0_ISO,
    actorLimits: { maxToolCallsPerInvocation: 4, maxRetriesPerFailure: 2 },
  };

  it.each(CHECKS)('%s records exactly one entry matching the check it returns', async (_name, call) => {
    const { service, clock } = await configured(limits);
    clock.advance(1500);
    const check = await call(service, 'plan');
    const trail = await trailOf(service);
    expect(trail.size).toBe(1);
    const [entry] = trail.entries;
    expect(entry?.eventType).toBe(check.eventType);
    expect(entry?.guardName).toBe(check.guardName);
    expect(entry?.result).toBe(check.result);
    expect(entry?.timestamp).toBe(T0 + 1500);
    expect(entry?.details['reason']).toBe(check.allowed ? undefined : check.reason);
    expect(entry?.details['limit']).toBe(check.limit ?? null);
  });

  it('hands out the details of the entries it recorded frozen', async () => {
    const { service } = await configured(limits);
    await service.checkToolBudget('plan', 1);
    const details = (await trailOf(service)).entries[0]?.details;
    expect(Object.isFrozen(details)).toBe(true);
    expect(() => {
      (details as Record<string, unknown>)['spent'] = 0;
    }).toThrow(TypeError);
  });

  it('writes the reason of a denial into its entry', async () => {
    const { service } = await configured(limits);
    const check = await service.checkToolBudget('plan', 11);
    expect((await trailOf(service)).entries[0]?.details['reason']).toBe(
      'cost 11 would bring spending to 11, over tool_budget 10',
    );
    expect(check.reason).toBe('cost 11 would bring spending to 11, over tool_budget 10');
  });

  it('records the step and the limit of a step-limit check', async () => {
    const { service } = await configured(limits);
    await service.checkStepLimit('plan', 4);
    expect((await trailOf(service)).entries[0]?.details).toMatchObject({ step: 4, limit: 5 });
  });

  it('records the step count a takeStep checked', async () => {
    const { service } = await configured({ ...limits, stepCount: 2 });
    await service.takeStep('plan');
    expect((await trailOf(service)).entries[0]?.details).toMatchObject({ step: 2, limit: 5 });
  });

  it('records the cost and the amount spent after a budget check', async () => {
    const { service } = await configured({ ...limits, budgetSpent: 1 });
    await service.checkToolBudget('plan', 2.5);
    expect((await trailOf(service)).entries[0]?.details).toMatchObject({ cost: 2.5, spent: 3.5, limit: 10 });
  });

  it('records the unchanged amount spent after a denied budget check', async () => {
    const { service } = await configured({ ...limits, budgetSpent: 9 });
    await service.checkToolBudget('plan', 2);
    expect((await trailOf(service)).entries[0]?.details).toMatchObject({ cost: 2, spent: 9, limit: 10 });
  });

  it('records the normalized operation name of a confirmation check', async () => {
    const { service } = await configured(limits);
    await service.checkConfirmation('plan', '  DEPLOY ');
    expect((await trailOf(service)).entries[0]?.details).toMatchObject({ operation: 'deploy' });
  });

  it('records the elapsed seconds of a wall-clock check', async () => {
    const { service, clock } = await configured(limits);
    clock.advance(12_000);
    await service.checkWallClock('plan');
    expect((await trailOf(service)).entries[0]?.details).toMatchObject({ elapsed_seconds: 12, limit: 60 });
  });

  it('records the current calls of a tool-call check', async () => {
    const { service } = await configured(limits);
    await service.checkActorToolCalls('plan', 3);
    expect((await trailOf(service)).entries[0]?.details).toMatchObject({ current_calls: 3, limit: 4 });
  });

  it('records the current retries of a retry check', async () => {
    const { service } = await configured(limits);
    await service.checkRetries('plan', 1);
    expect((await trailOf(service)).entries[0]?.details).toMatchObject({ current_retries: 1, limit: 2 });
  });

  it('records denied checks as denied entries', async () => {
    const { service } = await configured(limits);
    await service.checkStepLimit('plan', 5);
    await service.checkConfirmation('plan', 'deploy');
    const trail = await trailOf(service);
    expect(trail.entries.map((e) => e.eventType)).toEqual(['step_blocked', 'confirmation_required']);
    expect(trail.deniedCount).toBe(2);
    expect(trail.allowedCount).toBe(0);
  });

  it('records checks in the order they were made', async () => {
    const { service, clock } = await configured(limits);
    await service.checkStepLimit('plan', 0);
    clock.advance(1);
    await service.checkRetries('plan', 0);
    clock.advance(1);
    await service.checkToolBudget('plan', 1);
    const trail = await trailOf(service);
    expect(trail.entries.map((e) => e.guardName)).toEqual(['step_limit', 'retry_limit', 'tool_budget']);
    expect(trail.entries.map((e) => e.timestamp)).toEqual([T0, T0 + 1, T0 + 2]);
  });

  it('records nothing for markStarted', async () => {
    const { service } = await configured({ maxWallClockSeconds: 60 });
    await service.markStarted('plan');
    expect((await trailOf(service)).size).toBe(0);
  });
});

describe('step limit', () => {
  it('allows a step below max_steps', async () => {
    const { service } = await configured({ maxSteps: 5 });
    const check = await service.checkStepLimit('plan', 4);
    expect(check.allowed).toBe(true);
    expect(check.eventType).toBe('step_allowed');
  });

  it('blocks the step equal to max_steps', async () => {
    const { service } = await configured({ maxSteps: 5 });
    const check = await service.checkStepLimit('plan', 5);
    expect(check.allowed).toBe(false);
    expect(check.eventType).toBe('step_blocked');
  });

  it('counts no steps in checkStepLimit', async () => {
    const { service } = await configured({ maxSteps: 5 });
    await service.checkStepLimit('plan', 0);
    expect((await guardrailsOf(service)).stepCount).toBe(0);
  });

  it.each([
    ['negative', -1],
    ['fractional', 1.5],
    ['NaN', Number.NaN],
  ])('refuses a step that is %s and records nothing', async (_label, step) => {
    const { service } = await configured({ maxSteps: 5 });
    expect(await rejectedField(service.checkStepLimit('plan', step))).toBe('step');
    expect((await trailOf(service)).size).toBe(0);
  });

  it('counts each step takeStep allows and blocks once max_steps is reached', async () => {
    const { service } = await configured({ maxSteps: 3 });
    const allowed: boolean[] = [];
    for (let i = 0; i < 5; i++) allowed.push((await service.takeStep('plan')).allowed);
    expect(allowed).toEqual([true, true, true, false, false]);
    expect((await guardrailsOf(service)).stepCount).toBe(3);
  });

  it('allows exactly max_steps of many concurrent takeStep calls', async () => {
    const { service } = await configured({ maxSteps: 10 });
    const checks = await Promise.all(Array.from({ length: 50 }, () => service.takeStep('plan')));
    expect(checks.filter((c) => c.allowed)).toHaveLength(10);
    expect((await guardrailsOf(service)).stepCount).toBe(10);
    expect((await trailOf(service)).size).toBe(50);
  });
});

describe('tool budget', () => {
  it('admits 0.1 then 0.2 against a budget of 0.3, and then nothing more', async () => {
    const { service } = await configured({ toolBudget: 0.3 });
    expect((await service.checkToolBudget('plan', 0.1)).allowed).toBe(true);
    expect((await service.checkToolBudget('plan', 0.2)).allowed).toBe(true);
    expect((await service.checkToolBudget('plan', 0.000001)).allowed).toBe(false);
    expect((await guardrailsOf(service)).budgetSpent).toBe(0.3);
  });

  it('spends the cost of an allowed check', async () => {
    const { service } = await configured({ toolBudget: 10 });
    await service.checkToolBudget('plan', 4);
    expect((await guardrailsOf(service)).budgetSpent).toBe(4);
  });

  it('spends nothing for a denied check', async () => {
    const { service } = await configured({ toolBudget: 10, budgetSpent: 8 });
    const check = await service.checkToolBudget('plan', 3);
    expect(check.allowed).toBe(false);
    expect(check.eventType).toBe('budget_blocked');
    expect((await guardrailsOf(service)).budgetSpent).toBe(8);
  });

  it('allows a cost that exactly uses up the budget', async () => {
    const { service } = await configured({ toolBudget: 10, budgetSpent: 7 });
    expect((await service.checkToolBudget('plan', 3)).allowed).toBe(true);
    expect((await guardrailsOf(service)).budgetSpent).toBe(10);
  });

  it('spends against a plan with no budget limit', async () => {
    const { service } = await configured({ maxSteps: 5 });
    expect((await service.checkToolBudget('plan', 2)).allowed).toBe(true);
    expect((await guardrailsOf(service)).budgetSpent).toBe(2);
  });

  it('admits exactly the budget to 1,000 concurrent calls and records every one', async () => {
    const { service } = await configured({ toolBudget: 100 }, { auditCapacity: 1000 });
    const checks = await Promise.all(Array.from({ length: 1000 }, () => service.checkToolBudget('plan', 1)));
    expect(checks.filter((c) => c.allowed)).toHaveLength(100);
    expect((await guardrailsOf(service)).budgetSpent).toBe(100);
    const trail = await trailOf(service);
    expect(trail.size).toBe(1000);
    expect(trail.allowedCount).toBe(100);
    expect(trail.deniedCount).toBe(900);
  });

  it.each([
    ['negative', -1],
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
  ])('refuses a cost that is %s and records nothing', async (_label, cost) => {
    const { service } = await configured({ toolBudget: 10 });
    expect(await rejectedField(service.checkToolBudget('plan', cost))).toBe('cost');
    expect((await trailOf(service)).size).toBe(0);
    expect((await guardrailsOf(service)).budgetSpent).toBe(0);
  });
});

describe('confirmation', () => {
  it('requires confirmation for a configured operation', async () => {
    const { service } = await configured({ requiredConfirmations: ['deploy'] });
    const check = await service.checkConfirmation('plan', 'deploy');
    expect(check.allowed).toBe(false);
    expect(check.eventType).toBe('confirmation_required');
  });

  it('does not require confirmation for another operation', async () => {
    const { service } = await configured({ requiredConfirmations: ['deploy'] });
    const check = await service.checkConfirmation('plan', 'read');
    expect(check.allowed).toBe(true);
    expect(check.eventType).toBe('confirmation_not_required');
  });

  it.each([
    ['upper case', 'DEPLOY'],
    ['surrounding space', '  deploy  '],
    ['full-width letters', 'ｄｅｐｌｏｙ'],
    ['full-width upper case and space', ' ＤＥＰＬＯＹ '],
  ])('matches an operation name written in %s', async (_label, operation) => {
    const { service } = await configured({ requiredConfirmations: ['Deploy'] });
    expect((await service.checkConfirmation('plan', operation)).allowed).toBe(false);
  });

  it.each([
    ['a zero-width space', 'de\u200bploy'],
    ['a soft hyphen', 'de\u00adploy'],
    ['a byte-order mark', '\ufeffdeploy'],
    ['a bell character', 'deploy\u0007'],
  ])('refuses an operation name holding %s on a configured plan', async (_label, operation) => {
    const { service } = await configured({ requiredConfirmations: ['deploy'] });
    expect(await rejectedField(service.checkConfirmation('plan', operation))).toBe('operation');
    expect((await trailOf(service)).size).toBe(0);
  });

  it('refuses an operation name holding an invisible character on an unconfigured plan', async () => {
    const { service } = setup();
    expect(await rejectedField(service.checkConfirmation('plan', 'de\u200bploy'))).toBe('operation');
  });

  it('refuses an operation name of only space', async () => {
    const { service } = await configured({ requiredConfirmations: ['deploy'] });
    expect(await rejectedField(service.checkConfirmation('plan', '   '))).toBe('operation');
  });

  it('refuses an operation name longer than metadataLimits.maxOperationNameLength', async () => {
    const { service } = await configured({}, { metadataLimits: { maxOperationNameLength: 6 } });
    expect((await service.checkConfirmation('plan', 'deploy')).allowed).toBe(true);
    expect(await rejectedField(service.checkConfirmation('plan', 'deploys'))).toBe('operation');
  });
});

describe('confirmation names that normalize in more than one pass', () => {
  it('answers as the model does for a capital with a combining mark', async () => {
    const { service } = await configured({ requiredConfirmations: ['PUSH\u0331'] });
    const model = await guardrailsOf(service);
    const check = await service.checkConfirmation('plan', 'PUSH\u0331');
    expect(check.eventType).toBe('confirmation_required');
    expect(model.checkConfirmation('PUSH\u0331').eventType).toBe('confirmation_required');
  });
});

describe('bad arguments', () => {
  it('refuses a store that does not implement GuardrailStore', () => {
    expect(fieldOf(() => new AutonomyGuardrailService({ store: {} as never }))).toBe('store');
  });

  it('refuses metadata that is not an object', async () => {
    const { service } = await configured({ maxSteps: 1 });
    expect(await rejectedField(service.toMetadata('plan', 'ab' as never))).toBe('metadata');
  });
});

describe('wall clock', () => {
  it('allows a plan still within max_wall_clock_seconds on the injected clock', async () => {
    const { service, clock } = await configured({ maxWallClockSeconds: 60, startTime: T0_ISO });
    clock.advance(59_999);
    expect((await service.checkWallClock('plan')).allowed).toBe(true);
  });

  it('blocks a plan once max_wall_clock_seconds have passed on the injected clock', async () => {
    const { service, clock } = await configured({ maxWallClockSeconds: 60, startTime: T0_ISO });
    clock.advance(60_000);
    const check = await service.checkWallClock('plan');
    expect(check.allowed).toBe(false);
    expect(check.eventType).toBe('wall_clock_blocked');
  });

  it('allows a plan with a limit that has not started, saying so', async () => {
    const { service, clock } = await configured({ maxWallClockSeconds: 60 });
    clock.advance(3_600_000);
    const check = await service.checkWallClock('plan');
    expect(check.allowed).toBe(true);
    expect(check.reason).toMatch(/not started/);
  });

  it('allows a plan with no wall-clock limit', async () => {
    const { service, clock } = await configured({ startTime: T0_ISO });
    clock.advance(10 * 365 * 86_400_000);
    expect((await service.checkWallClock('plan')).allowed).toBe(true);
  });

  it('sets start_time to the clock time on markStarted', async () => {
    const { service, clock } = await configured({ maxWallClockSeconds: 60 });
    clock.advance(5000);
    await service.markStarted('plan');
    expect((await guardrailsOf(service)).startTime).toBe(new Date(T0 + 5000).toISOString());
  });

  it('keeps the first start time when markStarted is called again', async () => {
    const { service, clock } = await configured({ maxWallClockSeconds: 60 });
    await service.markStarted('plan');
    clock.advance(30_000);
    await service.markStarted('plan');
    expect((await guardrailsOf(service)).startTime).toBe(T0_ISO);
  });

  it('keeps a configured start time on markStarted', async () => {
    const configuredStart = '2026-11-30T09:00:00.000Z';
    const { service } = await configured({ maxWallClockSeconds: 60, startTime: configuredStart });
    await service.markStarted('plan');
    expect((await guardrailsOf(service)).startTime).toBe(configuredStart);
  });

  it('starts the wall clock at markStarted', async () => {
    const { service, clock } = await configured({ maxWallClockSeconds: 60 });
    clock.advance(3_600_000);
    await service.markStarted('plan');
    clock.advance(59_000);
    expect((await service.checkWallClock('plan')).allowed).toBe(true);
    clock.advance(1000);
    expect((await service.checkWallClock('plan')).allowed).toBe(false);
  });

  it('configures nothing when markStarted is called for an unconfigured plan', async () => {
    const { service } = setup();
    await service.markStarted('plan');
    expect(await service.getGuardrails('plan')).toBeNull();
  });
});

describe('actor limits', () => {
  const actorLimits = { maxToolCallsPerInvocation: 3, maxRetriesPerFailure: 2 };

  it('allows tool calls below max_tool_calls_per_invocation', async () => {
    const { service } = await configured({ actorLimits });
    expect((await service.checkActorToolCalls('plan', 2)).allowed).toBe(true);
  });

  it('blocks tool calls at max_tool_calls_per_invocation', async () => {
    const { service } = await configured({ actorLimits });
    const check = await service.checkActorToolCalls('plan', 3);
    expect(check.allowed).toBe(false);
    expect(check.eventType).toBe('actor_tool_calls_blocked');
  });

  it('allows retries below max_retries_per_failure', async () => {
    const { service } = await configured({ actorLimits });
    expect((await service.checkRetries('plan', 1)).allowed).toBe(true);
  });

  it('blocks retries at max_retries_per_failure', async () => {
    const { service } = await configured({ actorLimits });
    const check = await service.checkRetries('plan', 2);
    expect(check.allowed).toBe(false);
    expect(check.eventType).toBe('retry_blocked');
  });

  it('refuses a negative tool-call count', async () => {
    const { service } = await configured({ actorLimits });
    expect(await rejectedField(service.checkActorToolCalls('plan', -1))).toBe('current_calls');
  });

  it('refuses a retry check whose error is not a text', async () => {
    const { service } = await configured({ actorLimits });
    const bad = { error: 7 } as unknown as { error: string };
    expect(await rejectedField(service.checkRetries('plan', 0, bad))).toBe('options.error');
  });

  it('refuses a fractional retry count', async () => {
    const { service } = await configured({ actorLimits });
    expect(await rejectedField(service.checkRetries('plan', 0.5))).toBe('current_retries');
  });
});

describe('unconfigured plans', () => {
  it.each(CHECKS)('%s allows an unconfigured plan by default', async (_name, call) => {
    const { service } = setup();
    expect((await call(service, 'unknown')).allowed).toBe(true);
  });

  it.each(CHECKS)('%s denies an unconfigured plan with unconfiguredPlans "deny"', async (_name, call) => {
    const { service } = setup({ unconfiguredPlans: 'deny' });
    const check = await call(service, 'unknown');
    expect(check.allowed).toBe(false);
    expect(check.result).toBe('denied');
  });

  it.each(CHECKS)('%s stores and records nothing for an unconfigured plan', async (_name, call) => {
    const { service } = setup();
    await call(service, 'unknown');
    expect(await service.getGuardrails('unknown')).toBeNull();
    expect(await service.getAuditTrail('unknown')).toBeNull();
  });

  it('denies with the event type of the guard asked', async () => {
    const { service } = setup({ unconfiguredPlans: 'deny' });
    expect((await service.checkConfirmation('unknown', 'deploy')).eventType).toBe('confirmation_required');
    expect((await service.checkToolBudget('unknown', 1)).eventType).toBe('budget_blocked');
  });
});

describe('plan ids databases cannot keep apart', () => {
  it('refuses a plan id holding a lone surrogate, naming plan_id', async () => {
    const { service } = await configured({ maxSteps: 1 });
    expect(await rejectedField(service.configureGuardrails('plan-\ud800', { maxSteps: 1 }))).toBe('plan_id');
  });
});

describe('a store that cannot be reached', () => {
  /** A memory store whose updates fail with `error`: by default, as a store that cannot be reached. */
  function unreachable(
    error: Error = new GuardrailError('STORE_UNAVAILABLE', 'connect ECONNREFUSED 127.0.0.1:5432'),
  ): MemoryStore {
    const store = new MemoryStore();
    store.update = (() => Promise.reject(error)) as MemoryStore['update'];
    return store;
  }

  it.each([
    ['unknown', 'allow'],
    ['null', null],
  ])('refuses a storeUnavailable value that is %s', (_label, storeUnavailable) => {
    const options = { storeUnavailable } as unknown as AutonomyGuardrailServiceOptions;
    expect(fieldOf(() => new AutonomyGuardrailService(options))).toBe('storeUnavailable');
  });

  it.each(CHECKS)('%s rejects with STORE_UNAVAILABLE by default', async (_name, call) => {
    const { service } = setup({ store: unreachable() });
    await expect(call(service, 'plan')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
  });

  it.each(CHECKS)('%s answers denied, saying why, with storeUnavailable "deny"', async (_name, call) => {
    const { service } = setup({ store: unreachable(), storeUnavailable: 'deny' });
    const check = await call(service, 'plan');
    expect([check.allowed, check.result === 'allowed', check.reason]).toEqual([
      false,
      false,
      'nothing is allowed while the store cannot be reached: connect ECONNREFUSED 127.0.0.1:5432',
    ]);
  });

  it('answers a reservation that is not open with storeUnavailable "deny"', async () => {
    const { service } = setup({ store: unreachable(), storeUnavailable: 'deny' });
    const reservation = await service.reserveBudget('plan', 1, { reservationId: 'r1' });
    expect([reservation.check.allowed, reservation.check.eventType]).toEqual([false, 'budget_blocked']);
  });

  it('answers a confirmation required, with no approval to wait for, with storeUnavailable "deny"', async () => {
    const { service } = setup({ store: unreachable(), storeUnavailable: 'deny' });
    const request = await service.requestConfirmation('plan', {
      decisionId: 'd1',
      operation: 'deploy',
      ttlMs: 60_000,
    });
    expect([request.check.eventType, request.approval]).toEqual(['confirmation_required', undefined]);
  });

  it('still rejects with errors other than an unreachable store with storeUnavailable "deny"', async () => {
    const corrupt = new GuardrailError('STORE_CORRUPT', 'unreadable guardrails');
    const { service } = setup({ store: unreachable(corrupt), storeUnavailable: 'deny' });
    await expect(service.checkToolBudget('plan', 1)).rejects.toBe(corrupt);
  });

  it('still rejects a change that may have been committed with storeUnavailable "deny"', async () => {
    const lost = new StoreOutcomeUnknownError('the connection was lost during the write');
    const { service } = setup({ store: unreachable(lost), storeUnavailable: 'deny' });
    await expect(service.checkToolBudget('plan', 1)).rejects.toBe(lost);
  });

  it('checkToolCalls rejects with STORE_UNAVAILABLE by default', async () => {
    const { service } = setup({ store: unreachable() });
    await expect(service.checkToolCalls('plan', 'search', 5)).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
    });
  });

  it('checkToolCalls answers denied with storeUnavailable "deny"', async () => {
    const { service } = setup({ store: unreachable(), storeUnavailable: 'deny' });
    const check = await service.checkToolCalls('plan', 'search', 5);
    expect([check.allowed, check.eventType]).toEqual([false, 'tool_calls_blocked']);
  });
});
