import { describe, expect, it } from 'vitest';
import {
  PlanExecutor,
  type Decision,
  type Plan,
  type PlanExecutorOptions,
  type PlanPhase,
  type Tool,
} from '../../src/index.js';
import { fieldOf } from '../support/thrown.js';
import {
  decisions,
  detailsOf,
  echo,
  eventsOf,
  guardrailsOf,
  harness,
  numberIn,
  planOf,
  rejection,
  tool,
} from '../support/executor.js';

/** A plan whose decisions are given as untyped values, as a caller's JSON could hold them. */
function rawPlan(decisionList: unknown[], phase: PlanPhase = 'execute'): Plan {
  return { id: 'plan', phase, decisions: decisionList as Decision[], metadata: {} };
}

describe('which plans execute() and resume() accept', () => {
  it.each<PlanPhase>(['draft', 'completed', 'failed', 'awaiting_confirmation', 'cancelled'])(
    'execute() refuses a plan in phase %s',
    async (phase) => {
      const { executor } = await harness([echo]);
      const plan: Plan = { ...planOf(decisions(1)), phase };
      expect((await rejection(executor.execute(plan))).field).toBe('plan.phase');
    },
  );

  it('execute() leaves a refused plan as it was and runs nothing', async () => {
    const spy = tool('spy');
    const { executor, service } = await harness([spy]);
    const plan: Plan = { ...planOf(decisions(1, 'spy')), phase: 'draft', metadata: { owner: 'ops' } };
    await rejection(executor.execute(plan));
    expect(spy.calls).toEqual([]);
    expect(plan.phase).toBe('draft');
    expect(plan.metadata).toEqual({ owner: 'ops' });
    expect(await eventsOf(service)).toEqual([]);
    expect((await guardrailsOf(service)).startTime).toBeNull();
  });

  it.each<PlanPhase>(['draft', 'execute', 'completed', 'failed', 'cancelled'])(
    'resume() refuses a plan in phase %s',
    async (phase) => {
      const { executor } = await harness([echo]);
      const plan: Plan = { ...planOf(decisions(1)), phase };
      expect((await rejection(executor.resume(plan))).field).toBe('plan.phase');
    },
  );

  it('resume() refuses a plan awaiting confirmation that has no paused decision saved', async () => {
    const { executor } = await harness([echo]);
    const plan: Plan = { ...planOf(decisions(1)), phase: 'awaiting_confirmation' };
    expect((await rejection(executor.resume(plan))).field).toBe('plan.metadata.leash_execution.paused');
  });

  it('ends a plan whose decisions all ran in phase completed', async () => {
    const { executor } = await harness([echo]);
    const plan = planOf(decisions(2));
    await executor.execute(plan);
    expect(plan.phase).toBe('completed');
  });

  it('ends a plan stopped by a guard in phase failed', async () => {
    const { executor } = await harness([echo], { guardrails: { maxSteps: 1 } });
    const plan = planOf(decisions(2));
    await executor.execute(plan);
    expect(plan.phase).toBe('failed');
  });
});

