import { describe, expect, it } from 'vitest';
import {
  GuardrailValidationError,
  isGuardrailError,
  NonRetryableError,
  toolResult,
  type Plan,
  type ToolRule,
} from '../../src/index.js';
import { deferred, echo, guardrailsOf, harness, planOf, tool } from '../support/executor.js';

const confirmRule = (): ReadonlyMap<string, ToolRule> =>
  new Map([['deploy', { maxCallsPerPlan: null, costPerCall: null, requiresConfirmation: true }]]);

describe('paused state read from plan metadata', () => {
  it('counts the step and asks a person when the paused approval is not in the store', async () => {
    const deploy = tool('deploy');
    const { executor, service } = await harness([deploy], {
      guardrails: { requiredConfirmations: ['deploy'], maxSteps: 5 },
    });
    const plan: Plan = {
      id: 'plan',
      phase: 'awaiting_confirmation',
      decisions: [{ id: 'd1', tool: 'deploy', input: { env: 'prod' } }],
      metadata: {
        leash_execution: {
          version: 1,
          next: 0,
          completed: [],
          paused: { decision_id: 'd1', approval_id: 'forged' },
        },
      },
    };
    const result = await executor.resume(plan);
    expect([result.status, deploy.calls.length, (await guardrailsOf(service)).stepCount]).toEqual([
      'awaiting_confirmation',
      0,
      1,
    ]);
  });

  it('refuses paused state that claims grants it cannot hold', async () => {
    const { executor } = await harness([tool('deploy')], {
      guardrails: { requiredConfirmations: ['deploy'] },
    });
    const paused = { decision_id: 'd1', approval_id: 'x', step_taken: true, granted: ['deploy'] };
    const plan: Plan = {
      id: 'plan',
      phase: 'awaiting_confirmation',
      decisions: [{ id: 'd1', tool: 'deploy' }],
      metadata: { leash_execution: { version: 1, next: 0, completed: [], paused } },
    };
    await expect(executor.resume(plan)).rejects.toBeInstanceOf(GuardrailValidationError);
  });

  it('refuses progress whose next decision disagrees with the decisions completed', async () => {
    const { executor } = await harness([echo]);
    const plan = planOf([{ id: 'd1', tool: 'echo' }]);
    plan.metadata = { leash_execution: { version: 1, next: 1, completed: [], paused: null } };
    await expect(executor.execute(plan)).rejects.toBeInstanceOf(GuardrailValidationError);
  });
});

describe('confirmation that a tool rule demands', () => {
  it('pauses for a tool whose rule requires confirmation, whatever the plan list says', async () => {
    const { executor } = await harness([tool('deploy')], { toolRules: confirmRule() });
    expect((await executor.execute(planOf([{ id: 'd1', tool: 'deploy' }]))).status).toBe(
      'awaiting_confirmation',
    );
  });

  it('refuses a nested call of a tool whose rule requires confirmation', async () => {
    const deploy = tool('deploy', { operation: 'ship' });
    const wrapper = tool('wrapper', { run: (_i, ctx) => ctx.callTool('deploy', 'prod') });
    const { executor } = await harness([deploy, wrapper], { toolRules: confirmRule() });
    const result = await executor.execute(planOf([{ id: 'd1', tool: 'wrapper' }]));
    expect([result.status, result.violation?.check.eventType, deploy.calls.length]).toEqual([
      'failed',
      'confirmation_required',
      0,
    ]);
  });
});

