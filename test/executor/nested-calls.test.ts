import { describe, expect, it } from 'vitest';
import {
  type AutonomyGuardrailService,
  GuardrailValidationError,
  GuardrailViolationError,
  MemoryStore,
  NonRetryableError,
  PlanExecutor,
  toolResult,
  type ToolContext,
  type ToolRule,
} from '../../src/index.js';
import {
  deferred,
  detailsOf,
  echo,
  eventsOf,
  guardrailsOf,
  harness,
  planOf,
  tool,
  type HarnessOptions,
} from '../support/executor.js';

/** A tool that makes the calls `calls` asks for and returns what they gave. */
function caller(name: string, calls: (ctx: ToolContext) => Promise<unknown>) {
  return tool(name, { run: (_input, ctx) => calls(ctx) });
}

/** A tool that calls `fetch` `n` times at once and returns how many calls succeeded. */
function fanOut(n: number) {
  return caller('fan', async (ctx) => {
    const settled = await Promise.allSettled(Array.from({ length: n }, (_, i) => ctx.callTool('fetch', i)));
    return settled.filter((s) => s.status === 'fulfilled').length;
  });
}

function rules(name: string, rule: Partial<ToolRule>): ReadonlyMap<string, ToolRule> {
  return new Map([
    [name, { maxCallsPerPlan: null, costPerCall: null, requiresConfirmation: false, ...rule }],
  ]);
}

async function runOne(tools: Parameters<typeof harness>[0], toolName: string, options: HarnessOptions = {}) {
  const h = await harness(tools, options);
  const result = await h.executor.execute(planOf([{ id: 'd1', tool: toolName }]));
  return { ...h, result };
}

/** Audit entries of the plan that belong to calls made from inside tools. */
async function nestedReservations(h: { service: Parameters<typeof detailsOf>[0] }, eventType: string) {
  return (await detailsOf(h.service, eventType)).filter((d) => String(d['reservation_id']).includes('/'));
}

describe('a tool calling another tool', () => {
  it('gets the called tool’s output', async () => {
    const outer = caller('outer', async (ctx) => ({ got: await ctx.callTool('echo', 'hello') }));
    const { result } = await runOne([outer, echo], 'outer');
    expect(result.completed[0]?.output).toEqual({ got: 'hello' });
  });

  it('audits the call’s tool-call check, confirmation, reservation and commit', async () => {
    const outer = caller('outer', (ctx) => ctx.callTool('echo', 1));
    const { service } = await runOne([outer, echo], 'outer');
    expect(await eventsOf(service)).toEqual([
      'wall_clock_allowed',
      'step_allowed',
      'confirmation_not_required',
      'budget_reserved',
      'actor_tool_calls_allowed',
      'confirmation_not_required',
      'budget_reserved',
      'budget_committed',
      'budget_committed',
    ]);
  });

  it('makes the call’s checks one store update, and its settlement a second', async () => {
    const store = new MemoryStore();
    const update = store.update.bind(store);
    let updates = 0;
    store.update = (...args) => {
      updates++;
      return update(...args);
    };
    let before = 0;
    const outer = caller('outer', async (ctx) => {
      before = updates;
      await ctx.callTool('echo', 1);
      return updates - before;
    });
    const { result } = await runOne([outer, echo], 'outer', { store });
    expect(result.completed[0]?.output).toBe(2);
  });

  it('does not count a step for the call', async () => {
    const outer = caller('outer', (ctx) => ctx.callTool('echo', 1));
    const { service } = await runOne([outer, echo], 'outer');
    expect((await guardrailsOf(service)).stepCount).toBe(1);
  });

  it('runs calls unguarded when the executor has no service', async () => {
    const outer = caller('outer', async (ctx) => [
      await ctx.callTool('echo', 1),
      await ctx.callTool('echo', 2),
    ]);
    const executor = new PlanExecutor({ tools: [outer, echo] });
    const result = await executor.execute(planOf([{ id: 'd1', tool: 'outer' }]));
    expect(result.completed[0]?.output).toEqual([1, 2]);
  });

  it('rejects a call of a tool that is not registered', async () => {
    let error: unknown;
    const outer = caller('outer', (ctx) =>
      ctx.callTool('missing').catch((e: unknown) => {
        error = e;
        return null;
      }),
    );
    await runOne([outer], 'outer');
    expect(error).toBeInstanceOf(GuardrailValidationError);
    expect((error as GuardrailValidationError).field).toBe('tool');
  });

  it('hands the called tool’s error to the calling tool, which may carry on', async () => {
    const broken = tool('broken', {
      run: () => {
        throw new NonRetryableError('no');
      },
    });
    const outer = caller('outer', (ctx) => ctx.callTool('broken').catch(() => 'recovered'));
    const { result } = await runOne([outer, broken], 'outer');
    expect(result.status).toBe('completed');
    expect(result.completed[0]?.output).toBe('recovered');
  });

  it('fails the decision with the called tool’s error when the calling tool passes it on', async () => {
    const error = new NonRetryableError('no');
    const broken = tool('broken', {
      run: () => {
        throw error;
      },
    });
    const outer = caller('outer', (ctx) => ctx.callTool('broken'));
    const { result } = await runOne([outer, broken], 'outer');
    expect(result.error).toBe(error);
  });
});

