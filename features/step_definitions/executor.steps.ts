import assert from 'node:assert/strict';
import { Given, Then, When } from '@cucumber/cucumber';
import { AutonomyGuardrailService, PlanExecutor, type Tool } from '../../src/index.js';
import { need, type GuardrailsWorld } from '../support/world.js';

const PLAN_ID = 'plan-exec';

const echo: Tool = { name: 'echo', description: 'returns its input', run: (input) => input };

function executorWith(world: GuardrailsWorld, withService: boolean): void {
  world.service = withService ? new AutonomyGuardrailService({ clock: world.clock }) : undefined;
  world.executor = new PlanExecutor({ service: world.service ?? null, tools: [echo] });
}

Given(
  'a plan executor with guardrail service and step limit {int}',
  function (this: GuardrailsWorld, maxSteps: number) {
    executorWith(this, true);
    this.executorGuardrails = { maxSteps };
  },
);

Given('a plan executor with guardrail service and expired wall-clock', function (this: GuardrailsWorld) {
  executorWith(this, true);
  this.executorGuardrails = { maxWallClockSeconds: 60, startTime: this.secondsAgo(120) };
});

Given('a plan executor with guardrail service and no wall-clock limit', function (this: GuardrailsWorld) {
  executorWith(this, true);
  this.executorGuardrails = { maxWallClockSeconds: null };
});

Given('a plan executor without guardrail service', function (this: GuardrailsWorld) {
  executorWith(this, false);
});

Given('a plan in execute phase with {int} decisions', async function (this: GuardrailsWorld, n: number) {
  this.plan = {
    id: PLAN_ID,
    phase: 'execute',
    decisions: Array.from({ length: n }, (_, i) => ({ id: `d${i + 1}`, tool: 'echo', input: { n: i + 1 } })),
    metadata: {},
  };
  if (this.service && this.executorGuardrails) {
    await this.service.configureGuardrails(PLAN_ID, this.executorGuardrails);
  }
});

When('I run execute on the plan', async function (this: GuardrailsWorld) {
  this.result = await need(this.executor, 'executor').execute(need(this.plan, 'plan'));
});

function expectViolation(world: GuardrailsWorld, guardName: string, completedBefore: number): void {
  const result = need(world.result, 'execution result');
  assert.equal(result.status, 'failed');
  assert.equal(result.violation?.check.guardName, guardName, result.violation?.message);
  assert.equal(result.completed.length, completedBefore, 'work done before the violation is kept');
  assert.equal(need(world.plan, 'plan').phase, 'failed');
}

Then('execution should fail with a guardrail step limit error', function (this: GuardrailsWorld) {
  const maxSteps = need(this.executorGuardrails?.maxSteps ?? undefined, 'step limit');
  expectViolation(this, 'step_limit', maxSteps);
});

Then('execution should fail with a guardrail wall-clock error', function (this: GuardrailsWorld) {
  expectViolation(this, 'wall_clock', 0);
});

Then('execution should succeed', function (this: GuardrailsWorld) {
  const result = need(this.result, 'execution result');
  assert.equal(result.status, 'completed');
  assert.deepEqual(
    result.completed.map((c) => c.output),
    need(this.plan, 'plan').decisions.map((d) => d.input),
  );
});

Then('the guardrails start_time should have been set', async function (this: GuardrailsWorld) {
  const g = await need(this.service, 'service').getGuardrails(PLAN_ID);
  assert.equal(g?.startTime, new Date(this.clock.now()).toISOString());
});
