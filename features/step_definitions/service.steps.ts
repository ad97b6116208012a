import assert from 'node:assert/strict';
import { Given, Then, When } from '@cucumber/cucumber';
import {
  AutonomyGuardrailService,
  DEFAULT_METADATA_LIMITS,
  GuardrailEventType,
  type GuardrailsInit,
} from '../../src/index.js';
import { need, type GuardrailsWorld } from '../support/world.js';

const service = (w: GuardrailsWorld) => need(w.service, 'service');
const check = (w: GuardrailsWorld) => need(w.check, 'check');

async function serviceWith(world: GuardrailsWorld, planId: string, init: GuardrailsInit): Promise<void> {
  await world.newService().configureGuardrails(planId, init);
  world.lastPlanId = planId;
}

Given('an autonomy guardrail service', function (this: GuardrailsWorld) {
  this.newService();
});

Given(
  'an autonomy guardrail service with guardrails for plan {string}',
  async function (this: GuardrailsWorld, planId: string) {
    await serviceWith(this, planId, { maxSteps: 10, toolBudget: 100 });
  },
);

Given(
  'an autonomy guardrail service with budget guardrails for plan {string}',
  async function (this: GuardrailsWorld, planId: string) {
    await serviceWith(this, planId, { toolBudget: 100 });
  },
);

Given(
  'an autonomy guardrail service with confirmation guardrails for plan {string}',
  async function (this: GuardrailsWorld, planId: string) {
    await serviceWith(this, planId, { requiredConfirmations: ['deploy', 'delete'] });
  },
);

Given(
  'an autonomy guardrail service with wall-clock guardrails for plan {string}',
  async function (this: GuardrailsWorld, planId: string) {
    await serviceWith(this, planId, { maxWallClockSeconds: 60, startTime: this.secondsAgo(10) });
  },
);

Given(
  'an autonomy guardrail service with actor-limit guardrails for plan {string}',
  async function (this: GuardrailsWorld, planId: string) {
    await serviceWith(this, planId, { actorLimits: { maxToolCallsPerInvocation: 5 } });
  },
);

Given(
  'an autonomy guardrail service with retry-limit guardrails for plan {string}',
  async function (this: GuardrailsWorld, planId: string) {
    await serviceWith(this, planId, { actorLimits: { maxRetriesPerFailure: 3 } });
  },
);

Given(
  'a guardrail service with max_retries_per_failure {int} for plan {string}',
  async function (this: GuardrailsWorld, n: number, planId: string) {
    await serviceWith(this, planId, { actorLimits: { maxRetriesPerFailure: n } });
  },
);

When(
  'I configure guardrails for plan {string} with max_steps {int}',
  async function (this: GuardrailsWorld, planId: string, maxSteps: number) {
    await service(this).configureGuardrails(planId, { maxSteps });
    this.lastPlanId = planId;
  },
);

Then(
  'the service should return guardrails for plan {string}',
  async function (this: GuardrailsWorld, planId: string) {
    const g = await service(this).getGuardrails(planId);
    assert.ok(g, `no guardrails for ${planId}`);
    this.guardrails = g;
  },
);

Then('the service guardrails should have max_steps {int}', async function (this: GuardrailsWorld, n: number) {
  const g = await service(this).getGuardrails(need(this.lastPlanId, 'plan'));
  assert.equal(g?.maxSteps, n);
});

Then(
  'the service guardrails budget_spent should be {float}',
  async function (this: GuardrailsWorld, n: number) {
    const g = await service(this).getGuardrails(need(this.lastPlanId, 'plan'));
    assert.equal(g?.budgetSpent, n);
  },
);

Then(
  'the service should return None for plan {string}',
  async function (this: GuardrailsWorld, planId: string) {
    assert.equal(await service(this).getGuardrails(planId), null);
    assert.equal(await service(this).getAuditTrail(planId), null);
  },
);

When(
  'I check step limit via service for plan {string} at step {int}',
  async function (this: GuardrailsWorld, planId: string, step: number) {
    this.check = await service(this).checkStepLimit(planId, step);
  },
);

When(
  'I check tool budget via service for plan {string} with cost {float}',
  async function (this: GuardrailsWorld, planId: string, cost: number) {
    this.check = await service(this).checkToolBudget(planId, cost);
  },
);

When(
  'I check confirmation via service for plan {string} operation {string}',
  async function (this: GuardrailsWorld, planId: string, operation: string) {
    this.check = await service(this).checkConfirmation(planId, operation);
  },
);

When(
  'I check wall-clock via service for plan {string}',
  async function (this: GuardrailsWorld, planId: string) {
    this.check = await service(this).checkWallClock(planId);
  },
);

When(
  'I check actor tool calls via service for plan {string} with {int} calls',
  async function (this: GuardrailsWorld, planId: string, n: number) {
    this.check = await service(this).checkActorToolCalls(planId, n);
  },
);

When(
  'I check retries via service for plan {string} with {int} retries',
  async function (this: GuardrailsWorld, planId: string, n: number) {
    this.check = await service(this).checkRetries(planId, n);
  },
);

When(
  'I check retries for plan {string} incrementing from {int} to {int}',
  async function (this: GuardrailsWorld, planId: string, from: number, to: number) {
    for (let n = from; n <= to; n++) this.retryChecks.push(await service(this).checkRetries(planId, n));
  },
);