describe('max_tool_calls_per_invocation', () => {
  const limit2: HarnessOptions = { guardrails: { actorLimits: { maxToolCallsPerInvocation: 2 } } };

  it('refuses the call past the limit with an actor_tool_calls violation', async () => {
    const spy = tool('echo');
    const outer = caller('outer', async (ctx) => {
      for (let i = 0; i < 3; i++) await ctx.callTool('echo', i);
    });
    const { result } = await runOne([outer, spy], 'outer', limit2);
    expect(result.status).toBe('failed');
    expect(result.violation?.check.eventType).toBe('actor_tool_calls_blocked');
    expect(spy.calls).toEqual([0, 1]);
  });

  it('audits the calls so far with each check', async () => {
    const outer = caller('outer', async (ctx) => {
      for (let i = 0; i < 3; i++) await ctx.callTool('echo', i);
    });
    const { service } = await runOne([outer, echo], 'outer', limit2);
    const checks = [
      ...(await detailsOf(service, 'actor_tool_calls_allowed')),
      ...(await detailsOf(service, 'actor_tool_calls_blocked')),
    ];
    expect(checks.map((d) => d['current_calls'])).toEqual([0, 1, 2]);
  });

  it('gives each decision a count of its own', async () => {
    const outer = caller('outer', async (ctx) => [
      await ctx.callTool('echo', 1),
      await ctx.callTool('echo', 2),
    ]);
    const h = await harness([outer, echo], limit2);
    const result = await h.executor.execute(
      planOf([
        { id: 'd1', tool: 'outer' },
        { id: 'd2', tool: 'outer' },
      ]),
    );
    expect(result.status).toBe('completed');
  });

  it('gives each retry of a decision a count of its own', async () => {
    let attempt = 0;
    const outer = caller('outer', async (ctx) => {
      await ctx.callTool('echo', 1);
      await ctx.callTool('echo', 2);
      if (++attempt === 1) throw new TypeError('flaky');
      return 'ok';
    });
    const { result } = await runOne([outer, echo], 'outer', {
      guardrails: { actorLimits: { maxToolCallsPerInvocation: 2, maxRetriesPerFailure: 1 } },
    });
    expect(result.completed[0]).toMatchObject({ output: 'ok', attempts: 2 });
  });

  it('counts calls made by a called tool against the same invocation', async () => {
    const leaf = tool('leaf');
    const middle = caller('middle', (ctx) => ctx.callTool('leaf', 'x'));
    const outer = caller('outer', (ctx) => ctx.callTool('middle'));
    const { result } = await runOne([outer, middle, leaf], 'outer', {
      guardrails: { actorLimits: { maxToolCallsPerInvocation: 1 } },
    });
    expect(result.violation?.check.eventType).toBe('actor_tool_calls_blocked');
    expect(leaf.calls).toEqual([]);
  });
});

