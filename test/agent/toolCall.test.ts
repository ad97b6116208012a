import { describe, expect, it, vi } from 'vitest';
import { AutonomyGuardrailService, NonRetryableError, RunGuard, toolResult } from '../../src/index.js';
import { rejectedField, updatesOf } from '../support/service.js';
import {
  clockLostOnce,
  counted,
  eventTypes,
  guarded,
  hanging,
  LOCAL_STORES,
  PLAN,
  settledUntil,
} from './support.js';

describe.each(LOCAL_STORES)('RunGuard.toolCall on %s', (_name, makeStore) => {
  describe('the order of the checks', () => {
    it('runs an allowed call after wall clock, step, confirmation, invocation calls and budget, in order', async () => {
      const { guard, service } = await guarded(makeStore, { toolBudget: 5 });
      const tool = counted('found');
      const out = await guard.toolCall({ toolCallId: 'c1', toolName: 'search', estimate: 1, run: tool.run });
      expect(out).toEqual({ allowed: true, output: 'found', cost: 1 });
      expect(await eventTypes(service)).toEqual([
        'wall_clock_allowed',
        'step_allowed',
        'confirmation_not_required',
        'actor_tool_calls_allowed',
        'budget_reserved',
        'budget_committed',
      ]);
    });

    it('runs a call whose id is as long as an id may be', async () => {
      const { guard } = await guarded(makeStore, { toolBudget: 5 });
      const out = await guard.toolCall({
        toolCallId: 'c'.repeat(256),
        toolName: 'search',
        estimate: 1,
        run: () => 1,
      });
      expect(out).toEqual({ allowed: true, output: 1, cost: 1 });
    });

    it('stops at the wall clock: no step is taken', async () => {
      const { guard, service, clock } = await guarded(makeStore, { maxWallClockSeconds: 10 });
      await guard.toolCall({ toolCallId: 'c1', toolName: 'search', run: () => 1 });
      clock.advance(11_000);
      const tool = counted(2);
      const out = await guard.toolCall({ toolCallId: 'c2', toolName: 'search', run: tool.run });
      expect(out.allowed === false && out.check.eventType).toBe('wall_clock_blocked');
      expect(tool.calls).toBe(0);
      expect((await eventTypes(service)).at(-1)).toBe('wall_clock_blocked');
    });

    it('stops at the step limit: no confirmation is asked for', async () => {
      const { guard, service } = await guarded(makeStore, { maxSteps: 1 });
      await guard.toolCall({ toolCallId: 'c1', toolName: 'search', run: () => 1 });
      const tool = counted(2);
      const out = await guard.toolCall({ toolCallId: 'c2', toolName: 'search', run: tool.run });
      expect(out.allowed === false && out.check.eventType).toBe('step_blocked');
      expect(tool.calls).toBe(0);
      expect((await eventTypes(service)).slice(-2)).toEqual(['wall_clock_allowed', 'step_blocked']);
    });

    it('stops at a confirmation: nothing is reserved and the call does not run', async () => {
      const { guard, service } = await guarded(makeStore, {
        requiredConfirmations: ['deploy'],
        toolBudget: 5,
      });
      const tool = counted('deployed');
      const out = await guard.toolCall({ toolCallId: 'c1', toolName: 'deploy', estimate: 1, run: tool.run });
      expect(out.allowed).toBe(false);
      expect(out.allowed === false && out.approval?.status).toBe('pending');
      expect(tool.calls).toBe(0);
      expect(await eventTypes(service)).toEqual([
        'wall_clock_allowed',
        'step_allowed',
        'confirmation_required',
      ]);
    });

    it("stops at the tool's calls per plan: nothing is reserved", async () => {
      const { guard, service } = await guarded(
        makeStore,
        { toolBudget: 5 },
        { tools: { search: { maxCallsPerPlan: 1 } } },
      );
      await guard.toolCall({ toolCallId: 'c1', toolName: 'search', run: () => 1 });
      const tool = counted(2);
      const out = await guard.toolCall({ toolCallId: 'c2', toolName: 'search', run: tool.run });
      expect(out.allowed === false && out.check.eventType).toBe('tool_calls_blocked');
      expect(tool.calls).toBe(0);
      expect((await eventTypes(service)).at(-1)).toBe('tool_calls_blocked');
    });

    it("stops at the invocation's tool calls: nothing is reserved", async () => {
      const { guard, service } = await guarded(makeStore, {
        toolBudget: 5,
        actorLimits: { maxToolCallsPerInvocation: 1 },
      });
      await guard.toolCall({ toolCallId: 'c1', toolName: 'search', run: () => 1 });
      const tool = counted(2);
      const out = await guard.toolCall({ toolCallId: 'c2', toolName: 'search', run: tool.run });
      expect(out.allowed === false && out.check.eventType).toBe('actor_tool_calls_blocked');
      expect(tool.calls).toBe(0);
      expect((await eventTypes(service)).at(-1)).toBe('actor_tool_calls_blocked');
    });

    it('stops at the budget: the call does not run', async () => {
      const { guard, service } = await guarded(makeStore, { toolBudget: 1 });
      const tool = counted('done');
      const out = await guard.toolCall({ toolCallId: 'c1', toolName: 'search', estimate: 2, run: tool.run });
      expect(out.allowed === false && out.check.eventType).toBe('budget_blocked');
      expect(tool.calls).toBe(0);
      expect((await eventTypes(service)).at(-1)).toBe('budget_blocked');
    });
  });

  describe('costs', () => {
    it("reserves the tool's cost per call when no estimate is given", async () => {
      const { guard } = await guarded(
        makeStore,
        { toolBudget: 5 },
        { tools: { search: { costPerCall: 0.25 } } },
      );
      const out = await guard.toolCall({ toolCallId: 'c1', toolName: 'search', run: () => 'x' });
      expect(out.allowed && out.cost).toBe(0.25);
    });

    it('commits the actual cost a result reports', async () => {
      const { guard, service } = await guarded(makeStore, { toolBudget: 5 });
      const out = await guard.toolCall({
        toolCallId: 'c1',
        toolName: 'search',
        estimate: 1,
        run: () => toolResult('x', { cost: 0.3 }),
      });
      expect(out).toEqual({ allowed: true, output: 'x', cost: 0.3 });
      expect((await service.getGuardrails(PLAN))?.budgetSpent).toBe(0.3);
    });

    it('lets exactly three of ten parallel calls run against a budget for three', async () => {
      const { guard } = await guarded(makeStore, { toolBudget: 3 });
      let ran = 0;
      const outs = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          guard.toolCall({ toolCallId: `c${i}`, toolName: 'search', estimate: 1, run: () => ++ran }),
        ),
      );
      expect(ran).toBe(3);
      expect(outs.filter((o) => o.allowed)).toHaveLength(3);
    });

    it('reserves apart for two guards of one plan running calls with the same id at once', async () => {
      const { guard, service } = await guarded(makeStore, { toolBudget: 1 });
      const other = new RunGuard({ service, planId: PLAN });
      let ran = 0;
      const finish: (() => void)[] = [];
      const run = () => {
        ran++;
        return new Promise<string>((resolve) => finish.push(() => resolve('ok')));
      };
      const first = guard.toolCall({ toolCallId: 'call_0', toolName: 'pay', estimate: 1, run });
      await settledUntil(() => finish.length === 1);
      let answered = false;
      const second = other.toolCall({ toolCallId: 'call_0', toolName: 'pay', estimate: 1, run });
      void second.then(() => (answered = true));
      await settledUntil(() => answered || finish.length === 2);
      finish.forEach((f) => f());
      expect(ran).toBe(1);
      expect(await first).toEqual({ allowed: true, output: 'ok', cost: 1 });
      const out = await second;
      expect(out.allowed === false && out.check.eventType).toBe('budget_blocked');
    });
  });

  describe('retries', () => {
    it('retries a failure up to max_retries_per_failure, then rejects with its error', async () => {
      const { guard, service, delays } = await guarded(makeStore, {
        toolBudget: 5,
        actorLimits: { maxRetriesPerFailure: 2 },
      });
      let tries = 0;
      const call = guard.toolCall({
        toolCallId: 'c1',
        toolName: 'search',
        estimate: 1,
        run: () => {
          tries++;
          throw new TypeError('flaky');
        },
      });
      await expect(call).rejects.toThrow('flaky');
      expect(tries).toBe(3);
      expect(delays).toEqual([100, 200]);
      const types = await eventTypes(service);
      expect(types.filter((t) => t === 'retry_allowed')).toHaveLength(2);
      expect(types.filter((t) => t === 'budget_released')).toHaveLength(3);
      expect(types.at(-1)).toBe('retry_blocked');
    });

    it('checks the wall clock and reserves for another try in one store update', async () => {
      const store = await makeStore();
      const written = updatesOf(store);
      const { guard } = await guarded(async () => store, { toolBudget: 5, maxWallClockSeconds: 60 });
      let tries = 0;
      const out = await guard.toolCall({
        toolCallId: 'c1',
        toolName: 'search',
        estimate: 1,
        run: () => {
          if (tries++ === 0) throw new TypeError('flaky');
          return 'ok';
        },
      });
      expect(out.allowed).toBe(true);
      expect(written).toContainEqual(['wall_clock_allowed', 'budget_reserved']);
    });

    it('counts retries per failure: another error starts its own count', async () => {
      const { guard } = await guarded(makeStore, { actorLimits: { maxRetriesPerFailure: 1 } });
      const errors = [new TypeError('a'), new RangeError('b')];
      let tries = 0;
      const out = await guard.toolCall({
        toolCallId: 'c1',
        toolName: 'search',
        run: () => {
          const error = errors[tries++];
          if (error) throw error;
          return 'ok';
        },
      });
      expect(out).toEqual({ allowed: true, output: 'ok', cost: 0 });
      expect(tries).toBe(3);
    });

    it('does not retry an error marked as not retryable', async () => {
      const { guard } = await guarded(makeStore, { actorLimits: { maxRetriesPerFailure: 3 } });
      let tries = 0;
      const call = guard.toolCall({
        toolCallId: 'c1',
        toolName: 'search',
        run: () => {
          tries++;
          throw new NonRetryableError('bad input');
        },
      });
      await expect(call).rejects.toThrow('bad input');
      expect(tries).toBe(1);
    });

    it('does not try a call again once its caller aborted it, and gives its reservation back', async () => {
      const { guard, service, delays } = await guarded(makeStore, { toolBudget: 5 });
      const caller = new AbortController();
      let tries = 0;
      const call = guard.toolCall({
        toolCallId: 'c1',
        toolName: 'send',
        estimate: 1,
        signal: caller.signal,
        run: () => {
          tries++;
          caller.abort();
          throw new TypeError('aborted while sending');
        },
      });
      await expect(call).rejects.toThrow('aborted while sending');
      expect(tries).toBe(1);
      expect(delays).toEqual([]);
      expect((await service.getGuardrails(PLAN))?.budgetReservedMicros).toBe(0);
    });

    it('tries no more when its caller aborts during the backoff', async () => {
      const caller = new AbortController();
      const { guard } = await guarded(makeStore, {}, { sleep: async () => caller.abort() });
      let tries = 0;
      const call = guard.toolCall({
        toolCallId: 'c1',
        toolName: 'send',
        signal: caller.signal,
        run: () => {
          tries++;
          throw new TypeError('flaky');
        },
      });
      await expect(call).rejects.toThrow('flaky');
      expect(tries).toBe(1);
    });
  });

  describe('the wall clock while a call runs', () => {
    /** A call under a 60 s limit that runs until `finish`, its wall-clock timer armed. */
    async function slowCall() {
      const g = await guarded(makeStore, { maxWallClockSeconds: 60 });
      let finish: (value: string) => void = () => undefined;
      const call = g.guard.toolCall({
        toolCallId: 'c1',
        toolName: 'slow',
        run: () => new Promise<string>((resolve) => (finish = resolve)),
      });
      await settledUntil(() => g.timers.pending.length === 1);
      return { ...g, call, finish: (value: string) => finish(value) };
    }

    it('watches the whole limit again once the plan was set back to not started', async () => {
      const { service, timers, call, finish } = await slowCall();
      await service.configureGuardrails(PLAN, { maxWallClockSeconds: 60, startTime: null });
      timers.fire();
      await settledUntil(() => timers.pending.length === 1);
      expect(timers.pending[0]?.ms).toBe(60_000);
      finish('done');
      await call;
    });

    it('stops watching once the plan no longer has a wall-clock limit', async () => {
      const { service, timers, call, finish } = await slowCall();
      await service.configureGuardrails(PLAN, {});
      const asked = vi.spyOn(service, 'checkWallClock');
      const armed = timers.armed.length;
      timers.fire();
      await settledUntil(() => asked.mock.results.length === 1);
      expect(await asked.mock.results[0]?.value).toMatchObject({ allowed: true, limit: null });
      await new Promise<void>((resolve) => setImmediate(resolve));
      expect(timers.armed).toHaveLength(armed);
      finish('done');
      expect(await call).toEqual({ allowed: true, output: 'done', cost: 0 });
    });

    it('charges the estimate of a call the store could not check the clock of, and tells it to stop', async () => {
      const { guard, service, timers } = await guarded(makeStore, { maxWallClockSeconds: 10, toolBudget: 5 });
      const hung = hanging();
      const call = guard.toolCall({ toolCallId: 'c1', toolName: 'search', estimate: 1, run: hung.run });
      await settledUntil(() => timers.pending.length === 1);
      const lost = clockLostOnce(service);
      timers.fire();

      await expect(call).rejects.toBe(lost);
      expect(hung.signal()?.aborted).toBe(true);
      const g = await service.getGuardrails(PLAN);
      expect([g?.budgetSpent, g?.budgetReserved]).toEqual([1, 0]);
    });

    it('leaves no timer behind once the call returned', async () => {
      const { guard, timers } = await guarded(makeStore, { maxWallClockSeconds: 10 });
      await guard.toolCall({ toolCallId: 'c1', toolName: 'search', run: () => 1 });
      expect(timers.armed).toHaveLength(1);
      expect(timers.pending).toHaveLength(0);
    });

    it("aborts the call's signal and denies it when the limit runs out", async () => {
      const { guard, clock, timers } = await guarded(makeStore, {
        maxWallClockSeconds: 10,
        toolBudget: 5,
      });
      const hung = hanging();
      const call = guard.toolCall({ toolCallId: 'c1', toolName: 'search', estimate: 1, run: hung.run });
      await settledUntil(() => timers.pending.length === 1);
      expect(timers.pending[0]?.ms).toBe(10_000);
      clock.advance(10_001);
      timers.fire();
      const out = await call;
      expect(out.allowed === false && out.check.eventType).toBe('wall_clock_blocked');
      expect(hung.signal()?.aborted).toBe(true);
    });

    it('charges the estimate of a call cut short, since the tool may still be running', async () => {
      const { guard, service, clock, timers } = await guarded(makeStore, {
        maxWallClockSeconds: 10,
        toolBudget: 5,
      });
      const call = guard.toolCall({
        toolCallId: 'c1',
        toolName: 'search',
        estimate: 1,
        run: () => new Promise<never>(() => undefined),
      });
      await settledUntil(() => timers.pending.length === 1);
      clock.advance(10_001);
      timers.fire();
      await call;
      const entry = (await service.getAuditTrail(PLAN))?.entries.at(-1);
      expect(entry?.eventType).toBe('budget_committed');
      expect(String(entry?.details['note'])).toContain('may still be running');
      expect((await service.getGuardrails(PLAN))?.budgetSpent).toBe(1);
    });
  });
});

