import { afterEach, describe, expect, it, vi } from 'vitest';
import { GuardrailViolationError, type ToolContext } from '../../src/index.js';
import { decisions, deferred, harness, planOf, tool } from '../support/executor.js';

// The context a tool is called with, and the signal in it, which is made only for a tool that reads it.

/** Counts the AbortControllers made while a test runs. */
function countControllers(): () => number {
  let made = 0;
  const Real = globalThis.AbortController;
  vi.stubGlobal(
    'AbortController',
    class extends Real {
      constructor() {
        super();
        made++;
      }
    },
  );
  return () => made;
}

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("a tool's context", () => {
  it('carries its signal into a copy of it', async () => {
    let seen: ToolContext | undefined;
    const keep = tool('keep', { run: (_input, ctx) => ((seen = ctx), null) });
    const { executor } = await harness([keep], { guardrails: { maxWallClockSeconds: 60 } });
    await executor.execute(planOf([{ id: 'd1', tool: 'keep' }]));
    const copy = { ...seen };
    expect([copy.signal instanceof AbortSignal, copy.signal === seen?.signal]).toEqual([true, true]);
  });

  it('makes no AbortController for tools that do not read their signal', async () => {
    const made = countControllers();
    const { executor } = await harness([tool('echo')], { guardrails: { maxWallClockSeconds: 60 } });
    await executor.execute(planOf(decisions(3)));
    expect(made()).toBe(0);
  });

  it('makes one AbortController for each call of a tool that reads its signal', async () => {
    const made = countControllers();
    const reads = tool('echo', { run: (input, ctx) => (ctx.signal.aborted, input) });
    const { executor } = await harness([reads], { guardrails: { maxWallClockSeconds: 60 } });
    await executor.execute(planOf(decisions(3)));
    expect(made()).toBe(3);
  });

  it('hands a signal first read after the wall clock ran out already aborted, with the violation', async () => {
    const started = deferred<ToolContext>();
    const hang = tool('hang', { run: (_input, ctx) => (started.resolve(ctx), new Promise(() => {})) });
    const { executor, clock, timers } = await harness([hang], { guardrails: { maxWallClockSeconds: 60 } });
    const running = executor.execute(planOf([{ id: 'd1', tool: 'hang' }]));
    const ctx = await started.promise;
    clock.advance(60_000);
    timers.fire();
    await running;
    expect([ctx.signal.aborted, ctx.signal.reason instanceof GuardrailViolationError]).toEqual([true, true]);
  });
});
