import assert from 'node:assert/strict';
import { Given, Then, When } from '@cucumber/cucumber';
import {
  ActorLimits,
  AutonomyGuardrails,
  GuardrailEventType,
  GuardrailResult,
  isGuardrailValidationError,
  type GuardrailsInit,
} from '../../src/index.js';
import { need, type GuardrailsWorld } from '../support/world.js';

function given(world: GuardrailsWorld, init: GuardrailsInit): void {
  world.guardrails = AutonomyGuardrails.create(init);
}

const guardrails = (w: GuardrailsWorld) => need(w.guardrails, 'guardrails');
const check = (w: GuardrailsWorld) => need(w.check, 'check');

// ---- creation and validation ----

When(
  'I create autonomy guardrails with max_steps {int} and tool_budget {float}',
  function (this: GuardrailsWorld, maxSteps: number, toolBudget: number) {
    given(this, { maxSteps, toolBudget });
  },
);

When('I create autonomy guardrails with defaults', function (this: GuardrailsWorld) {
  given(this, {});
});

Then('the guardrails should have max_steps {int}', function (this: GuardrailsWorld, n: number) {
  assert.equal(guardrails(this).maxSteps, n);
});

Then('the guardrails should have tool_budget {float}', function (this: GuardrailsWorld, n: number) {
  assert.equal(guardrails(this).toolBudget, n);
});

Then('the guardrails step_count should be {int}', function (this: GuardrailsWorld, n: number) {
  assert.equal(guardrails(this).stepCount, n);
});

Then('the guardrails budget_spent should be {float}', function (this: GuardrailsWorld, n: number) {
  assert.equal(guardrails(this).budgetSpent, n);
});

Then('the guardrails should have max_steps None', function (this: GuardrailsWorld) {
  assert.equal(guardrails(this).maxSteps, null);
});

Then('the guardrails should have tool_budget None', function (this: GuardrailsWorld) {
  assert.equal(guardrails(this).toolBudget, null);
});

Then('the guardrails should have empty required_confirmations', function (this: GuardrailsWorld) {
  assert.deepEqual(guardrails(this).requiredConfirmations, []);
});

When('I try to create guardrails with max_steps {int}', function (this: GuardrailsWorld, maxSteps: number) {
  this.attempt(() => AutonomyGuardrails.create({ maxSteps }));
});

When(
  'I try to create guardrails with tool_budget {float}',
  function (this: GuardrailsWorld, toolBudget: number) {
    this.attempt(() => AutonomyGuardrails.create({ toolBudget }));
  },
);

When(
  'I try to create guardrails with max_wall_clock_seconds {int}',
  function (this: GuardrailsWorld, maxWallClockSeconds: number) {
    this.attempt(() => AutonomyGuardrails.create({ maxWallClockSeconds }));
  },
);

When(
  'I try to create actor limits with max_tool_calls_per_invocation {int}',
  function (this: GuardrailsWorld, maxToolCallsPerInvocation: number) {
    this.attempt(() => ActorLimits.create({ maxToolCallsPerInvocation }));
  },
);

When(
  'I try to create actor limits with max_retries_per_failure {int}',
  function (this: GuardrailsWorld, maxRetriesPerFailure: number) {
    this.attempt(() => ActorLimits.create({ maxRetriesPerFailure }));
  },
);

Then('a guardrails validation error should be raised', function (this: GuardrailsWorld) {
  assert.ok(
    isGuardrailValidationError(this.error),
    `expected a GuardrailValidationError, got ${String(this.error)}`,
  );
});

Then('the guardrails error should mention {string}', function (this: GuardrailsWorld, text: string) {
  assert.ok(
    isGuardrailValidationError(this.error),
    `expected a GuardrailValidationError, got ${String(this.error)}`,
  );
  assert.match(this.error.message, new RegExp(text));
  assert.ok(this.error.field?.includes(text), `field ${String(this.error.field)} should name ${text}`);
});

// ---- start_time ----

When('I create guardrails with a valid start_time', function (this: GuardrailsWorld) {
  given(this, { startTime: '2026-11-30T09:30:00+01:00' });
});

