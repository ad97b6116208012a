import { describe, expect, it } from 'vitest';
import { NonRetryableError, toolResult, type ExecutorEvents, type PlanExecutor } from '../../src/index.js';
import { decisions, echo, harness, planOf, rejection, tool } from '../support/executor.js';

type EventName = keyof ExecutorEvents;

/** Every event the executor emits, in order, as [name, payload]. */
function record(executor: PlanExecutor): [EventName, unknown][] {
  const seen: [EventName, unknown][] = [];
  for (const name of ['decision', 'violation', 'awaiting_confirmation', 'completed'] as const) {
    executor.on(name, (payload) => seen.push([name, payload]));
  }
  return seen;
}

describe('progress events', () => {
  it('emits started before each try of a decision’s tool, with the attempt', async () => {
    let failures = 1;
    const flaky = tool('flaky', {
      run: () => {
        if (failures-- > 0) throw new Error('once');
        return 'ok';
      },
    });
    const { executor } = await harness([flaky]);
    const seen: ExecutorEvents['started'][] = [];
    executor.on('started', (e) => seen.push(e));
    await executor.execute(planOf([{ id: 'a', tool: 'flaky' }]));
    expect(seen).toEqual([
      { planId: 'plan', decisionId: 'a', attempt: 1 },
      { planId: 'plan', decisionId: 'a', attempt: 2 },
    ]);
  });

  it('emits decision for each decision that ran, then completed', async () => {
    const { executor } = await harness([echo]);
    const seen = record(executor);
    await executor.execute(planOf(decisions(2)));
    expect(seen.map(([name]) => name)).toEqual(['decision', 'decision', 'completed']);
  });

  it('carries the plan id and the completed decision in a decision event', async () => {
    const { executor } = await harness([echo]);
    const seen: ExecutorEvents['decision'][] = [];
    executor.on('decision', (e) => seen.push(e));
    await executor.execute(planOf(decisions(1)));
    expect(seen).toEqual([
      { planId: 'plan', decision: { decisionId: 'd1', output: { n: 1 }, cost: 0, attempts: 1 } },
    ]);
  });

  it('carries the result execute() resolves with in the completed event', async () => {
    const { executor } = await harness([echo]);
    const seen: ExecutorEvents['completed'][] = [];
    executor.on('completed', (e) => seen.push(e));
    const result = await executor.execute(planOf(decisions(1)));
    expect(seen).toHaveLength(1);
    expect(seen[0]?.planId).toBe('plan');
    expect(seen[0]?.result).toBe(result);
  });

  it('emits violation, then completed, when a guard ends the run', async () => {
    const { executor } = await harness([echo], { guardrails: { maxSteps: 1 } });
    const seen = record(executor);
    await executor.execute(planOf(decisions(2)));
    expect(seen.map(([name]) => name)).toEqual(['decision', 'violation', 'completed']);
  });

  it('names the decision a guard stopped at in the violation event', async () => {
    const { executor } = await harness([echo], { guardrails: { maxSteps: 1 } });
    const seen: ExecutorEvents['violation'][] = [];
    executor.on('violation', (e) => seen.push(e));
    const result = await executor.execute(planOf(decisions(2)));
    expect(seen).toHaveLength(1);
    expect(seen[0]?.decisionId).toBe('d2');
    expect(seen[0]?.violation).toBe(result.violation);
  });

  it('emits decision for a decision that overran the budget, before the violation', async () => {
    const metered = tool('metered', { run: () => toolResult('x', { cost: 2 }) });
    const { executor } = await harness([metered], { guardrails: { toolBudget: 1 } });
    const seen = record(executor);
    await executor.execute(planOf([{ id: 'd1', tool: 'metered' }]));
    expect(seen.map(([name]) => name)).toEqual(['decision', 'violation', 'completed']);
  });

  it('emits no violation event when a tool fails', async () => {
    const broken = tool('broken', {
      run: () => {
        throw new NonRetryableError('no');
      },
    });
    const { executor } = await harness([broken]);
    const seen = record(executor);
    await executor.execute(planOf([{ id: 'd1', tool: 'broken' }]));
    expect(seen.map(([name]) => name)).toEqual(['completed']);
  });

  it('emits awaiting_confirmation with the approval, then completed', async () => {
    const deploy = tool('deploy');
    const { executor } = await harness([deploy], { guardrails: { requiredConfirmations: ['deploy'] } });
    const seen = record(executor);
    const result = await executor.execute(planOf([{ id: 'd1', tool: 'deploy' }]));
    expect(seen.map(([name]) => name)).toEqual(['awaiting_confirmation', 'completed']);
    expect(seen[0]?.[1]).toEqual({ planId: 'plan', approval: result.approval });
  });
});

