import { describe, expect, it } from 'vitest';
import {
  GuardrailError,
  GuardrailViolationError,
  NonRetryableError,
  PlanExecutor,
  toolResult,
  type Plan,
} from '../../src/index.js';
import {
  decisions,
  echo,
  eventsOf,
  guardrailsOf,
  harness,
  planOf,
  progressOf,
  tool,
} from '../support/executor.js';

const broken = (error: unknown) =>
  tool('broken', {
    run: () => {
      throw error;
    },
  });

describe('a plan that runs to the end', () => {
  it('resolves completed with each decision’s output, cost and attempts, in order', async () => {
    const priced = tool('priced', { cost: 0.5 });
    const metered = tool('metered', { run: () => toolResult('measured', { cost: 0.2 }) });
    const { executor } = await harness([echo, priced, metered]);
    const result = await executor.execute(
      planOf([
        { id: 'a', tool: 'echo', input: 'one' },
        { id: 'b', tool: 'priced', input: [2] },
        { id: 'c', tool: 'metered' },
      ]),
    );
    expect(result).toEqual({
      status: 'completed',
      completed: [
        { decisionId: 'a', output: 'one', cost: 0, attempts: 1 },
        { decisionId: 'b', output: [2], cost: 0.5, attempts: 1 },
        { decisionId: 'c', output: 'measured', cost: 0.2, attempts: 1 },
      ],
    });
  });

  it('resolves a frozen result', async () => {
    const { executor } = await harness([echo]);
    const result = await executor.execute(planOf(decisions(2)));
    expect(Object.isFrozen(result)).toBe(true);
    expect(Object.isFrozen(result.completed)).toBe(true);
    expect(Object.isFrozen(result.completed[0])).toBe(true);
  });

  it('completes a plan with no decisions', async () => {
    const { executor } = await harness([echo]);
    const plan = planOf([]);
    expect(await executor.execute(plan)).toEqual({ status: 'completed', completed: [] });
    expect(plan.phase).toBe('completed');
  });

  it('keeps the caller’s metadata and adds the guardrails and the progress', async () => {
    const { executor } = await harness([echo]);
    const plan: Plan = { ...planOf(decisions(1)), metadata: { owner: 'ops', ticket: 7 } };
    await executor.execute(plan);
    expect(Object.keys(plan.metadata).sort()).toEqual([
      'autonomy_guardrails',
      'leash_execution',
      'owner',
      'ticket',
    ]);
    expect(plan.metadata['owner']).toBe('ops');
  });

  it('saves the progress in snake_case, as JSON', async () => {
    const { executor } = await harness([echo]);
    const plan = planOf(decisions(1));
    await executor.execute(plan);
    expect(progressOf(plan)).toEqual({
      version: 1,
      next: 1,
      completed: [{ decision_id: 'd1', output: { n: 1 }, cost: 0, attempts: 1 }],
      paused: null,
    });
    expect(JSON.parse(JSON.stringify(plan.metadata))).toEqual(plan.metadata);
  });

  it('continues from the progress saved in the metadata', async () => {
    const spy = tool('echo');
    const { executor } = await harness([spy]);
    const plan = planOf(decisions(3));
    plan.metadata = {
      leash_execution: {
        version: 1,
        next: 2,
        completed: [
          { decision_id: 'd1', output: 'was one', cost: 0, attempts: 1 },
          { decision_id: 'd2', output: 'was two', cost: 0, attempts: 2 },
        ],
        paused: null,
      },
    };
    const result = await executor.execute(plan);
    expect(spy.calls).toEqual([{ n: 3 }]);
    expect(result.completed.map((c) => c.output)).toEqual(['was one', 'was two', { n: 3 }]);
  });
});

describe('a plan stopped by a guard', () => {
  it('resolves failed with the violation and the work done before it', async () => {
    const { executor } = await harness([echo], { guardrails: { maxSteps: 2 } });
    const result = await executor.execute(planOf(decisions(3)));
    expect(result.status).toBe('failed');
    expect(result.violation).toBeInstanceOf(GuardrailViolationError);
    expect(result.violation?.check).toMatchObject({ guardName: 'step_limit', allowed: false, limit: 2 });
    expect(result.completed.map((c) => c.decisionId)).toEqual(['d1', 'd2']);
    expect(result.error).toBeUndefined();
  });

  it('saves where it stopped', async () => {
    const { executor } = await harness([echo], { guardrails: { maxSteps: 2 } });
    const plan = planOf(decisions(3));
    await executor.execute(plan);
    expect(progressOf(plan)).toMatchObject({ next: 2, paused: null });
  });

  it('saves the guardrails as they were when it stopped', async () => {
    const { executor, service } = await harness([echo], { guardrails: { maxSteps: 2 } });
    const plan = planOf(decisions(3));
    await executor.execute(plan);
    expect(plan.metadata['autonomy_guardrails']).toEqual(
      (await service.toMetadata('plan'))['autonomy_guardrails'],
    );
  });
});