Then('the guardrails start_time should be set', function (this: GuardrailsWorld) {
  assert.equal(guardrails(this).startTime, '2026-11-30T08:30:00.000Z');
});

When(
  'I try to create guardrails with start_time {string}',
  function (this: GuardrailsWorld, startTime: string) {
    this.attempt(() => AutonomyGuardrails.create({ startTime }));
  },
);

Then('the guardrails start_time should be None', function (this: GuardrailsWorld) {
  assert.equal(guardrails(this).startTime, null);
});

Given('guardrails with a malformed start_time bypassing validation', function (this: GuardrailsWorld) {
  const g = AutonomyGuardrails.create({ maxWallClockSeconds: 60, startTime: this.secondsAgo(1) });
  // State can arrive by roads other than create(), e.g. a hand-edited database row.
  (g as { startTime: string | null }).startTime = 'not-a-date';
  this.guardrails = g;
});

// ---- step limit ----

Given('guardrails with max_steps {int}', function (this: GuardrailsWorld, maxSteps: number) {
  given(this, { maxSteps });
});

Given('guardrails with no step limit', function (this: GuardrailsWorld) {
  given(this, { maxSteps: null });
});

When('I check step limit at step {int}', function (this: GuardrailsWorld, step: number) {
  this.check = guardrails(this).checkStepLimit(step);
});

function expectCheck(world: GuardrailsWorld, eventType: string, verdict: 'allowed' | 'denied'): void {
  const c = check(world);
  assert.equal(c.result, verdict, c.reason);
  assert.equal(c.allowed, verdict === 'allowed');
  assert.equal(c.eventType, eventType);
}

Then('the step check should be allowed', function (this: GuardrailsWorld) {
  expectCheck(this, GuardrailEventType.STEP_ALLOWED, 'allowed');
});

Then('the step check should be denied', function (this: GuardrailsWorld) {
  expectCheck(this, GuardrailEventType.STEP_BLOCKED, 'denied');
});

// ---- budget ----

Given('guardrails with tool_budget {float}', function (this: GuardrailsWorld, toolBudget: number) {
  given(this, { toolBudget });
});

Given(
  'guardrails with tool_budget {float} and budget_spent {float}',
  function (this: GuardrailsWorld, toolBudget: number, budgetSpent: number) {
    given(this, { toolBudget, budgetSpent });
  },
);

Given('guardrails with no budget limit', function (this: GuardrailsWorld) {
  given(this, { toolBudget: null });
});

When('I check tool budget for cost {float}', function (this: GuardrailsWorld, cost: number) {
  this.check = guardrails(this).checkToolBudget(cost);
});

When('I try to check tool budget for cost {float}', function (this: GuardrailsWorld, cost: number) {
  this.attempt(() => guardrails(this).checkToolBudget(cost));
});

Then('the budget check should be allowed', function (this: GuardrailsWorld) {
  expectCheck(this, GuardrailEventType.BUDGET_ALLOWED, 'allowed');
});

Then('the budget check should be denied', function (this: GuardrailsWorld) {
  expectCheck(this, GuardrailEventType.BUDGET_BLOCKED, 'denied');
});

// ---- confirmations ----

Given('guardrails with required confirmations {string}', function (this: GuardrailsWorld, names: string) {
  given(this, { requiredConfirmations: names.split(',') });
});

Given('guardrails with no required confirmations', function (this: GuardrailsWorld) {
  given(this, { requiredConfirmations: [] });
});

When('I check confirmation for operation {string}', function (this: GuardrailsWorld, operation: string) {
  this.check = guardrails(this).checkConfirmation(operation);
});

Then('confirmation should be required', function (this: GuardrailsWorld) {
  expectCheck(this, GuardrailEventType.CONFIRMATION_REQUIRED, 'denied');
});

Then('confirmation should not be required', function (this: GuardrailsWorld) {
  expectCheck(this, GuardrailEventType.CONFIRMATION_NOT_REQUIRED, 'allowed');
});

// ---- counters ----

When('I increment the step counter {int} times', function (this: GuardrailsWorld, times: number) {
  for (let i = 0; i < times; i++) guardrails(this).incrementStep();
});

