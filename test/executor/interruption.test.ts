import { describe, expect, it, vi } from 'vitest';
import { PlanExecutor, type Sleep } from '../../src/index.js';
import { deferred, echo, guardrailsOf, harness, planOf, tool } from '../support/executor.js';

/** A tool that always fails with an error worth another try. */
function failingTool() {
  return tool('failing', {
    run: () => {
      throw new TypeError('temporarily unavailable');
    },
  });
}

/** A plan of one decision of `failing`, run with retries allowed and `sleep` between them. */
async function runFailing(controller: AbortController, sleep: Sleep) {
  const failing = failingTool();
  const { executor } = await harness([failing], {
    guardrails: { actorLimits: { maxRetriesPerFailure: 5 } },
    sleep,
  });
  const result = await executor.execute(planOf([{ id: 'a', tool: 'failing' }]), {
    signal: controller.signal,
  });
  return { failing, result };
}

describe('a run interrupted through its signal', () => {
  it('ends failed with RUN_INTERRUPTED before the next decision, keeping the work done', async () => {
    const controller = new AbortController();
    const first = tool('first');
    const { executor } = await harness([first, echo]);
    executor.on('decision', () => controller.abort());
    const result = await executor.execute(
      planOf([
        { id: 'a', tool: 'first' },
        { id: 'b', tool: 'echo' },
      ]),
      { signal: controller.signal },
    );
    expect([
      result.status,
      (result.error as { code?: string }).code,
      result.completed.map((c) => c.decisionId),
    ]).toEqual(['failed', 'RUN_INTERRUPTED', ['a']]);
  });

  it('aborts the signal of the tool running, and stops waiting for a tool that ignores it', async () => {
    const controller = new AbortController();
    const started = deferred();
    let seen: AbortSignal | undefined;
    const stuck = tool('stuck', {
      run: (_input, ctx) => {
        seen = ctx.signal;
        started.resolve();
        return new Promise(() => {});
      },
    });
    const { executor } = await harness([stuck]);
    const run = executor.execute(planOf([{ id: 'a', tool: 'stuck' }]), { signal: controller.signal });
    await started.promise;
    controller.abort();
    const result = await run;
    expect([result.status, seen?.aborted]).toEqual(['failed', true]);
  });

  it('gives back the reservation of the interrupted call', async () => {
    const controller = new AbortController();
    const costly = tool('costly', { cost: 2, run: () => (controller.abort(), new Promise(() => {})) });
    const { executor, service } = await harness([costly], { guardrails: { toolBudget: 10 } });
    await executor.execute(planOf([{ id: 'a', tool: 'costly' }]), { signal: controller.signal });
    const g = await guardrailsOf(service);
    expect([g.budgetReserved, g.budgetSpent]).toEqual([0, 0]);
  });

  it('does not retry a call that failed because the run was interrupted', async () => {
    const controller = new AbortController();
    const failing = tool('failing', {
      run: () => {
        controller.abort();
        throw new Error('stopped');
      },
    });
    const { executor } = await harness([failing], {
      guardrails: { actorLimits: { maxRetriesPerFailure: 5 } },
    });
    await executor.execute(planOf([{ id: 'a', tool: 'failing' }]), { signal: controller.signal });
    expect(failing.calls).toHaveLength(1);
  });

  describe('during the backoff before a retry', () => {
    it('does not try the tool again', async () => {
      const controller = new AbortController();
      const { failing } = await runFailing(controller, async () => controller.abort());
      expect(failing.calls).toHaveLength(1);
    });

    it('stops waiting for the backoff, and ends failed with RUN_INTERRUPTED', async () => {
      const controller = new AbortController();
      const endless = () => (controller.abort(), new Promise<void>(() => {}));
      const { result } = await runFailing(controller, endless);
      expect([result.status, (result.error as { code?: string }).code]).toEqual([
        'failed',
        'RUN_INTERRUPTED',
      ]);
    });

    it('leaves no timer running with the default sleep', async () => {
      vi.useFakeTimers(); // the runtime's timers, which the default sleep waits on
      try {
        const controller = new AbortController();
        const { service } = await harness([], { guardrails: { actorLimits: { maxRetriesPerFailure: 5 } } });
        const executor = new PlanExecutor({ service, tools: [failingTool()], retry: { baseMs: 60_000 } });
        const running = executor.execute(planOf([{ id: 'a', tool: 'failing' }]), {
          signal: controller.signal,
        });
        await vi.advanceTimersByTimeAsync(1000); // the first try failed: the backoff is running
        controller.abort();
        await running;
        expect(vi.getTimerCount()).toBe(0);
      } finally {
        vi.useRealTimers();
      }
    });
  });

  it('takes a signal by its shape, as a polyfill or another realm makes one', async () => {
    const { executor } = await harness([echo]);
    const signal = {
      aborted: false,
      addEventListener: () => undefined,
      removeEventListener: () => undefined,
    };
    const result = await executor.execute(planOf([{ id: 'a', tool: 'echo' }]), {
      signal: signal as unknown as AbortSignal,
    });
    expect(result.status).toBe('completed');
  });

  it('refuses a signal that is not an AbortSignal, naming the field', async () => {
    const { executor } = await harness([echo]);
    const run = executor.execute(planOf([{ id: 'a', tool: 'echo' }]), {
      signal: 'stop' as unknown as AbortSignal,
    });
    await expect(run).rejects.toMatchObject({ field: 'options.signal' });
  });
});