describe('a plan whose tool failed', () => {
  it('resolves failed with the tool’s error and the work done before it', async () => {
    const error = new NonRetryableError('disk full');
    const { executor } = await harness([echo, broken(error)]);
    const result = await executor.execute(
      planOf([
        { id: 'd1', tool: 'echo', input: 'kept' },
        { id: 'd2', tool: 'broken' },
        { id: 'd3', tool: 'echo' },
      ]),
    );
    expect(result).toEqual({
      status: 'failed',
      completed: [{ decisionId: 'd1', output: 'kept', cost: 0, attempts: 1 }],
      error,
      failure: { decisionId: 'd2', attempts: 1, error: 'disk full' },
    });
  });

  it('ends the plan in phase failed', async () => {
    const { executor } = await harness([broken(new NonRetryableError('no'))]);
    const plan = planOf([{ id: 'd1', tool: 'broken' }]);
    await executor.execute(plan);
    expect(plan.phase).toBe('failed');
  });

  it('resolves even when the tool throws something that is not an Error', async () => {
    const executor = new PlanExecutor({ tools: [broken('a string')] });
    const result = await executor.execute(planOf([{ id: 'd1', tool: 'broken' }]));
    expect(result).toMatchObject({ status: 'failed', error: 'a string' });
  });
});

describe('a plan whose guardrails cannot be reached', () => {
  it('resolves failed with the store’s error instead of throwing', async () => {
    const spy = tool('echo');
    const { executor, store } = await harness([spy]);
    await store.close();
    const plan = planOf(decisions(1));
    const result = await executor.execute(plan);
    expect(result.status).toBe('failed');
    expect(result.error).toBeInstanceOf(GuardrailError);
    expect((result.error as GuardrailError).code).toBe('STORE_CLOSED');
    expect(spy.calls).toEqual([]);
  });

  it('still saves the progress when the guardrails cannot be read back', async () => {
    const { executor, store } = await harness([echo]);
    await store.close();
    const plan = planOf(decisions(1));
    await executor.execute(plan);
    expect(plan.phase).toBe('failed');
    expect(progressOf(plan)).toMatchObject({ next: 0, completed: [] });
    expect(plan.metadata['autonomy_guardrails']).toBeUndefined();
  });
});

describe('plans with and without guardrails', () => {
  it('runs every decision without checks when the executor has no service', async () => {
    const executor = new PlanExecutor({ tools: [echo] });
    const plan = planOf(decisions(3));
    const result = await executor.execute(plan);
    expect(result.status).toBe('completed');
    expect(plan.metadata['autonomy_guardrails']).toBeUndefined();
  });

  it('runs a plan with no guardrails, auditing nothing, when unconfigured plans are allowed', async () => {
    const { executor, service } = await harness([echo], { guardrails: null });
    const result = await executor.execute(planOf(decisions(2)));
    expect(result.status).toBe('completed');
    expect(await service.getAuditTrail('plan')).toBeNull();
  });

  it('fails closed on a plan with no guardrails when unconfigured plans are denied', async () => {
    const spy = tool('echo');
    const { executor } = await harness([spy], { guardrails: null, unconfiguredPlans: 'deny' });
    const result = await executor.execute(planOf(decisions(1)));
    expect(result.status).toBe('failed');
    expect(result.violation?.check.allowed).toBe(false);
    expect(spy.calls).toEqual([]);
  });

  it('audits only under the plan’s own id', async () => {
    const { executor, service } = await harness([echo]);
    await service.configureGuardrails('other', {});
    await executor.execute(planOf(decisions(1)));
    expect(await eventsOf(service, 'other')).toEqual([]);
    expect((await guardrailsOf(service)).stepCount).toBe(1);
  });
});