Then(
  /^retry checks ([\d, ]+) should be (allowed|denied)$/,
  function (this: GuardrailsWorld, list: string, verdict: string) {
    for (const n of list.split(',').map((s) => Number(s.trim()))) {
      const c = this.retryChecks[n];
      assert.ok(c, `no retry check ${n}`);
      assert.equal(c.result, verdict, `retry check ${n}: ${c.reason}`);
    }
  },
);

Then(
  'the audit trail for plan {string} should have {int} entry',
  async function (this: GuardrailsWorld, planId: string, n: number) {
    const trail = await service(this).getAuditTrail(planId);
    assert.ok(trail, `no audit trail for ${planId}`);
    assert.equal(trail.size, n);
    if (this.check) assert.equal(trail.entries.at(-1)?.eventType, this.check.eventType);
  },
);

Then('the step limit check should return True', function (this: GuardrailsWorld) {
  assert.equal(check(this).allowed, true);
  assert.equal(check(this).eventType, GuardrailEventType.STEP_ALLOWED);
});

Then('the tool budget check should return True', function (this: GuardrailsWorld) {
  assert.equal(check(this).allowed, true);
  assert.equal(check(this).eventType, GuardrailEventType.BUDGET_ALLOWED);
});

// The spec's check_confirmation answers "is confirmation required?": False means it is not.
Then('the confirmation check should return False', function (this: GuardrailsWorld) {
  assert.equal(check(this).eventType, GuardrailEventType.CONFIRMATION_NOT_REQUIRED);
});

Then('the retry service check should return False', function (this: GuardrailsWorld) {
  assert.equal(check(this).allowed, false);
  assert.equal(check(this).eventType, GuardrailEventType.RETRY_BLOCKED);
});

When('I try to configure guardrails with empty plan_id', async function (this: GuardrailsWorld) {
  await this.attemptAsync(() => service(this).configureGuardrails('', { maxSteps: 5 }));
});

When('I remove plan {string} from the service', async function (this: GuardrailsWorld, planId: string) {
  assert.equal(await service(this).removePlan(planId), true);
});

// ---- metadata ----

function wireState(init: { requiredConfirmations?: string[]; entries?: number }): Record<string, unknown> {
  const entries = Array.from({ length: init.entries ?? 1 }, (_, i) => ({
    event_type: 'step_allowed',
    guard_name: 'step_limit',
    result: 'allowed',
    timestamp: new Date(Date.UTC(2026, 10, 30, 10, 0, 0, i)).toISOString(),
    details: { step: i, limit: 5 },
  }));
  return {
    autonomy_guardrails: {
      schema_version: 1,
      guardrails: {
        max_steps: 5,
        tool_budget: 10,
        required_confirmations: init.requiredConfirmations ?? ['deploy'],
        max_wall_clock_seconds: null,
        start_time: '2026-11-30T10:00:00.000Z',
        actor_limits: { max_tool_calls_per_invocation: null, max_retries_per_failure: 3 },
        step_count: 1,
        budget_spent: 2.5,
      },
      audit_trail: {
        max_entries: Math.max(1000, entries.length),
        allowed_count: entries.length,
        denied_count: 0,
        entries,
      },
    },
  };
}

When(
  'I load guardrails from metadata for plan {string}',
  async function (this: GuardrailsWorld, planId: string) {
    const g = await service(this).loadFromMetadata(planId, wireState({}));
    assert.equal(g.budgetSpent, 2.5);
  },
);

When(
  'I try to load metadata with oversized audit trail for plan {string}',
  async function (this: GuardrailsWorld, planId: string) {
    const metadata = wireState({ entries: DEFAULT_METADATA_LIMITS.maxAuditEntries + 1 });
    await this.attemptAsync(() => service(this).loadFromMetadata(planId, metadata));
    assert.equal(await service(this).getGuardrails(planId), null, 'a refused load must store nothing');
  },
);

When(
  'I try to load metadata with oversized confirmations for plan {string}',
  async function (this: GuardrailsWorld, planId: string) {
    const names = Array.from(
      { length: DEFAULT_METADATA_LIMITS.maxRequiredConfirmations + 1 },
      (_, i) => `op-${i}`,
    );
    await this.attemptAsync(() =>
      service(this).loadFromMetadata(planId, wireState({ requiredConfirmations: names })),
    );
    assert.equal(await service(this).getGuardrails(planId), null, 'a refused load must store nothing');
  },
);

Then(
  'the metadata for plan {string} should contain the audit trail',
  async function (this: GuardrailsWorld, planId: string) {
    const metadata = await service(this).toMetadata(planId, { owner: 'ops' });
    assert.equal(metadata['owner'], 'ops');
    const state = metadata['autonomy_guardrails'] as { audit_trail: { entries: { event_type: string }[] } };
    assert.equal(state.audit_trail.entries.length, 1);
    assert.equal(state.audit_trail.entries[0]?.event_type, GuardrailEventType.STEP_ALLOWED);
  },
);

When(
  'I serialize and restore metadata for plan {string}',
  async function (this: GuardrailsWorld, planId: string) {
    const wire = JSON.stringify(await service(this).toMetadata(planId));
    this.restored = new AutonomyGuardrailService({ clock: this.clock });
    await this.restored.loadFromMetadata(planId, JSON.parse(wire));
  },
);

Then(
  'the restored guardrails for plan {string} should match the original',
  async function (this: GuardrailsWorld, planId: string) {
    const restored = need(this.restored, 'restored service');
    assert.deepEqual(await restored.toMetadata(planId), await service(this).toMetadata(planId));
    assert.equal((await restored.getAuditTrail(planId))?.size, 1);
  },
);
