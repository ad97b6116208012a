import { describe, expect, it } from 'vitest';
import { guarded, LOCAL_STORES } from './support.js';

const estimate = { inputTokens: 1000, maxOutputTokens: 1000 };
const PRICED = { models: { m: { input: 1, output: 1 } } };

describe.each(LOCAL_STORES)('RunGuard.lastLimit on %s', (_name, makeStore) => {
  it('is null while no limit refused a call', async () => {
    const { guard } = await guarded(makeStore, { maxSteps: 5 });

    await guard.toolCall({ toolCallId: 'c1', toolName: 'search', run: () => 'x' });

    expect([guard.lastLimit, guard.lastLimitText]).toEqual([null, null]);
  });

  it('is the step limit that refused a tool call, with a line saying so', async () => {
    const { guard } = await guarded(makeStore, { maxSteps: 1 });

    await guard.toolCall({ toolCallId: 'c1', toolName: 'search', run: () => 'x' });
    await guard.toolCall({ toolCallId: 'c2', toolName: 'search', run: () => 'x' });

    expect(guard.lastLimit?.eventType).toBe('step_blocked');
    expect(guard.lastLimitText).toBe('leash ended the run (step_blocked): step 1 reaches max_steps 1');
  });

  it('is not a confirmation a call waits for: that ends no run', async () => {
    const { guard } = await guarded(makeStore, { requiredConfirmations: ['deploy'] });

    await guard.toolCall({ toolCallId: 'c1', toolName: 'deploy', run: () => 'x' });

    expect(guard.lastLimit).toBeNull();
  });

  it('is the budget that refused a model call', async () => {
    const { guard } = await guarded(makeStore, { toolBudget: 0.001 }, PRICED);

    await guard.modelCall({
      modelId: 'm',
      estimate,
      run: () => ({ output: '', usage: { inputTokens: 1, outputTokens: 1 } }),
    });

    expect(guard.lastLimit?.eventType).toBe('budget_blocked');
  });

  it('is the limit limitReached found', async () => {
    const { guard, clock } = await guarded(makeStore, { maxWallClockSeconds: 1 });
    await guard.toolCall({ toolCallId: 'c1', toolName: 'search', run: () => 'x' });
    clock.advance(2000);

    const reached = await guard.limitReached();

    expect(guard.lastLimit).toBe(reached);
    expect(guard.lastLimit?.eventType).toBe('wall_clock_blocked');
  });
});
