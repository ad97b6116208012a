import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryStore, NonRetryableError, PlanExecutor, type Tool } from '../../src/index.js';
import { updatesOf } from '../support/service.js';
import {
  detailsOf,
  eventsOf,
  guardrailsOf,
  harness,
  planOf,
  recordingSleep,
  tool,
  type HarnessOptions,
} from '../support/executor.js';

/** A tool that throws the errors made by `errors`, one per call, then returns 'ok'. */
function flaky(errors: (() => unknown)[], extra: Partial<Omit<Tool, 'name' | 'run'>> = {}) {
  let call = 0;
  return tool('flaky', {
    ...extra,
    run: () => {
      const make = errors[call++];
      if (make) throw make();
      return 'ok';
    },
  });
}

const typeError = () => new TypeError('temporarily unavailable');
const rangeError = () => new RangeError('rate limited');

async function run(t: Tool, maxRetriesPerFailure: number | null, options: HarnessOptions = {}) {
  const h = await harness([t], { guardrails: { actorLimits: { maxRetriesPerFailure } }, ...options });
  const result = await h.executor.execute(planOf([{ id: 'd1', tool: t.name }]));
  return { ...h, result };
}

describe('retrying a failed decision', () => {
  it('retries a failing tool until it succeeds and reports the attempts it took', async () => {
    const { result } = await run(flaky([typeError, typeError]), 3);
    expect(result.status).toBe('completed');
    expect(result.completed).toEqual([{ decisionId: 'd1', output: 'ok', cost: 0, attempts: 3 }]);
  });

  it('checks the wall clock and reserves for another try in one store update', async () => {
    const store = new MemoryStore();
    const written = updatesOf(store);
    await run(flaky([typeError], { cost: 1 }), 3, { store, guardrails: { maxWallClockSeconds: 60 } });
    expect(written).toContainEqual(['wall_clock_allowed', 'budget_reserved']);
  });

  it('hands each try its attempt number', async () => {
    const attempts: number[] = [];
    let call = 0;
    const counting = tool('counting', {
      run: (_input, ctx) => {
        attempts.push(ctx.attempt);
        if (call++ < 2) throw typeError();
        return 'ok';
      },
    });
    await run(counting, 5);
    expect(attempts).toEqual([1, 2, 3]);
  });

  it('audits retry_allowed with the retries so far before each retry', async () => {
    const { service } = await run(flaky([typeError, typeError]), 3);
    expect((await detailsOf(service, 'retry_allowed')).map((d) => d['current_retries'])).toEqual([0, 1]);
  });

  it('releases the failed try’s reservation, re-checks the wall clock and reserves again', async () => {
    const { service } = await run(flaky([typeError]), 1);
    expect(await eventsOf(service)).toEqual([
      'wall_clock_allowed',
      'step_allowed',
      'confirmation_not_required',
      'budget_reserved',
      'budget_released',
      'retry_allowed',
      'wall_clock_allowed',
      'budget_reserved',
      'budget_committed',
    ]);
  });

  it('spends only for the try that succeeded', async () => {
    const { service } = await run(flaky([typeError, typeError], { cost: 0.25 }), 3, {
      guardrails: { toolBudget: 1, actorLimits: { maxRetriesPerFailure: 3 } },
    });
    const g = await guardrailsOf(service);
    expect([g.budgetSpent, g.budgetReserved]).toEqual([0.25, 0]);
  });

  it('does not count a step for a retry', async () => {
    const { service } = await run(flaky([typeError, typeError]), 3);
    expect((await guardrailsOf(service)).stepCount).toBe(1);
  });

  it('audits retry_blocked once the failure used up max_retries_per_failure', async () => {
    const { result, service } = await run(flaky([typeError, typeError, typeError]), 2);
    expect(result.status).toBe('failed');
    expect((await eventsOf(service)).at(-1)).toBe('retry_blocked');
  });

  it('ends a failure that ran out of retries as the tool’s failure, with its last error, not a violation', async () => {
    const last = new TypeError('the third time');
    const { result } = await run(flaky([typeError, () => last]), 1);
    expect([result.status, result.error, result.violation]).toEqual(['failed', last, undefined]);
  });

  it('reports the decision that failed, the tries it took and the tool’s last error', async () => {
    const { result } = await run(flaky([typeError, typeError, () => new TypeError('exit code 7')]), 2);
    expect(result.failure).toEqual({ decisionId: 'd1', attempts: 3, error: 'exit code 7' });
  });

  it('reports the last error of a tool that fails at once, not worth retrying', async () => {
    const { result } = await run(flaky([() => new NonRetryableError('permission denied')]), 2);
    expect(result.failure).toEqual({ decisionId: 'd1', attempts: 1, error: 'permission denied' });
  });

  it('keeps only the last 20 lines of a long error', async () => {
    const lines = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`);
    const { result } = await run(flaky([() => new NonRetryableError(lines.join('\n'))]), 0);
    expect(result.failure?.error).toBe(`…${lines.slice(10).join('\n')}`);
  });

  it('reports no failure for a decision that failed, then succeeded', async () => {
    const { result } = await run(flaky([typeError]), 1);
    expect(result.failure).toBeUndefined();
  });

  it('records the tool’s error in the audit entry that refuses another retry', async () => {
    const { service } = await run(flaky([() => new TypeError('exit code 7')]), 0);
    expect(await detailsOf(service, 'retry_blocked')).toEqual([
      expect.objectContaining({ error: 'exit code 7' }),
    ]);
  });

  it('records the tool’s error with the release of the failed try’s reservation', async () => {
    const { service } = await run(flaky([() => new NonRetryableError('permission denied')]), 2);
    expect(await detailsOf(service, 'budget_released')).toEqual([
      expect.objectContaining({ error: 'permission denied' }),
    ]);
  });

  it('keeps the end of an error too long for the audit entry, within its details limit', async () => {
    const long = `${'a'.repeat(3000)}\n${'b'.repeat(3000)}`;
    const { service } = await run(flaky([() => new TypeError(long)]), 0);
    const [details] = await detailsOf(service, 'retry_blocked');
    expect(Buffer.byteLength(JSON.stringify(details), 'utf8')).toBeLessThanOrEqual(4096);
    expect(details?.['error']).toMatch(/^…a*\nb{3000}$/);
  });

  it('tries the tool once more than max_retries_per_failure', async () => {
    const t = flaky([typeError, typeError, typeError, typeError]);
    await run(t, 2);
    expect(t.calls).toHaveLength(3);
  });

  it('does not retry at all when max_retries_per_failure is 0', async () => {
    const t = flaky([typeError]);
    const { result, delays } = await run(t, 0);
    expect(t.calls).toHaveLength(1);
    expect(delays).toEqual([]);
    expect(result.status).toBe('failed');
  });

  it('counts retries per failure: a different error has retries of its own', async () => {
    const t = flaky([typeError, rangeError, typeError, rangeError]);
    const { result } = await run(t, 2);
    expect(result.status).toBe('completed');
    expect(result.completed[0]?.attempts).toBe(5);
  });

  it('stops when one of several failures used up its retries', async () => {
    const t = flaky([typeError, rangeError, typeError]);
    const { result, service } = await run(t, 1);
    expect(result.error).toBeInstanceOf(TypeError);
    expect((await detailsOf(service, 'retry_allowed')).map((d) => d['current_retries'])).toEqual([0, 0]);
  });

  it('keeps the work of earlier decisions when a decision runs out of retries', async () => {
    const ok = tool('ok');
    const t = flaky([typeError, typeError]);
    const { executor } = await harness([ok, t], { guardrails: { actorLimits: { maxRetriesPerFailure: 1 } } });
    const result = await executor.execute(
      planOf([
        { id: 'd1', tool: 'ok', input: 'first' },
        { id: 'd2', tool: 'flaky' },
      ]),
    );
    expect(result.completed).toEqual([{ decisionId: 'd1', output: 'first', cost: 0, attempts: 1 }]);
  });
});

describe('backoff between retries', () => {
  it('waits base * factor^n before the n-th retry of a failure', async () => {
    const { delays } = await run(flaky([typeError, typeError, typeError]), 5, {
      retry: { baseMs: 100, factor: 3 },
    });
    expect(delays).toEqual([100, 300, 900]);
  });

  it('waits at most maxMs', async () => {
    const { delays } = await run(flaky([typeError, typeError, typeError, typeError]), 5, {
      retry: { baseMs: 100, factor: 10, maxMs: 5_000 },
    });
    expect(delays).toEqual([100, 1_000, 5_000, 5_000]);
  });

  it('waits 100, 200, 400 ms by default', async () => {
    const { delays } = await run(flaky([typeError, typeError, typeError]), 5);
    expect(delays).toEqual([100, 200, 400]);
  });

  it('starts the backoff afresh for each failure', async () => {
    const { delays } = await run(flaky([typeError, typeError, rangeError]), 5);
    expect(delays).toEqual([100, 200, 100]);
  });

  it('refuses a retry once the backoff used up the wall clock', async () => {
    const t = flaky([typeError, typeError]);
    const { result, service } = await run(t, 5, {
      guardrails: { maxWallClockSeconds: 1, actorLimits: { maxRetriesPerFailure: 5 } },
      retry: { baseMs: 600, factor: 1 },
    });
    expect(result.violation?.check.eventType).toBe('wall_clock_blocked');
    expect((await eventsOf(service)).slice(-2)).toEqual(['retry_allowed', 'wall_clock_blocked']);
    expect(t.calls).toHaveLength(2);
  });

  describe('longer than a timer can wait (2^31 - 1 ms), on real timers', () => {
    const BACKOFF_MS = 3_000_000_000;

    /** A plan whose tool fails once, run with the executor's own sleep; the runtime's time is fake. */
    async function failingOnceWithLongBackoff() {
      const t = flaky([typeError]);
      const { service } = await harness([], { guardrails: { actorLimits: { maxRetriesPerFailure: 1 } } });
      const executor = new PlanExecutor({
        service,
        tools: [t],
        retry: { baseMs: BACKOFF_MS, maxMs: BACKOFF_MS },
      });
      const running = executor.execute(planOf([{ id: 'd1', tool: 'flaky' }]));
      return { t, running };
    }

    beforeEach(() => {
      vi.useFakeTimers(); // they fire a delay past their range after 1 ms, as the runtime's do
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    it('does not retry before the backoff is over', async () => {
      const { t } = await failingOnceWithLongBackoff();
      await vi.advanceTimersByTimeAsync(BACKOFF_MS - 1);
      expect(t.calls).toHaveLength(1);
    });

    it('retries once the backoff is over', async () => {
      const { t, running } = await failingOnceWithLongBackoff();
      await vi.advanceTimersByTimeAsync(BACKOFF_MS);
      expect((await running).status).toBe('completed');
      expect(t.calls).toHaveLength(2);
    });
  });

  it.each([
    ['a negative baseMs', { baseMs: -1 }, 'retry.baseMs'],
    ['a factor that is not a number', { factor: Number.NaN }, 'retry.factor'],
    ['an infinite maxMs', { maxMs: Number.POSITIVE_INFINITY }, 'retry.maxMs'],
  ])('refuses %s', async (_label, retry, field) => {
    await expect(harness([], { retry })).rejects.toMatchObject({ field });
  });
});

describe('failures that are not retried', () => {
  it('fails at once on a NonRetryableError, with the error in the result', async () => {
    const error = new NonRetryableError('permission denied');
    const t = flaky([() => error]);
    const { result, delays } = await run(t, 5);
    expect(result.status).toBe('failed');
    expect(result.error).toBe(error);
    expect(result.violation).toBeUndefined();
    expect(t.calls).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it('fails at once on any error that says retryable: false', async () => {
    const error = Object.assign(new Error('bad input'), { retryable: false });
    const t = flaky([() => error]);
    const { result } = await run(t, 5);
    expect(result.error).toBe(error);
    expect(t.calls).toHaveLength(1);
  });

  it('makes no retry check for an error that is not retryable', async () => {
    const { service } = await run(flaky([() => new NonRetryableError('no')]), 5);
    expect(await eventsOf(service)).not.toContain('retry_allowed');
    expect(await eventsOf(service)).not.toContain('retry_blocked');
  });

  it('does not retry a guard violation raised inside the tool', async () => {
    const wrapper = tool('wrapper', { run: (_input, ctx) => ctx.callTool('wrapper') });
    const { result } = await run(wrapper, 5, {
      guardrails: { actorLimits: { maxRetriesPerFailure: 5, maxToolCallsPerInvocation: 1 } },
    });
    expect(result.violation?.check.eventType).toBe('actor_tool_calls_blocked');
    expect(wrapper.calls).toHaveLength(2);
  });

  it('does not retry without a service', async () => {
    const { delays, sleep } = recordingSleep(null);
    const t = flaky([typeError]);
    const executor = new PlanExecutor({ tools: [t], sleep });
    const result = await executor.execute(planOf([{ id: 'd1', tool: 'flaky' }]));
    expect(result.status).toBe('failed');
    expect(result.error).toBeInstanceOf(TypeError);
    expect(t.calls).toHaveLength(1);
    expect(delays).toEqual([]);
  });
});
