import { describe, expect, it, vi } from 'vitest';
import {
  AutonomyGuardrailService,
  GuardrailViolationError,
  MemoryStore,
  PlanExecutor,
  ManualClock,
  type JsonValue,
  type Plan,
  type Tool,
} from '../../src/index.js';
import {
  decisions,
  deferred,
  detailsOf,
  echo,
  eventsOf,
  FakeTimers,
  guardrailsOf,
  harness,
  numberIn,
  PLAN_ID,
  planOf,
  T0,
  T0_ISO,
  tool,
  type Harness,
  type HarnessOptions,
} from '../support/executor.js';

/** A tool that moves the clock forward by input.seconds, as if it took that long. */
function takesTime(clock: ManualClock) {
  return tool('work', {
    run: (input: JsonValue | undefined) => {
      clock.advance(numberIn(input, 'seconds') * 1000);
      return input;
    },
  });
}

/** A harness whose `work` tool takes the time its input says. */
async function timed(options: HarnessOptions, more: Tool[] = []) {
  const clock = new ManualClock(T0);
  return harness([takesTime(clock), ...more], { clock, ...options });
}

function work(id: string, seconds: number) {
  return { id, tool: 'work', input: { seconds } };
}

/** A tool that says when it started and then never finishes (unless it listens to its signal). */
function hanging(listen: boolean) {
  const started = deferred<AbortSignal>();
  const t = tool('hang', {
    run: (_input, ctx) => {
      started.resolve(ctx.signal);
      return new Promise((_resolve, reject) => {
        if (listen) ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
      });
    },
  });
  return { tool: t, started: started.promise };
}

describe('the start time', () => {
  it('is set on the first execution', async () => {
    const { executor, service } = await harness([echo], { guardrails: { maxWallClockSeconds: 60 } });
    await executor.execute(planOf(decisions(1)));
    expect((await guardrailsOf(service)).startTime).toBe(T0_ISO);
  });

  it('is saved in the plan’s metadata', async () => {
    const { executor } = await harness([echo], { guardrails: { maxWallClockSeconds: 60 } });
    const plan = planOf(decisions(1));
    await executor.execute(plan);
    expect(plan.metadata['autonomy_guardrails']).toMatchObject({ guardrails: { start_time: T0_ISO } });
  });

  it('is kept when the plan is executed again later', async () => {
    const { executor, service, clock } = await harness([echo], { guardrails: { maxWallClockSeconds: 600 } });
    await executor.execute(planOf(decisions(1)));
    clock.advance(30_000);
    await executor.execute(planOf(decisions(1)));
    expect((await guardrailsOf(service)).startTime).toBe(T0_ISO);
  });

  it('is kept when the guardrails already give one', async () => {
    const start = '2026-11-30T09:59:30.000Z';
    const { executor, service } = await harness([echo], {
      guardrails: { maxWallClockSeconds: 60, startTime: start },
    });
    await executor.execute(planOf(decisions(1)));
    expect((await guardrailsOf(service)).startTime).toBe(start);
  });
});