describe('the budget of a called tool', () => {
  it('reserves and commits the called tool’s own cost', async () => {
    const priced = tool('priced', { cost: 0.2 });
    const outer = caller('outer', (ctx) => ctx.callTool('priced'));
    const h = await runOne([outer, priced], 'outer', { guardrails: { toolBudget: 1 } });
    expect(await nestedReservations(h, 'budget_reserved')).toEqual([
      { reservation_id: 'd1#1/0', amount: 0.2, spent: 0, reserved: 0.2, limit: 1 },
    ]);
    expect((await guardrailsOf(h.service)).budgetSpent).toBe(0.2);
  });

  it('spends the actual cost the called tool reports', async () => {
    const metered = tool('metered', { cost: 0.5, run: () => toolResult('x', { cost: 0.05 }) });
    const outer = caller('outer', (ctx) => ctx.callTool('metered'));
    const { service } = await runOne([outer, metered], 'outer', { guardrails: { toolBudget: 1 } });
    expect((await guardrailsOf(service)).budgetSpent).toBe(0.05);
  });

  it('hands the calling tool the output without its cost wrapper', async () => {
    const metered = tool('metered', { run: () => toolResult('plain', { cost: 0.05 }) });
    const outer = caller('outer', (ctx) => ctx.callTool('metered'));
    const { result } = await runOne([outer, metered], 'outer');
    expect(result.completed[0]?.output).toBe('plain');
  });

  it('refuses a call whose cost the budget cannot cover, without running it', async () => {
    const priced = tool('priced', { cost: 2 });
    const outer = caller('outer', (ctx) => ctx.callTool('priced'));
    const { result } = await runOne([outer, priced], 'outer', { guardrails: { toolBudget: 1 } });
    expect(result.violation?.check.eventType).toBe('budget_blocked');
    expect(priced.calls).toEqual([]);
  });

  it('releases a failed call’s reservation', async () => {
    const broken = tool('broken', {
      cost: 0.3,
      run: () => {
        throw new NonRetryableError('no');
      },
    });
    const outer = caller('outer', (ctx) => ctx.callTool('broken').catch(() => null));
    const h = await runOne([outer, broken], 'outer', { guardrails: { toolBudget: 1 } });
    expect(await nestedReservations(h, 'budget_released')).toEqual([
      { reservation_id: 'd1#1/0', amount: 0.3 },
    ]);
    const g = await guardrailsOf(h.service);
    expect([g.budgetSpent, g.budgetReserved]).toEqual([0, 0]);
  });

  it('stops the plan when a called tool overran the budget', async () => {
    const metered = tool('metered', { run: () => toolResult('x', { cost: 5 }) });
    const outer = caller('outer', (ctx) => ctx.callTool('metered'));
    const { result, service } = await runOne([outer, metered], 'outer', { guardrails: { toolBudget: 1 } });
    expect(result.violation?.check.eventType).toBe('budget_overrun');
    expect((await guardrailsOf(service)).budgetSpent).toBe(5);
  });

  it("counts a called tool against its rule's calls per plan", async () => {
    const outer = caller('outer', async (ctx) => [
      await ctx.callTool('echo', 1),
      await ctx.callTool('echo', 2),
    ]);
    const { result, service } = await runOne([outer, echo], 'outer', {
      toolRules: rules('echo', { maxCallsPerPlan: 1 }),
    });
    expect(result.violation?.check.eventType).toBe('tool_calls_blocked');
    expect((await detailsOf(service, 'tool_calls_blocked'))[0]).toMatchObject({
      tool: 'echo',
      calls: 1,
      limit: 1,
    });
  });
});

describe('a called tool that needs confirmation', () => {
  it('is refused rather than paused for', async () => {
    const deploy = tool('deploy');
    const outer = caller('outer', (ctx) => ctx.callTool('deploy'));
    const { result, service } = await runOne([outer, deploy], 'outer', {
      guardrails: { requiredConfirmations: ['deploy'] },
    });
    expect(result.status).toBe('failed');
    expect(result.violation?.check.eventType).toBe('confirmation_required');
    expect(deploy.calls).toEqual([]);
    expect(await service.listApprovals()).toEqual([]);
  });

  it('is checked under the called tool’s operation', async () => {
    const shell = tool('shell', { operation: 'deploy' });
    const outer = caller('outer', (ctx) => ctx.callTool('shell'));
    const { result } = await runOne([outer, shell], 'outer', {
      guardrails: { requiredConfirmations: ['deploy'] },
    });
    expect(result.violation?.check.eventType).toBe('confirmation_required');
    expect(shell.calls).toEqual([]);
  });
});