describe('a malformed plan is refused before anything runs', () => {
  it('refuses sparse decisions, naming the hole', async () => {
    const { executor } = await harness([echo]);
    const sparse: unknown[] = [];
    sparse[1] = { id: 'd2', tool: 'echo' };
    expect((await rejection(executor.execute(rawPlan(sparse)))).field).toBe('plan.decisions[0]');
  });

  it('refuses two decisions with the same id', async () => {
    const { executor } = await harness([echo]);
    const plan = rawPlan([
      { id: 'd1', tool: 'echo' },
      { id: 'd1', tool: 'echo' },
    ]);
    expect((await rejection(executor.execute(plan))).field).toBe('plan.decisions[1].id');
  });

  it('refuses a decision naming a tool that is not registered', async () => {
    const { executor } = await harness([echo]);
    const plan = rawPlan([{ id: 'd1', tool: 'shell' }]);
    expect((await rejection(executor.execute(plan))).field).toBe('plan.decisions[0].tool');
  });

  it.each([
    ['negative', -1],
    ['not a number', Number.NaN],
    ['infinite', Number.POSITIVE_INFINITY],
    ['a string', '1'],
  ])('refuses a decision cost that is %s', async (_label, cost) => {
    const { executor } = await harness([echo]);
    const plan = rawPlan([{ id: 'd1', tool: 'echo', cost }]);
    expect((await rejection(executor.execute(plan))).field).toBe('plan.decisions[0].cost');
  });

  it.each([
    ['a zero-width space', 'de\u200bploy'],
    ['a control character', 'deploy\u0000'],
    ['a bidi override', '\u202edeploy'],
    ['a soft hyphen', 'dep\u00adloy'],
  ])('refuses a decision operation holding %s', async (_label, operation) => {
    const { executor } = await harness([echo]);
    const plan = rawPlan([{ id: 'd1', tool: 'echo', operation }]);
    expect((await rejection(executor.execute(plan))).field).toBe('plan.decisions[0].operation');
  });

  it.each([
    ['NaN', Number.NaN],
    ['a function', () => 1],
    ['a Date', new Date(0)],
    ['a bigint', 1n],
    ['undefined inside an object', { a: undefined }],
    ['a Map', new Map()],
  ])('refuses a decision input holding %s', async (_label, input) => {
    const { executor } = await harness([echo]);
    const plan = rawPlan([{ id: 'd1', tool: 'echo', input }]);
    expect((await rejection(executor.execute(plan))).field).toMatch(/^plan\.decisions\[0\]\.input/);
  });

  it('runs no decision when a later one is malformed', async () => {
    const spy = tool('spy');
    const { executor, service } = await harness([spy]);
    const plan = rawPlan([
      { id: 'd1', tool: 'spy' },
      { id: 'd2', tool: 'missing' },
    ]);
    await rejection(executor.execute(plan));
    expect(spy.calls).toEqual([]);
    expect(plan.phase).toBe('execute');
    expect(plan.metadata).toEqual({});
    expect(await eventsOf(service)).toEqual([]);
    expect((await guardrailsOf(service)).stepCount).toBe(0);
  });

  it('refuses saved progress that points past the last decision', async () => {
    const { executor } = await harness([echo]);
    const plan = planOf(decisions(1));
    plan.metadata = { leash_execution: { version: 1, next: 2, completed: [], paused: null } };
    expect((await rejection(executor.execute(plan))).field).toBe('plan.metadata.leash_execution.next');
  });

  it('refuses saved progress of an unknown version', async () => {
    const { executor } = await harness([echo]);
    const plan = planOf(decisions(1));
    plan.metadata = { leash_execution: { version: 2, next: 0, completed: [], paused: null } };
    expect((await rejection(executor.execute(plan))).field).toBe('plan.metadata.leash_execution.version');
  });
});

describe('tools given to the executor', () => {
  function construct(tools: unknown[]): () => PlanExecutor {
    return () => new PlanExecutor({ tools } as PlanExecutorOptions);
  }

  it('refuses two tools with the same name', () => {
    expect(fieldOf(construct([echo, { ...echo }]))).toBe('tools[1].name');
  });

  it('refuses a tool without a run function', () => {
    expect(fieldOf(construct([{ name: 'x', description: 'x' }]))).toBe('tools[0]');
  });

  it('refuses a tool with a negative cost', () => {
    expect(fieldOf(construct([{ ...echo, cost: -0.5 }]))).toBe('tools[0].cost');
  });

  it('refuses a tool whose operation holds an invisible character', () => {
    expect(fieldOf(construct([{ ...echo, operation: 'de\u200bploy' }]))).toBe('tools[0].operation');
  });

  it.each([
    ['service', { checkStepLimit: () => null }],
    ['toolRules', { deploy: { requiresConfirmation: true } }],
    ['timers', {}],
  ])('refuses a %s option that is not what it must be', (field, value) => {
    const options = { tools: [echo], [field]: value } as unknown as PlanExecutorOptions;
    expect(fieldOf(() => new PlanExecutor(options))).toBe(field);
  });

  it('refuses an unknown option', () => {
    const options = { tools: [echo], maxSteps: 3 } as unknown as PlanExecutorOptions;
    expect(fieldOf(() => new PlanExecutor(options))).toBe('options.maxSteps');
  });

  it('hands the tool the plan id, the decision id and the attempt number', async () => {
    const seen: unknown[] = [];
    const probe = tool('probe', {
      run: (_input, ctx) => {
        seen.push({ planId: ctx.planId, decisionId: ctx.decisionId, attempt: ctx.attempt });
        return null;
      },
    });
    const { executor } = await harness([probe]);
    await executor.execute(planOf([{ id: 'only', tool: 'probe' }]));
    expect(seen).toEqual([{ planId: 'plan', decisionId: 'only', attempt: 1 }]);
  });
});