describe('RunGuard input', () => {
  it('marks the plan started again after a start that failed', async () => {
    const [, makeStore] = LOCAL_STORES[0] as (typeof LOCAL_STORES)[number];
    const { guard, service } = await guarded(makeStore, {});
    vi.spyOn(service, 'markStarted').mockRejectedValueOnce(new Error('store out of reach'));
    await expect(guard.toolCall({ toolCallId: 'c1', toolName: 'search', run: () => 1 })).rejects.toThrow(
      'store out of reach',
    );
    const out = await guard.toolCall({ toolCallId: 'c2', toolName: 'search', run: () => 2 });
    expect(out.allowed).toBe(true);
  });

  it('runs the call on its input as it was when the call started', async () => {
    const [, makeStore] = LOCAL_STORES[0] as (typeof LOCAL_STORES)[number];
    const { guard } = await guarded(makeStore, {});
    const input = { query: 'cats' };
    const call = guard.toolCall({ toolCallId: 'c1', toolName: 'search', input, run: (ctx) => ctx.input });
    input.query = 'dogs';
    const out = await call;
    expect(out.allowed && out.output).toEqual({ query: 'cats' });
  });

  it('refuses a tool call id that is not a key, naming the field', async () => {
    const [, makeStore] = LOCAL_STORES[0] as (typeof LOCAL_STORES)[number];
    const { guard } = await guarded(makeStore, {});
    expect(await rejectedField(guard.toolCall({ toolCallId: '', toolName: 'search', run: () => 1 }))).toBe(
      'toolCallId',
    );
  });

  it('takes a signal by its shape, as a polyfill or another realm makes one', async () => {
    const [, makeStore] = LOCAL_STORES[0] as (typeof LOCAL_STORES)[number];
    const { guard } = await guarded(makeStore, {});
    const signal = {
      aborted: false,
      addEventListener: () => undefined,
      removeEventListener: () => undefined,
    };
    const out = await guard.toolCall({
      toolCallId: 'c1',
      toolName: 'search',
      signal: signal as unknown as AbortSignal,
      run: () => 1,
    });
    expect(out).toEqual({ allowed: true, output: 1, cost: 0 });
  });

  it('refuses a signal that is not an AbortSignal, naming the field', async () => {
    const [, makeStore] = LOCAL_STORES[0] as (typeof LOCAL_STORES)[number];
    const { guard } = await guarded(makeStore, {});
    const call = guard.toolCall({
      toolCallId: 'c1',
      toolName: 'search',
      signal: { aborted: true } as AbortSignal,
      run: () => 1,
    });
    expect(await rejectedField(call)).toBe('signal');
  });

  it('refuses an input that is not JSON, naming the field', async () => {
    const [, makeStore] = LOCAL_STORES[0] as (typeof LOCAL_STORES)[number];
    const { guard } = await guarded(makeStore, {});
    const call = guard.toolCall({
      toolCallId: 'c1',
      toolName: 'search',
      input: { f: () => 1 },
      run: () => 1,
    });
    expect(await rejectedField(call)).toBe('input.f');
  });

  it('refuses an unpricedModels other than deny or allow, naming the field', () => {
    const options = {
      service: new AutonomyGuardrailService(),
      planId: PLAN,
      unpricedModels: 'warn' as 'deny',
    };
    expect(() => new RunGuard(options)).toThrow(expect.objectContaining({ field: 'unpricedModels' }));
  });

  it.each([
    ['timers', { setTimeout: () => 1 }],
    ['sleep', 100],
    ['clock', { now: 5 }],
    ['retry', { baseMs: -1 }],
  ])('refuses a run guard whose %s option is not what it must be', (field, value) => {
    const options = { service: new AutonomyGuardrailService(), planId: PLAN, [field]: value };
    expect(() => new RunGuard(options as never)).toThrow(
      expect.objectContaining({ field: field === 'retry' ? 'retry.baseMs' : field }),
    );
  });

  it('refuses a tool rule with a bad calls-per-plan limit, naming the field', () => {
    expect(
      () =>
        new RunGuard({
          service: new AutonomyGuardrailService(),
          planId: PLAN,
          tools: { s: { maxCallsPerPlan: 0 } },
        }),
    ).toThrow(expect.objectContaining({ field: 'tools.s.maxCallsPerPlan' }));
  });

  it.each([
    [{ s: { costPerCall: -1 } }, 'tools.s.costPerCall must be a finite number >= 0, got -1'],
    [{ s: { requiresConfirmation: 'yes' } }, 'tools.s.requiresConfirmation must be a boolean, got "yes"'],
    [{ s: { maxCalls: 3 } }, 'tools.s.maxCalls is not a known field'],
    [{ s: { maxCallsPerPlan: 0 } }, 'tools.s.maxCallsPerPlan must be an integer >= 1 or null, got 0'],
    [{ s: null }, 'tools.s must be an object, got null'],
    [{ s: { operation: '  ' } }, 'tools.s.operation must not be empty'],
    [new Map([['a.b', { costPerCall: 'x' }]]), 'tools["a.b"].costPerCall must be a finite number >= 0'],
  ])('refuses a bad tool rule with a message naming the field (%j)', (tools, message) => {
    const options = { service: new AutonomyGuardrailService(), planId: PLAN, tools };
    expect(() => new RunGuard(options as never)).toThrow(message);
  });

  it('takes an undefined tool rule for a rule with nothing in it', () => {
    const guard = new RunGuard({
      service: new AutonomyGuardrailService(),
      planId: PLAN,
      tools: { s: undefined } as never,
    });
    expect(guard.ruleFor('s')).toEqual({});
  });

  it('keeps a tool rule as given, null limits meaning none', async () => {
    const service = new AutonomyGuardrailService();
    const guard = new RunGuard({
      service,
      planId: PLAN,
      tools: { s: { operation: 'Deploy', maxCallsPerPlan: null, costPerCall: null } },
    });
    expect(guard.ruleFor('s')).toEqual({ operation: 'Deploy', maxCallsPerPlan: null, costPerCall: null });
  });
});