describe('calls made in parallel', () => {
  it('never run more calls than max_tool_calls_per_invocation', async () => {
    const fetch = tool('fetch');
    const { result, service } = await runOne([fanOut(20), fetch], 'fan', {
      guardrails: { actorLimits: { maxToolCallsPerInvocation: 8 } },
    });
    expect(result.completed[0]?.output).toBe(8);
    expect(fetch.calls).toHaveLength(8);
    const events = await eventsOf(service);
    expect(events.filter((e) => e === 'actor_tool_calls_allowed')).toHaveLength(8);
    expect(events.filter((e) => e === 'actor_tool_calls_blocked')).toHaveLength(12);
  });

  it('number the calls apart, so no call number is checked twice', async () => {
    const { service } = await runOne([fanOut(12), tool('fetch')], 'fan', {
      guardrails: { actorLimits: { maxToolCallsPerInvocation: 5 } },
    });
    const checked = [
      ...(await detailsOf(service, 'actor_tool_calls_allowed')),
      ...(await detailsOf(service, 'actor_tool_calls_blocked')),
    ].map((d) => d['current_calls']);
    expect([...checked].sort((a, b) => Number(a) - Number(b))).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
    ]);
  });

  it('never spend more than the budget', async () => {
    const fetch = tool('fetch', { cost: 0.1 });
    const h = await runOne([fanOut(20), fetch], 'fan', { guardrails: { toolBudget: 0.5 } });
    expect(h.result.completed[0]?.output).toBe(5);
    expect(fetch.calls).toHaveLength(5);
    expect(await nestedReservations(h, 'budget_committed')).toHaveLength(5);
    expect((await eventsOf(h.service)).filter((e) => e === 'budget_blocked')).toHaveLength(15);
    const g = await guardrailsOf(h.service);
    expect([g.budgetSpent, g.budgetReserved]).toEqual([0.5, 0]);
  });

  it('hold both limits at once', async () => {
    const fetch = tool('fetch', { cost: 0.25 });
    const h = await runOne([fanOut(30), fetch], 'fan', {
      guardrails: { toolBudget: 2, actorLimits: { maxToolCallsPerInvocation: 10 } },
    });
    expect(fetch.calls).toHaveLength(8);
    const events = await eventsOf(h.service);
    expect(events.filter((e) => e === 'actor_tool_calls_allowed')).toHaveLength(10);
    expect(events.filter((e) => e === 'budget_blocked')).toHaveLength(2);
    expect((await guardrailsOf(h.service)).budgetSpent).toBe(2);
  });

  it('fail the decision with the first refusal when the tool awaits them all', async () => {
    const all = caller('all', (ctx) => Promise.all([0, 1, 2].map((i) => ctx.callTool('echo', i))));
    const { result } = await runOne([all, echo], 'all', {
      guardrails: { actorLimits: { maxToolCallsPerInvocation: 2 } },
    });
    expect(result.status).toBe('failed');
    expect(result.violation).toBeInstanceOf(GuardrailViolationError);
    expect(result.violation?.check.eventType).toBe('actor_tool_calls_blocked');
  });
});

describe('a call cut short by the wall clock while the service had not answered yet', () => {
  /**
   * Makes the service answer a nested call's checks (`openToolCall`: what they change is done at once)
   * only once `open` is called; `asked` resolves when they are held.
   */
  function hold(service: AutonomyGuardrailService) {
    const gate = deferred();
    const asked = deferred();
    const real = service.openToolCall.bind(service);
    service.openToolCall = async (...args) => {
      const answer = await real(...args);
      asked.resolve();
      await gate.promise;
      return answer;
    };
    return { asked: asked.promise, open: () => gate.resolve() };
  }

  /**
   * A run whose tool calls `echo` (cost 1) and waits for it, the service's answer to that call's checks
   * held: the wall clock runs out meanwhile, which ends the run. `answer` lets the service answer and
   * waits until the call settled.
   */
  async function cutShortWhileHeld() {
    const called = tool('echo', { cost: 1 });
    let call: Promise<unknown> = Promise.resolve();
    const outer = caller('outer', (ctx) => (call = ctx.callTool('echo', 1)));
    const h = await harness([outer, called], { guardrails: { maxWallClockSeconds: 60, toolBudget: 10 } });
    const held = hold(h.service);
    const running = h.executor.execute(planOf([{ id: 'd1', tool: 'outer' }]));
    await held.asked;
    h.clock.advance(60_000);
    h.timers.fire();
    const result = await running;
    const answer = async (): Promise<void> => {
      held.open();
      await call.catch(() => undefined);
    };
    return { ...h, called, result, answer };
  }

  it('does not run the called tool', async () => {
    const h = await cutShortWhileHeld();
    await h.answer();
    expect([h.result.violation?.check.eventType, h.called.calls]).toEqual(['wall_clock_blocked', []]);
  });

  it('records nothing after the run ended but the give-back of the reservation it made', async () => {
    const h = await cutShortWhileHeld();
    const ended = await eventsOf(h.service);
    await h.answer();
    expect(await eventsOf(h.service)).toEqual([...ended, 'budget_released']);
  });

  it('gives back the reservation it was making', async () => {
    const h = await cutShortWhileHeld();
    await h.answer();
    const g = await guardrailsOf(h.service);
    expect([g.budgetReserved, g.budgetSpent]).toEqual([0, 0]);
  });
});