describe('event payloads', () => {
  it('are frozen, down to the completed decision', async () => {
    const { executor } = await harness([echo]);
    const seen: ExecutorEvents['decision'][] = [];
    executor.on('decision', (e) => seen.push(e));
    await executor.execute(planOf(decisions(1)));
    expect(Object.isFrozen(seen[0])).toBe(true);
    expect(Object.isFrozen(seen[0]?.decision)).toBe(true);
  });

  it('hand over a frozen result in the completed event', async () => {
    const { executor } = await harness([echo]);
    const seen: ExecutorEvents['completed'][] = [];
    executor.on('completed', (e) => seen.push(e));
    await executor.execute(planOf(decisions(1)));
    expect(Object.isFrozen(seen[0])).toBe(true);
    expect(Object.isFrozen(seen[0]?.result)).toBe(true);
    expect(Object.isFrozen(seen[0]?.result.completed)).toBe(true);
  });

  it('hand over a frozen approval in the awaiting_confirmation event', async () => {
    const deploy = tool('deploy');
    const { executor } = await harness([deploy], { guardrails: { requiredConfirmations: ['deploy'] } });
    const seen: ExecutorEvents['awaiting_confirmation'][] = [];
    executor.on('awaiting_confirmation', (e) => seen.push(e));
    await executor.execute(planOf([{ id: 'd1', tool: 'deploy' }]));
    expect(Object.isFrozen(seen[0])).toBe(true);
    expect(Object.isFrozen(seen[0]?.approval)).toBe(true);
  });

  it('hand over a frozen violation event', async () => {
    const { executor } = await harness([echo], { guardrails: { maxSteps: 1 } });
    const seen: ExecutorEvents['violation'][] = [];
    executor.on('violation', (e) => seen.push(e));
    await executor.execute(planOf(decisions(2)));
    expect(Object.isFrozen(seen[0])).toBe(true);
  });

  it('cannot be changed by a listener to alter the result', async () => {
    const { executor } = await harness([echo]);
    executor.on('completed', (e) => {
      (e.result.completed as unknown[]).length = 0;
    });
    const result = await executor.execute(planOf(decisions(2)));
    expect(result.completed).toHaveLength(2);
  });
});

describe('listeners', () => {
  it('cannot break a run by throwing', async () => {
    const { executor } = await harness([echo]);
    for (const name of ['decision', 'violation', 'awaiting_confirmation', 'completed'] as const) {
      executor.on(name, () => {
        throw new Error('listener failed');
      });
    }
    const result = await executor.execute(planOf(decisions(2)));
    expect(result.status).toBe('completed');
    expect(result.completed).toHaveLength(2);
  });

  it('still reach the other listeners when one throws', async () => {
    const { executor } = await harness([echo]);
    executor.on('decision', () => {
      throw new Error('listener failed');
    });
    const seen: string[] = [];
    executor.on('decision', (e) => seen.push(e.decision.decisionId));
    await executor.execute(planOf(decisions(2)));
    expect(seen).toEqual(['d1', 'd2']);
  });

  it('stop hearing events once disposed', async () => {
    const { executor } = await harness([echo]);
    const seen: string[] = [];
    const dispose = executor.on('decision', (e) => seen.push(e.decision.decisionId));
    await executor.execute(planOf(decisions(1)));
    dispose();
    await executor.execute(planOf(decisions(1)));
    expect(seen).toEqual(['d1']);
  });

  it('can be disposed from inside a listener', async () => {
    const { executor } = await harness([echo]);
    const seen: string[] = [];
    const dispose = executor.on('decision', (e) => {
      seen.push(e.decision.decisionId);
      dispose();
    });
    await executor.execute(planOf(decisions(3)));
    expect(seen).toEqual(['d1']);
  });

  it('hear each event once when subscribed once', async () => {
    const { executor } = await harness([echo]);
    let count = 0;
    executor.on('completed', () => count++);
    await executor.execute(planOf(decisions(3)));
    expect(count).toBe(1);
  });

  it('are refused for an unknown event', async () => {
    const { executor } = await harness([echo]);
    const subscribe = () => executor.on('finished' as EventName, () => undefined);
    expect(() => subscribe()).toThrow(expect.objectContaining({ field: 'event' }) as Error);
  });
});

describe('a refused plan', () => {
  it('emits no events', async () => {
    const { executor } = await harness([echo]);
    const seen = record(executor);
    await rejection(executor.execute({ ...planOf(decisions(1)), phase: 'draft' }));
    expect(seen).toEqual([]);
  });
});