describe('the cost a decision reserves', () => {
  async function reservedFor(tools: Tool[], decision: Decision, options = {}): Promise<unknown[]> {
    const { executor, service } = await harness(tools, options);
    await executor.execute(planOf([decision]));
    return (await detailsOf(service, 'budget_reserved')).map((d) => d['amount']);
  }

  it("reserves the tool's own cost", async () => {
    const priced = tool('priced', { cost: 0.25 });
    expect(await reservedFor([priced], { id: 'd1', tool: 'priced' })).toEqual([0.25]);
  });

  it("reserves the cost a tool's cost function gives for the input", async () => {
    const priced = tool('priced', { cost: (input) => numberIn(input, 'pages') * 0.1 });
    expect(await reservedFor([priced], { id: 'd1', tool: 'priced', input: { pages: 3 } })).toEqual([0.3]);
  });

  it("raises the reservation to a decision's higher estimate", async () => {
    const priced = tool('priced', { cost: 0.25 });
    expect(await reservedFor([priced], { id: 'd1', tool: 'priced', cost: 2 })).toEqual([2]);
  });

  it("keeps the tool's own cost when the decision's estimate is lower", async () => {
    const priced = tool('priced', { cost: 0.25 });
    expect(await reservedFor([priced], { id: 'd1', tool: 'priced', cost: 0 })).toEqual([0.25]);
  });

  it("reserves a tool rule's cost per call in place of the tool's own", async () => {
    const priced = tool('priced', { cost: 0.25 });
    const toolRules = new Map([
      ['priced', { maxCallsPerPlan: null, costPerCall: 0.75, requiresConfirmation: false }],
    ]);
    expect(await reservedFor([priced], { id: 'd1', tool: 'priced' }, { toolRules })).toEqual([0.75]);
  });
});

describe('the operations a decision is confirmed under', () => {
  async function pausedOn(tools: Tool[], decision: Decision, required: string[]): Promise<string | null> {
    const { executor } = await harness(tools, { guardrails: { requiredConfirmations: required } });
    const result = await executor.execute(planOf([decision]));
    return result.approval?.operation ?? null;
  }

  it('checks a tool without an operation under its name', async () => {
    const deploy = tool('deploy');
    expect(await pausedOn([deploy], { id: 'd1', tool: 'deploy' }, ['deploy'])).toBe('deploy');
  });

  it('checks a tool under its declared operation, not under its name', async () => {
    const shell = tool('shell', { operation: 'deploy' });
    expect(await pausedOn([shell], { id: 'd1', tool: 'shell' }, ['deploy'])).toBe('deploy');
    expect(await pausedOn([shell], { id: 'd1', tool: 'shell' }, ['shell'])).toBeNull();
  });

  it("checks a decision's operation in addition to the tool's", async () => {
    const reader = tool('reader', { operation: 'read' });
    const decision = { id: 'd1', tool: 'reader', operation: 'delete' };
    expect(await pausedOn([reader], decision, ['delete'])).toBe('delete');
  });

  it("cannot replace the tool's operation with the decision's", async () => {
    const deploy = tool('deploy');
    const decision = { id: 'd1', tool: 'deploy', operation: 'read' };
    expect(await pausedOn([deploy], decision, ['deploy'])).toBe('deploy');
  });

  it('matches operations after NFKC normalization, trimming and lower-casing', async () => {
    const reader = tool('reader', { operation: 'read' });
    const decision = { id: 'd1', tool: 'reader', operation: ' ＤＥＰＬＯＹ ' };
    expect(await pausedOn([reader], decision, ['Deploy'])).toBe('deploy');
  });

  it('runs a decision none of whose operations need confirmation', async () => {
    const reader = tool('reader', { operation: 'read' });
    const decision = { id: 'd1', tool: 'reader', operation: 'list' };
    expect(await pausedOn([reader], decision, ['deploy'])).toBeNull();
    expect(reader.calls).toHaveLength(1);
  });
});