Then('the step_count should be {int}', function (this: GuardrailsWorld, n: number) {
  assert.equal(guardrails(this).stepCount, n);
});

When('I record a tool cost of {float}', function (this: GuardrailsWorld, cost: number) {
  guardrails(this).recordCost(cost);
});

Then('the budget_spent should be {float}', function (this: GuardrailsWorld, n: number) {
  assert.equal(guardrails(this).budgetSpent, n);
});

When('I try to record a negative cost', function (this: GuardrailsWorld) {
  const before = guardrails(this).budgetSpent;
  this.attempt(() => guardrails(this).recordCost(-1));
  assert.equal(guardrails(this).budgetSpent, before, 'a refused cost must not be recorded');
});

// ---- wall clock ----

Given('guardrails with no wall-clock limit', function (this: GuardrailsWorld) {
  given(this, { maxWallClockSeconds: null, startTime: this.secondsAgo(1_000_000) });
});

Given(
  'guardrails with wall-clock limit {float} seconds started recently',
  function (this: GuardrailsWorld, seconds: number) {
    given(this, { maxWallClockSeconds: seconds, startTime: this.secondsAgo(1) });
  },
);

Given('guardrails with wall-clock limit that has already expired', function (this: GuardrailsWorld) {
  given(this, { maxWallClockSeconds: 60, startTime: this.secondsAgo(120) });
});

When('I check wall-clock time', function (this: GuardrailsWorld) {
  this.check = guardrails(this).checkWallClock(this.clock.now());
});

Then('the wall-clock check should be allowed', function (this: GuardrailsWorld) {
  expectCheck(this, GuardrailEventType.WALL_CLOCK_ALLOWED, 'allowed');
});

Then('the wall-clock check should be denied', function (this: GuardrailsWorld) {
  expectCheck(this, GuardrailEventType.WALL_CLOCK_BLOCKED, 'denied');
});

// ---- actor tool calls ----

Given('guardrails with actor tool-call limit {int}', function (this: GuardrailsWorld, n: number) {
  given(this, { actorLimits: { maxToolCallsPerInvocation: n } });
});

Given('guardrails with no actor tool-call limit', function (this: GuardrailsWorld) {
  given(this, { actorLimits: { maxToolCallsPerInvocation: null } });
});

When('I check actor tool calls with {int} current calls', function (this: GuardrailsWorld, n: number) {
  this.check = guardrails(this).checkActorToolCalls(n);
});

Then('the actor tool-call check should be allowed', function (this: GuardrailsWorld) {
  expectCheck(this, GuardrailEventType.ACTOR_TOOL_CALLS_ALLOWED, 'allowed');
});

Then('the actor tool-call check should be denied', function (this: GuardrailsWorld) {
  expectCheck(this, GuardrailEventType.ACTOR_TOOL_CALLS_BLOCKED, 'denied');
});

// ---- retries ----

Given('guardrails with retry limit {int}', function (this: GuardrailsWorld, n: number) {
  given(this, { actorLimits: { maxRetriesPerFailure: n } });
});

Given('guardrails with no retry limit', function (this: GuardrailsWorld) {
  given(this, { actorLimits: { maxRetriesPerFailure: null } });
});

When('I check retries per failure with {int} current retries', function (this: GuardrailsWorld, n: number) {
  this.check = guardrails(this).checkRetries(n);
});

Then('the retry check should be allowed', function (this: GuardrailsWorld) {
  expectCheck(this, GuardrailEventType.RETRY_ALLOWED, 'allowed');
});

Then('the retry check should be denied', function (this: GuardrailsWorld) {
  expectCheck(this, GuardrailEventType.RETRY_BLOCKED, 'denied');
});

// ---- enumerations ----

Then('GuardrailEventType should have at least {int} members', function (n: number) {
  const values = new Set(Object.values(GuardrailEventType));
  assert.ok(values.size >= n, `${values.size} distinct members`);
});

Then('GuardrailResult should have exactly {int} members', function (n: number) {
  assert.equal(new Set(Object.values(GuardrailResult)).size, n);
});