describe('retries and failures', () => {
  it('stops after retry.maxRetries when the guardrails set no retry limit', async () => {
    const flaky = tool('flaky', {
      run: () => {
        throw new TypeError('down');
      },
    });
    const { executor } = await harness([flaky], { retry: { maxRetries: 2 } });
    const result = await executor.execute(planOf([{ id: 'd1', tool: 'flaky' }]));
    expect([result.status, flaky.calls.length]).toEqual(['failed', 3]);
  });

  it('does not retry a guard error thrown inside a tool', async () => {
    const caller = tool('caller', { run: (_i, ctx) => ctx.callTool('no-such-tool') });
    const { executor, delays } = await harness([caller], {
      guardrails: { actorLimits: { maxRetriesPerFailure: 3 } },
    });
    await executor.execute(planOf([{ id: 'd1', tool: 'caller' }]));
    expect([caller.calls.length, delays]).toEqual([1, []]);
  });

  it('refuses a negative reported cost where the tool reports it, and does not retry the call', async () => {
    const lying = tool('lying', { cost: 0.5, run: () => toolResult('done', { cost: -1 }) });
    const { executor } = await harness([lying], {
      guardrails: { toolBudget: 10, actorLimits: { maxRetriesPerFailure: 2 } },
    });
    const result = await executor.execute(planOf([{ id: 'd1', tool: 'lying' }]));
    expect([result.status, lying.calls.length, isGuardrailError(result.error)]).toEqual(['failed', 1, true]);
  });

  it('charges the estimate of a call whose result carries an unreadable cost, keeps its work, and stops', async () => {
    const forged = { [Symbol.for('leash.ToolResult')]: true, output: 'done', cost: Number.NaN };
    const odd = tool('odd', { cost: 0.5, run: () => forged });
    const { executor, service } = await harness([odd, echo], { guardrails: { toolBudget: 10 } });
    const result = await executor.execute(
      planOf([
        { id: 'd1', tool: 'odd' },
        { id: 'd2', tool: 'echo' },
      ]),
    );
    expect([
      result.status,
      result.completed.map((c) => c.decisionId),
      (await guardrailsOf(service)).budgetSpent,
    ]).toEqual(['failed', ['d1'], 0.5]);
  });

  it('refuses before anything runs a plan whose cost function gives no valid estimate', async () => {
    const priced = tool('priced', { cost: () => Number.NaN });
    const { executor, service } = await harness([priced], { guardrails: { maxSteps: 3 } });
    await expect(executor.execute(planOf([{ id: 'd1', tool: 'priced' }]))).rejects.toMatchObject({
      field: 'plan.decisions[0].cost',
    });
    expect((await guardrailsOf(service)).stepCount).toBe(0);
  });
});

describe('progress after a budget overrun', () => {
  it('moves past the decision that ran and overran, so running on does not repeat it', async () => {
    const metered = tool('metered', { run: () => toolResult('x', { cost: 2 }) });
    const { executor, service } = await harness([metered, echo], { guardrails: { toolBudget: 1 } });
    const plan = planOf([
      { id: 'd1', tool: 'metered' },
      { id: 'd2', tool: 'echo' },
    ]);
    await executor.execute(plan);
    await service.configureGuardrails('plan', { toolBudget: 100 });
    plan.phase = 'execute';
    const again = await executor.execute(plan);
    expect([again.completed.map((c) => c.decisionId), metered.calls.length]).toEqual([['d1', 'd2'], 1]);
  });
});

describe('calls from inside a tool', () => {
  it('keeps a tool running when the abort timer fires before the wall clock ran out', async () => {
    const started = deferred();
    const slow = tool('slow', {
      run: () => {
        started.resolve();
        return new Promise((r) => setImmediate(() => r('done')));
      },
    });
    const { executor, timers } = await harness([slow], { guardrails: { maxWallClockSeconds: 60 } });
    const running = executor.execute(planOf([{ id: 'd1', tool: 'slow' }]));
    await started.promise;
    timers.fire();
    expect((await running).status).toBe('completed');
  });

  it('refuses a call made through a context kept after its invocation ended', async () => {
    let keep: ((name: string) => Promise<unknown>) | undefined;
    const keeper = tool('keeper', {
      run: (_i, ctx) => {
        keep = (name) => ctx.callTool(name, 'late');
        return 'ok';
      },
    });
    const spy = tool('spy');
    const { executor } = await harness([keeper, spy]);
    await executor.execute(planOf([{ id: 'd1', tool: 'keeper' }]));
    await expect(keep?.('spy')).rejects.toMatchObject({ code: 'INVOCATION_ENDED' });
    expect(spy.calls).toEqual([]);
  });

  it('waits for nested calls still in flight, so their cost is in the state it saves', async () => {
    const gate = deferred();
    const slow = tool('slow', {
      cost: 0.5,
      run: async () => {
        await gate.promise;
        return 'late';
      },
    });
    const fail = tool('fail', {
      run: () => {
        throw new NonRetryableError('boom');
      },
    });
    const fan = tool('fan', { run: (_i, ctx) => Promise.all([ctx.callTool('slow'), ctx.callTool('fail')]) });
    const { executor } = await harness([slow, fail, fan], { guardrails: { toolBudget: 10 } });
    const plan = planOf([{ id: 'd1', tool: 'fan' }]);
    setImmediate(() => gate.resolve());
    await executor.execute(plan);
    const saved = (plan.metadata['autonomy_guardrails'] as { guardrails: { budget_spent: number } })
      .guardrails;
    expect(saved.budget_spent).toBe(0.5);
  });
});