describe('the wall-clock limit between decisions', () => {
  it('stops the run at the first decision checked after the limit ran out', async () => {
    const h = await timed({ guardrails: { maxWallClockSeconds: 60 } });
    const result = await h.executor.execute(planOf([work('d1', 30), work('d2', 30), work('d3', 1)]));
    expect(result.status).toBe('failed');
    expect(result.violation?.check.eventType).toBe('wall_clock_blocked');
    expect(result.completed.map((c) => c.decisionId)).toEqual(['d1', 'd2']);
  });

  it('records the elapsed seconds with each wall-clock check', async () => {
    const h = await timed({ guardrails: { maxWallClockSeconds: 60 } });
    await h.executor.execute(planOf([work('d1', 20), work('d2', 45), work('d3', 1)]));
    const checks = [
      ...(await detailsOf(h.service, 'wall_clock_allowed')),
      ...(await detailsOf(h.service, 'wall_clock_blocked')),
    ];
    expect(checks.map((d) => d['elapsed_seconds'])).toEqual([0, 20, 65]);
  });

  it('allows a plan any time when it has no wall-clock limit', async () => {
    const { executor, clock } = await harness([echo]);
    clock.advance(365 * 24 * 3_600_000);
    expect((await executor.execute(planOf(decisions(1)))).status).toBe('completed');
  });

  it('does not count time spent awaiting confirmation', async () => {
    const h = await timed({ guardrails: { maxWallClockSeconds: 60, requiredConfirmations: ['deploy'] } }, [
      tool('deploy'),
    ]);
    const plan = planOf([work('d1', 50), { id: 'd2', tool: 'deploy' }, work('d3', 5)]);
    const paused = await h.executor.execute(plan);
    h.clock.advance(3_600_000);
    await h.service.approve(paused.approval?.id ?? '', { by: 'alice' });
    const result = await h.executor.resume(plan);
    expect(result.status).toBe('completed');
    expect((await detailsOf(h.service, 'wall_clock_allowed')).map((d) => d['elapsed_seconds'])).toEqual([
      0, 50, 50, 50,
    ]);
  });

  it('does not count the time a denied confirmation waited', async () => {
    const deploy = tool('deploy');
    const h = await harness([deploy], {
      guardrails: { maxWallClockSeconds: 60, requiredConfirmations: ['deploy'] },
    });
    const paused = await h.executor.execute(planOf([{ id: 'd1', tool: 'deploy' }]));
    h.clock.advance(3_600_000);
    await h.service.deny(paused.approval?.id ?? '', { by: 'bob', reason: 'not now' });
    expect((await h.service.checkWallClock('plan')).allowed).toBe(true);
  });
});

describe('the wall-clock limit across a restart', () => {
  it('keeps the start time in the store, so a restarted service still enforces the limit', async () => {
    const store = new MemoryStore();
    const clock = new ManualClock(T0);
    const started = deferred();
    // The first process dies while its tool runs: its run never ends.
    const crashing = tool('crash', {
      run: () => {
        started.resolve();
        return new Promise(() => undefined);
      },
    });
    const before = new AutonomyGuardrailService({ store, clock });
    await before.configureGuardrails('plan', { maxWallClockSeconds: 60 });
    void new PlanExecutor({ service: before, tools: [crashing], timers: new FakeTimers() }).execute(
      planOf([{ id: 'd1', tool: 'crash' }]),
    );
    await started.promise;
    clock.advance(70_000);

    const service = new AutonomyGuardrailService({ store, clock });
    const executor = new PlanExecutor({ service, tools: [crashing], timers: new FakeTimers() });
    const result = await executor.execute(planOf([{ id: 'd1', tool: 'crash' }]));
    expect(result.violation?.check.eventType).toBe('wall_clock_blocked');
    expect((await guardrailsOf(service)).startTime).toBe(T0_ISO);
  });

  it('keeps the start time in the metadata, so guardrails loaded into a new service enforce the limit', async () => {
    const h = await timed({ guardrails: { maxWallClockSeconds: 60 } });
    const plan = planOf([work('d1', 40)]);
    await h.executor.execute(plan);
    const saved = JSON.parse(JSON.stringify(plan.metadata)) as Record<string, unknown>;
    h.clock.advance(25_000);

    const service = new AutonomyGuardrailService({ clock: h.clock });
    await service.loadFromMetadata('plan', saved);
    const executor = new PlanExecutor({ service, tools: [echo], timers: new FakeTimers() });
    const result = await executor.execute(planOf(decisions(1)));
    expect(result.violation?.check.eventType).toBe('wall_clock_blocked');
    expect((await detailsOf(service, 'wall_clock_blocked'))[0]?.['elapsed_seconds']).toBe(65);
  });
});

