import { describe, expect, it } from 'vitest';
import { RunGuard } from '../../src/index.js';
import { counted, guarded, LOCAL_STORES } from './support.js';

const TYPO = 'plann';
const NOT_CONFIGURED = { code: 'PLAN_NOT_CONFIGURED', message: expect.stringContaining(`plan "${TYPO}"`) };
const usage = { inputTokens: 1, outputTokens: 1 };
const estimate = { inputTokens: 10, maxOutputTokens: 10 };

describe.each(LOCAL_STORES)('RunGuard on a plan nobody configured, on %s', (_name, makeStore) => {
  /** A guard of a mistyped plan id, beside the configured plan `plan`. */
  async function typo(options: { unconfiguredPlans?: 'allow' | 'deny' } = {}) {
    const { service, clock } = await guarded(makeStore, { toolBudget: 3 });
    return { service, clock, guard: new RunGuard({ service, planId: TYPO, ...options }) };
  }

  it('refuses a tool call with an error naming the plan, without running the tool', async () => {
    const { guard } = await typo();
    const tool = counted('done');

    const call = guard.toolCall({ toolCallId: 'c1', toolName: 'search', run: tool.run });

    await expect(call).rejects.toMatchObject(NOT_CONFIGURED);
    expect(tool.calls).toBe(0);
  });

  it('says how to configure the plan, and how to run it without limits', async () => {
    const { guard } = await typo();

    const error: unknown = await guard
      .toolCall({ toolCallId: 'c1', toolName: 'search', run: () => 'x' })
      .catch((e: unknown) => e);

    const message = (error as Error).message;
    for (const way of ['configureGuardrails', 'policy', '--policy', "unconfiguredPlans: 'allow'"]) {
      expect(message).toContain(way);
    }
  });

  it('refuses a model call with an error naming the plan, without making the call', async () => {
    const { guard } = await typo();
    const model = counted({ output: 'hi', usage });

    const call = guard.modelCall({ modelId: 'm', estimate, run: model.run });

    await expect(call).rejects.toMatchObject(NOT_CONFIGURED);
    expect(model.calls).toBe(0);
  });

  it('refuses to open a model call for a stream, naming the plan', async () => {
    const { guard } = await typo();

    await expect(guard.openModelCall({ modelId: 'm', estimate })).rejects.toMatchObject(NOT_CONFIGURED);
  });

  it('refuses to say whether a call needs a person, naming the plan', async () => {
    const { guard } = await typo();

    const asked = guard.approvalFor({ toolCallId: 'c1', toolName: 'deploy', requiresConfirmation: true });

    await expect(asked).rejects.toMatchObject(NOT_CONFIGURED);
  });

  it('refuses to say whether a limit was reached, naming the plan', async () => {
    const { guard } = await typo();

    await expect(guard.limitReached()).rejects.toMatchObject(NOT_CONFIGURED);
  });

  it('configures nothing and records nothing for the plan it refused', async () => {
    const { service, guard } = await typo();

    await guard.toolCall({ toolCallId: 'c1', toolName: 'search', run: () => 'x' }).catch(() => undefined);

    expect(await service.getGuardrails(TYPO)).toBeNull();
    expect(await service.getAuditTrail(TYPO)).toBeNull();
  });

  it('runs the wall clock of a plan configured after a call was refused, from its next call', async () => {
    const { service, clock, guard } = await typo();
    await guard.toolCall({ toolCallId: 'c1', toolName: 'search', run: () => 'x' }).catch(() => undefined);
    await service.configureGuardrails(TYPO, { maxWallClockSeconds: 1 });

    await guard.toolCall({ toolCallId: 'c2', toolName: 'search', run: () => 'x' });
    clock.advance(2_000);

    expect((await guard.limitReached())?.eventType).toBe('wall_clock_blocked');
  });

  it('runs the calls of a plan nobody configured when the application allows it', async () => {
    const { guard } = await typo({ unconfiguredPlans: 'allow' });
    const tool = counted('done');

    const out = await guard.toolCall({ toolCallId: 'c1', toolName: 'search', run: tool.run });
    const reply = await guard.modelCall({ modelId: 'm', estimate, run: () => ({ output: 'hi', usage }) });

    expect([out.allowed, reply.allowed, tool.calls]).toEqual([true, true, 1]);
    expect(await guard.limitReached()).toBeNull();
  });

  it('refuses an unconfiguredPlans that is neither deny nor allow, naming the field', async () => {
    const { service } = await guarded(makeStore, {});

    const made = () => new RunGuard({ service, planId: TYPO, unconfiguredPlans: 'open' as 'allow' });

    expect(made).toThrow(expect.objectContaining({ field: 'unconfiguredPlans' }));
  });
});
