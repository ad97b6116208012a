import { describe, expect, it } from 'vitest';
import {
  MemoryStore,
  NonRetryableError,
  toolResult,
  type GuardrailStore,
  type ToolRule,
} from '../../src/index.js';
import {
  decisions,
  detailsOf,
  echo,
  eventsOf,
  guardrailsOf,
  harness,
  numberIn,
  planOf,
  tool,
} from '../support/executor.js';

function rules(name: string, rule: Partial<ToolRule>): ReadonlyMap<string, ToolRule> {
  return new Map([
    [name, { maxCallsPerPlan: null, costPerCall: null, requiresConfirmation: false, ...rule }],
  ]);
}

const ONE_DECISION = [
  'wall_clock_allowed',
  'step_allowed',
  'confirmation_not_required',
  'budget_reserved',
  'budget_committed',
];

describe('the checks made for each decision', () => {
  it('audits wall clock, step, confirmation, reservation and commit, in that order', async () => {
    const { executor, service } = await harness([echo]);
    await executor.execute(planOf(decisions(1)));
    expect(await eventsOf(service)).toEqual(ONE_DECISION);
  });

  it('repeats the checks for every decision', async () => {
    const { executor, service } = await harness([echo]);
    await executor.execute(planOf(decisions(2)));
    expect(await eventsOf(service)).toEqual([...ONE_DECISION, ...ONE_DECISION]);
  });

  it("checks a tool rule's calls per plan after the confirmation and before the reservation", async () => {
    const { executor, service } = await harness([echo], { toolRules: rules('echo', { maxCallsPerPlan: 5 }) });
    await executor.execute(planOf(decisions(1)));
    expect(await eventsOf(service)).toEqual([
      'wall_clock_allowed',
      'step_allowed',
      'confirmation_not_required',
      'tool_calls_allowed',
      'budget_reserved',
      'budget_committed',
    ]);
  });

  it('checks all the operations of a decision for confirmation in one check', async () => {
    const reader = tool('reader', { operation: 'read' });
    const { executor, service } = await harness([reader]);
    await executor.execute(planOf([{ id: 'd1', tool: 'reader', operation: 'list' }]));
    expect(await detailsOf(service, 'confirmation_not_required')).toEqual([
      { operations: ['list', 'read'], limit: null },
    ]);
  });

  it('makes one store update for the checks before a decision runs and one for its settlement', async () => {
    const updatesFor = async (n: number): Promise<number> => {
      const store = new MemoryStore();
      let updates = 0;
      const counting = new Proxy<GuardrailStore>(store, {
        get(target, key) {
          if (key === 'update') updates++;
          const value: unknown = Reflect.get(target, key);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const { executor } = await harness([echo], { store: counting });
      updates = 0;
      await executor.execute(planOf(decisions(n)));
      return updates;
    };

    expect((await updatesFor(3)) - (await updatesFor(1))).toBe(2 * 2);
  });

  it('runs a decision whose id is as long as an id may be', async () => {
    const { executor } = await harness([echo]);
    const result = await executor.execute(planOf([{ id: 'd'.repeat(256), tool: 'echo', input: { n: 1 } }]));
    expect([result.status, result.completed.length]).toEqual(['completed', 1]);
  });

  it('counts one step per decision', async () => {
    const { executor, service } = await harness([echo]);
    await executor.execute(planOf(decisions(3)));
    expect((await guardrailsOf(service)).stepCount).toBe(3);
  });
});

describe('a check that denies stops the checks after it', () => {
  it('stops at the wall clock before a step is counted', async () => {
    const { executor, service } = await harness([echo], {
      guardrails: { maxWallClockSeconds: 60, startTime: '2026-11-30T09:58:00.000Z' },
    });
    await executor.execute(planOf(decisions(1)));
    expect(await eventsOf(service)).toEqual(['wall_clock_blocked']);
    expect((await guardrailsOf(service)).stepCount).toBe(0);
  });

  it('stops at the step limit before the confirmation is checked', async () => {
    const { executor, service } = await harness([echo], { guardrails: { maxSteps: 1 } });
    await executor.execute(planOf(decisions(2)));
    expect((await eventsOf(service)).slice(ONE_DECISION.length)).toEqual([
      'wall_clock_allowed',
      'step_blocked',
    ]);
  });

  it('stops at a confirmation before any budget is reserved', async () => {
    const deploy = tool('deploy', { cost: 1 });
    const { executor, service } = await harness([deploy], {
      guardrails: { requiredConfirmations: ['deploy'], toolBudget: 5 },
    });
    await executor.execute(planOf([{ id: 'd1', tool: 'deploy' }]));
    expect(await eventsOf(service)).toEqual(['wall_clock_allowed', 'step_allowed', 'confirmation_required']);
    expect((await guardrailsOf(service)).budgetReserved).toBe(0);
  });

  it("stops at a tool rule's calls per plan before the reservation", async () => {
    const { executor, service } = await harness([echo], { toolRules: rules('echo', { maxCallsPerPlan: 1 }) });
    const result = await executor.execute(planOf(decisions(2)));
    expect((await eventsOf(service)).slice(-2)).toEqual(['confirmation_not_required', 'tool_calls_blocked']);
    expect(result.violation?.check.guardName).toBe('tool_calls_per_plan');
    expect(result.completed.map((c) => c.decisionId)).toEqual(['d1']);
  });

  it('does not run a tool whose estimate the budget cannot cover', async () => {
    const priced = tool('priced', { cost: 2 });
    const { executor, service } = await harness([priced], { guardrails: { toolBudget: 1.5 } });
    const result = await executor.execute(planOf([{ id: 'd1', tool: 'priced' }]));
    expect(priced.calls).toEqual([]);
    expect((await eventsOf(service)).at(-1)).toBe('budget_blocked');
    expect(result.violation?.check.eventType).toBe('budget_blocked');
    expect((await guardrailsOf(service)).budgetSpent).toBe(0);
  });
});

describe('settling the reservation', () => {
  it('spends the estimate when the tool reports no actual cost', async () => {
    const priced = tool('priced', { cost: 0.4 });
    const { executor, service } = await harness([priced], { guardrails: { toolBudget: 1 } });
    const result = await executor.execute(planOf([{ id: 'd1', tool: 'priced' }]));
    expect(result.completed[0]?.cost).toBe(0.4);
    expect((await guardrailsOf(service)).budgetSpent).toBe(0.4);
  });

  it('spends the actual cost a tool reports in place of the estimate', async () => {
    const metered = tool('metered', { cost: 0.5, run: () => toolResult('done', { cost: 0.125 }) });
    const { executor, service } = await harness([metered], { guardrails: { toolBudget: 1 } });
    const result = await executor.execute(planOf([{ id: 'd1', tool: 'metered' }]));
    expect(result.completed[0]).toMatchObject({ output: 'done', cost: 0.125 });
    expect(await detailsOf(service, 'budget_committed')).toEqual([
      { reservation_id: 'd1#1', reserved: 0.5, actual: 0.125, spent: 0.125, limit: 1 },
    ]);
    expect((await guardrailsOf(service)).budgetSpent).toBe(0.125);
  });

  it('holds money exactly: a budget of 0.3 admits 0.1 and then 0.2', async () => {
    const priced = tool('priced', { cost: (input) => numberIn(input, 'cost') });
    const { executor, service } = await harness([priced], { guardrails: { toolBudget: 0.3 } });
    const result = await executor.execute(
      planOf([
        { id: 'd1', tool: 'priced', input: { cost: 0.1 } },
        { id: 'd2', tool: 'priced', input: { cost: 0.2 } },
      ]),
    );
    expect(result.status).toBe('completed');
    expect((await guardrailsOf(service)).budgetSpent).toBe(0.3);
  });

  it('releases the reservation when the tool fails', async () => {
    const broken = tool('broken', {
      cost: 0.5,
      run: () => {
        throw new NonRetryableError('no');
      },
    });
    const { executor, service } = await harness([broken], { guardrails: { toolBudget: 1 } });
    await executor.execute(planOf([{ id: 'd1', tool: 'broken' }]));
    expect(await eventsOf(service)).toEqual([
      'wall_clock_allowed',
      'step_allowed',
      'confirmation_not_required',
      'budget_reserved',
      'budget_released',
    ]);
    const g = await guardrailsOf(service);
    expect([g.budgetSpent, g.budgetReserved]).toEqual([0, 0]);
  });

  it('records an actual cost beyond what the budget has left as budget_overrun and stops', async () => {
    const metered = tool('metered', { run: (input) => toolResult(input, { cost: numberIn(input, 'cost') }) });
    const { executor, service } = await harness([metered], { guardrails: { toolBudget: 1 } });
    const result = await executor.execute(
      planOf([
        { id: 'd1', tool: 'metered', input: { cost: 0.6 } },
        { id: 'd2', tool: 'metered', input: { cost: 0.7 } },
        { id: 'd3', tool: 'metered', input: { cost: 0 } },
      ]),
    );
    expect(result.status).toBe('failed');
    expect(result.violation?.check.eventType).toBe('budget_overrun');
    expect((await eventsOf(service)).at(-1)).toBe('budget_overrun');
    expect(metered.calls).toHaveLength(2);
  });

  it('keeps the work of the decision that overran, and its spend', async () => {
    const metered = tool('metered', { run: () => toolResult('made', { cost: 3 }) });
    const { executor, service } = await harness([metered], { guardrails: { toolBudget: 1 } });
    const result = await executor.execute(planOf([{ id: 'd1', tool: 'metered' }]));
    expect(result.completed).toEqual([{ decisionId: 'd1', output: 'made', cost: 3, attempts: 1 }]);
    expect((await guardrailsOf(service)).budgetSpent).toBe(3);
  });

  it('ends the run with its work kept when a spend cap across plans cannot cover the next estimate', async () => {
    const priced = tool('priced', { cost: 1 });
    const { executor, service } = await harness([priced], {
      guardrails: { toolBudget: 10, labels: { team: 'ml' } },
    });
    await service.installSpendCaps([{ id: 'team', match: { team: 'ml' }, limit: 1.5, window: 'lifetime' }]);
    const result = await executor.execute(planOf(decisions(2, 'priced')));
    expect(priced.calls).toHaveLength(1);
    expect(result.completed.map((c) => c.decisionId)).toEqual(['d1']);
    expect(result.violation?.check.eventType).toBe('budget_cap_blocked');
    expect((await eventsOf(service)).at(-1)).toBe('budget_cap_blocked');
  });
});