describe('aborting a tool when the wall clock runs out', () => {
  it('arms a timer for the time left on the wall clock', async () => {
    const h = await timed({ guardrails: { maxWallClockSeconds: 60 } });
    await h.executor.execute(planOf([work('d1', 20), work('d2', 1)]));
    expect(h.timers.armed.map((t) => t.ms)).toEqual([60_000, 40_000]);
  });

  it('clears the timer when the tool finishes', async () => {
    const { executor, timers } = await harness([echo], { guardrails: { maxWallClockSeconds: 60 } });
    await executor.execute(planOf(decisions(1)));
    expect(timers.armed).toHaveLength(1);
    expect(timers.pending).toEqual([]);
  });

  it('arms no timer when there is no wall-clock limit', async () => {
    const { executor, timers } = await harness([echo]);
    await executor.execute(planOf(decisions(1)));
    expect(timers.armed).toEqual([]);
  });

  it('aborts the tool’s signal with the wall-clock violation', async () => {
    const { tool: hang, started } = hanging(true);
    const { executor, clock, timers } = await harness([hang], { guardrails: { maxWallClockSeconds: 60 } });
    const running = executor.execute(planOf([{ id: 'd1', tool: 'hang' }]));
    const signal = await started;
    clock.advance(60_000);
    timers.fire();
    const result = await running;
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(GuardrailViolationError);
    expect(result.violation?.check.eventType).toBe('wall_clock_blocked');
  });

  it('stops waiting for a tool that ignores its signal', async () => {
    const { tool: hang, started } = hanging(false);
    const { executor, clock, timers, service } = await harness([hang], {
      guardrails: { maxWallClockSeconds: 60, toolBudget: 1 },
    });
    const plan: Plan = planOf([{ id: 'd1', tool: 'hang' }]);
    const running = executor.execute(plan);
    await started;
    clock.advance(61_000);
    timers.fire();
    const result = await running;
    expect(result.status).toBe('failed');
    expect(result.violation?.check.eventType).toBe('wall_clock_blocked');
    expect(plan.phase).toBe('failed');
    expect((await eventsOf(service)).slice(-2)).toEqual(['wall_clock_blocked', 'budget_released']);
  });

  it('refuses calls to other tools made after the signal aborted', async () => {
    const started = deferred();
    const late = deferred<{ call: Promise<unknown> }>();
    const sneaky = tool('sneaky', {
      run: (_input, ctx) => {
        ctx.signal.addEventListener('abort', () => late.resolve({ call: ctx.callTool('echo', 'late') }));
        started.resolve();
        return new Promise(() => undefined);
      },
    });
    const spy = tool('echo');
    const { executor, clock, timers } = await harness([sneaky, spy], {
      guardrails: { maxWallClockSeconds: 60 },
    });
    const running = executor.execute(planOf([{ id: 'd1', tool: 'sneaky' }]));
    await started.promise;
    clock.advance(60_000);
    timers.fire();
    await running;
    await expect((await late.promise).call).rejects.toBeInstanceOf(GuardrailViolationError);
    expect(spy.calls).toEqual([]);
  });

  describe('with a limit longer than a timer can wait (2^31 - 1 ms)', () => {
    const MAX_TIMER_MS = 2 ** 31 - 1;
    const LIMIT_MS = 3_000_000_000; // 35 days

    async function hangingUnderLongLimit() {
      const { tool: hang, started } = hanging(true);
      const h = await harness([hang], { guardrails: { maxWallClockSeconds: LIMIT_MS / 1000 } });
      const running = h.executor.execute(planOf([{ id: 'd1', tool: 'hang' }]));
      const signal = await started;
      return { ...h, running, signal };
    }

    /** Moves the clock to `ms` after the start, fires the pending timer and lets its clock check settle. */
    async function fireAt(h: Harness, ms: number): Promise<void> {
      h.clock.set(T0 + ms);
      h.timers.fire();
      await h.service.getGuardrails(PLAN_ID); // the store answers in order: the timer's check went first
    }

    it('arms the timer for the longest delay a timer keeps', async () => {
      const h = await hangingUnderLongLimit();
      expect(h.timers.armed.map((t) => t.ms)).toEqual([MAX_TIMER_MS]);
    });

    it('checks the wall clock no more often on real timers than their range needs', async () => {
      vi.useFakeTimers(); // the runtime's timers, which fire a delay past their range after 1 ms
      try {
        const { tool: hang, started } = hanging(true);
        const { service } = await harness([], { guardrails: { maxWallClockSeconds: LIMIT_MS / 1000 } });
        const executor = new PlanExecutor({ service, tools: [hang] }); // its default timers
        void executor.execute(planOf([{ id: 'd1', tool: 'hang' }]));
        await started;
        await vi.advanceTimersByTimeAsync(1000);
        expect(await detailsOf(service, 'wall_clock_allowed')).toHaveLength(1); // the check before the step
      } finally {
        vi.useRealTimers();
      }
    });

    it('re-arms the timer for the rest of the limit when it fires', async () => {
      const h = await hangingUnderLongLimit();
      await fireAt(h, MAX_TIMER_MS);
      const [rest] = h.timers.pending.map((t) => t.ms);
      expect(rest).toBeGreaterThanOrEqual(LIMIT_MS - MAX_TIMER_MS);
      expect(rest).toBeLessThanOrEqual(LIMIT_MS - MAX_TIMER_MS + 1);
    });

    it('does not abort the tool a millisecond before the limit', async () => {
      const h = await hangingUnderLongLimit();
      await fireAt(h, MAX_TIMER_MS);
      await fireAt(h, LIMIT_MS - 1);
      expect(h.signal.aborted).toBe(false);
    });

    it('aborts the tool when the limit runs out after re-arming', async () => {
      const h = await hangingUnderLongLimit();
      await fireAt(h, MAX_TIMER_MS);
      await fireAt(h, LIMIT_MS);
      const result = await h.running;
      expect(h.signal.reason).toBeInstanceOf(GuardrailViolationError);
      expect(result.violation?.check.eventType).toBe('wall_clock_blocked');
    });
  });

  describe('when the tool finishes while the timer’s clock check is still out', () => {
    /**
     * A run whose tool finishes when told to, with the timer fired at `firedAt` ms after the start: its
     * clock check is recorded, but its answer waits until `answer` is called.
     */
    async function checkOutWhenToolFinishes(firedAt: number) {
      const started = deferred<AbortSignal>();
      const finish = deferred<JsonValue>();
      const slow = tool('slow', {
        run: (_input, ctx) => {
          started.resolve(ctx.signal);
          return finish.promise;
        },
      });
      const h = await harness([slow], { guardrails: { maxWallClockSeconds: 60 } });
      const running = h.executor.execute(planOf([{ id: 'd1', tool: 'slow' }]));
      const signal = await started.promise;
      const gate = deferred();
      const check = h.service.checkWallClock.bind(h.service);
      const answered: Promise<unknown>[] = [];
      vi.spyOn(h.service, 'checkWallClock').mockImplementation((planId) => {
        const answer = check(planId).then(async (c) => (await gate.promise, c));
        answered.push(answer);
        return answer;
      });
      h.clock.set(T0 + firedAt);
      h.timers.fire();
      await h.service.getGuardrails(PLAN_ID); // the store answers in order: the timer's check went first
      finish.resolve('done');
      const result = await running;
      /** Lets the clock check answer, and waits until the executor has seen its answer. */
      const answer = async (): Promise<void> => {
        gate.resolve();
        await Promise.all(answered);
      };
      return { ...h, result, signal, answer };
    }

    it('leaves no timer armed once the clock answers', async () => {
      const h = await checkOutWhenToolFinishes(59_000);
      await h.answer();
      expect(h.timers.pending).toEqual([]);
    });

    it('adds no audit entry after the run ended', async () => {
      const h = await checkOutWhenToolFinishes(59_000);
      const ended = await eventsOf(h.service);
      await h.answer();
      h.timers.fire();
      await h.service.getGuardrails(PLAN_ID); // the store answers in order: a timer's check would be in
      expect(await eventsOf(h.service)).toEqual(ended);
    });

    it('does not abort the signal of the call that finished', async () => {
      const h = await checkOutWhenToolFinishes(60_000);
      await h.answer();
      expect([h.result.status, h.signal.aborted]).toEqual(['completed', false]);
    });
  });

  it('does not retry a tool stopped by the wall clock', async () => {
    const { tool: hang, started } = hanging(true);
    const { executor, clock, timers, delays } = await harness([hang], {
      guardrails: { maxWallClockSeconds: 60, actorLimits: { maxRetriesPerFailure: 5 } },
    });
    const running = executor.execute(planOf([{ id: 'd1', tool: 'hang' }]));
    await started;
    clock.advance(60_000);
    timers.fire();
    await running;
    expect(hang.calls).toHaveLength(1);
    expect(delays).toEqual([]);
  });
});
