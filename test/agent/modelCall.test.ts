import { describe, expect, it } from 'vitest';
import { modelPrices, parsePolicy, RunGuard } from '../../src/index.js';
import { rejectedField } from '../support/service.js';
import { clockLostOnce, eventTypes, guarded, hanging, LOCAL_STORES, PLAN, settledUntil } from './support.js';

const MODELS = { 'gpt-4o-mini': { input: 0.15, output: 0.6, cached_input: 0.075 } };
const ESTIMATE = { inputTokens: 1000, maxOutputTokens: 500 }; // 0.00045 at gpt-4o-mini's prices

describe.each(LOCAL_STORES)('RunGuard model calls on %s', (_name, makeStore) => {
  it('spends the price of the usage the call reports, cached input at the cached price', async () => {
    const { guard, service } = await guarded(makeStore, { toolBudget: 1 }, { models: MODELS });
    const usage = { inputTokens: 1000, outputTokens: 500, cachedInputTokens: 400 };
    const out = await guard.modelCall({
      modelId: 'gpt-4o-mini',
      estimate: ESTIMATE,
      run: () => ({ output: 'hello', usage }),
    });
    expect(out.allowed && [out.output, out.cost]).toEqual(['hello', 0.00042]);
    expect((await service.getGuardrails(PLAN))?.budgetSpent).toBe(0.00042);
  });

  it("reserves the estimate's price before the call runs", async () => {
    const { guard, service } = await guarded(makeStore, { toolBudget: 1 }, { models: MODELS });
    let reserved: number | undefined;
    await guard.modelCall({
      modelId: 'gpt-4o-mini',
      estimate: ESTIMATE,
      run: async () => {
        reserved = (await service.getGuardrails(PLAN))?.budgetReserved;
        return { output: '', usage: { inputTokens: 0, outputTokens: 0 } };
      },
    });
    expect(reserved).toBe(0.00045);
  });

  it('denies a call whose estimate the budget cannot cover, and does not run it', async () => {
    const { guard, service } = await guarded(makeStore, { toolBudget: 0.0004 }, { models: MODELS });
    let ran = false;
    const out = await guard.modelCall({
      modelId: 'gpt-4o-mini',
      estimate: ESTIMATE,
      run: () => {
        ran = true;
        return { output: '', usage: { inputTokens: 0, outputTokens: 0 } };
      },
    });
    expect(out.allowed === false && out.check.eventType).toBe('budget_blocked');
    expect(ran).toBe(false);
    expect((await eventTypes(service)).at(-1)).toBe('budget_blocked');
  });

  it('denies a call once the wall clock ran out, reserving nothing', async () => {
    const { guard, service, clock } = await guarded(
      makeStore,
      { toolBudget: 1, maxWallClockSeconds: 10 },
      { models: MODELS },
    );
    await guard.openModelCall({ modelId: 'gpt-4o-mini', estimate: ESTIMATE });
    clock.advance(11_000);
    const out = await guard.openModelCall({ modelId: 'gpt-4o-mini', estimate: ESTIMATE });
    expect(out.allowed === false && out.check.eventType).toBe('wall_clock_blocked');
    expect((await eventTypes(service)).at(-1)).toBe('wall_clock_blocked');
  });

  it("aborts the call's signal when the limit runs out, charges its estimate and denies it", async () => {
    const { guard, service, clock, timers } = await guarded(
      makeStore,
      { toolBudget: 1, maxWallClockSeconds: 10 },
      { models: MODELS },
    );
    const hung = hanging();
    const call = guard.modelCall({ modelId: 'gpt-4o-mini', estimate: ESTIMATE, run: hung.run });
    await settledUntil(() => timers.pending.length === 1);
    clock.advance(10_001);
    timers.fire();
    const out = await call;
    expect(out.allowed === false && out.check.eventType).toBe('wall_clock_blocked');
    expect(hung.signal()?.aborted).toBe(true);
    expect((await service.getGuardrails(PLAN))?.budgetSpent).toBe(0.00045);
  });

  it('is not a step', async () => {
    const { guard, service } = await guarded(makeStore, { toolBudget: 1, maxSteps: 1 }, { models: MODELS });
    await guard.modelCall({
      modelId: 'gpt-4o-mini',
      estimate: ESTIMATE,
      run: () => ({ output: '', usage: { inputTokens: 1, outputTokens: 1 } }),
    });
    expect((await service.getGuardrails(PLAN))?.stepCount).toBe(0);
  });

  it('gives the estimate back when the call throws', async () => {
    const { guard, service } = await guarded(makeStore, { toolBudget: 1 }, { models: MODELS });
    const call = guard.modelCall({
      modelId: 'gpt-4o-mini',
      estimate: ESTIMATE,
      run: () => {
        throw new Error('rate limited');
      },
    });
    await expect(call).rejects.toThrow('rate limited');
    const g = await service.getGuardrails(PLAN);
    expect([g?.budgetSpent, g?.budgetReserved]).toEqual([0, 0]);
  });

  it('denies a model with no price while the plan has a budget, naming the model and the option', async () => {
    const { guard } = await guarded(makeStore, { toolBudget: 1 }, { models: MODELS });
    const out = await guard.modelCall({
      modelId: 'o3',
      estimate: ESTIMATE,
      run: () => ({ output: '', usage: { inputTokens: 0, outputTokens: 0 } }),
    });
    expect(out.allowed === false && out.check.eventType).toBe('budget_blocked');
    expect(out.allowed === false && out.reason).toContain('model "o3" has no price');
    expect(out.allowed === false && out.reason).toContain('models.o3 (input, output and cached_input');
    expect(out.allowed === false && out.reason).toContain(
      "models option, or set its unpricedModels: 'allow'",
    );
  });

  it('records the denial of a model with no price, with the model and the option', async () => {
    const { guard, service } = await guarded(makeStore, { toolBudget: 1 }, { models: MODELS });
    await guard.openModelCall({ modelId: 'o3', estimate: ESTIMATE });
    const entry = (await service.getAuditTrail(PLAN))?.entries.at(-1);
    expect(entry?.eventType).toBe('budget_blocked');
    expect(entry?.details).toMatchObject({ model: 'o3', option: 'models.o3' });
  });

  it("names a policy's key and unpriced_models for a model a policy's prices leave out", async () => {
    const policy = parsePolicy('version: 1\nmodels:\n  gpt-4o: { input: 1, output: 2 }\n');
    const { guard, service } = await guarded(makeStore, { toolBudget: 1 }, { models: modelPrices(policy) });
    const out = await guard.openModelCall({ modelId: 'o3', estimate: ESTIMATE });
    expect(out.allowed === false && out.reason).toContain('add models.o3 (input');
    expect(out.allowed === false && out.reason).toContain('to the policy, or set unpriced_models: allow');
    const entry = (await service.getAuditTrail(PLAN))?.entries.at(-1);
    expect(entry?.details).toMatchObject({ model: 'o3', policy_key: 'models.o3' });
  });

  it('runs a model with no price when unpriced models are allowed, spending nothing', async () => {
    const { guard } = await guarded(
      makeStore,
      { toolBudget: 1 },
      { models: MODELS, unpricedModels: 'allow' },
    );
    const out = await guard.modelCall({
      modelId: 'o3',
      estimate: ESTIMATE,
      run: () => ({ output: 'ok', usage: { inputTokens: 10, outputTokens: 10 } }),
    });
    expect(out.allowed && [out.output, out.cost]).toEqual(['ok', 0]);
  });

  it('runs a model with no price for a plan with no budget', async () => {
    const { guard } = await guarded(makeStore, {});
    const out = await guard.modelCall({
      modelId: 'o3',
      estimate: ESTIMATE,
      run: () => ({ output: 'ok', usage: { inputTokens: 10, outputTokens: 10 } }),
    });
    expect(out.allowed).toBe(true);
  });

  it("prices a call at the policy's prices", async () => {
    const policy = parsePolicy('version: 1\nmodels:\n  gpt-4o-mini: { input: 0.15, output: 0.6 }\n');
    const { guard } = await guarded(makeStore, { toolBudget: 1 }, { models: modelPrices(policy) });
    const out = await guard.modelCall({
      modelId: 'gpt-4o-mini',
      estimate: ESTIMATE,
      run: () => ({ output: '', usage: { inputTokens: 1000, outputTokens: 500 } }),
    });
    expect(out.allowed && out.cost).toBe(0.00045);
  });

  it('refuses a usage with more cached tokens than input tokens, naming the field, and charges the estimate', async () => {
    const { guard, service } = await guarded(makeStore, { toolBudget: 1 }, { models: MODELS });
    const call = guard.modelCall({
      modelId: 'gpt-4o-mini',
      estimate: ESTIMATE,
      run: () => ({ output: '', usage: { inputTokens: 1, outputTokens: 0, cachedInputTokens: 2 } }),
    });
    expect(await rejectedField(call)).toBe('usage.cachedInputTokens');
    expect((await service.getGuardrails(PLAN))?.budgetSpent).toBe(0.00045);
  });

  it.each([undefined, null, 'hello'])(
    'refuses a run that resolves %j instead of its output and usage, naming run, and charges the estimate',
    async (resolved) => {
      const { guard, service } = await guarded(makeStore, { toolBudget: 1 }, { models: MODELS });
      const call = guard.modelCall({
        modelId: 'gpt-4o-mini',
        estimate: ESTIMATE,
        run: () => resolved as never,
      });
      expect(await rejectedField(call)).toBe('run');
      const g = await service.getGuardrails(PLAN);
      expect([g?.budgetReserved, g?.budgetSpent]).toEqual([0, 0.00045]);
    },
  );

  describe('call ids', () => {
    const START = { modelId: 'gpt-4o-mini', estimate: ESTIMATE, callId: 'm1' };

    it('refuses a call id of a call still open in the guard, naming callId', async () => {
      const { guard } = await guarded(makeStore, { toolBudget: 1 }, { models: MODELS });
      await guard.openModelCall(START);
      expect(await rejectedField(guard.openModelCall(START))).toBe('callId');
    });

    it('takes a call id again once its call was settled', async () => {
      const { guard, service } = await guarded(makeStore, { toolBudget: 1 }, { models: MODELS });
      const first = await guard.openModelCall(START);
      if (!first.allowed) throw new Error('the call should be allowed');
      await first.handle.abandon();
      const again = await guard.openModelCall(START);
      if (!again.allowed) throw new Error('the call should be allowed');
      await again.handle.abandon();
      expect((await service.getGuardrails(PLAN))?.budgetSpent).toBe(0.0009);
    });

    it("keeps a model call's reservation apart from a tool call's", async () => {
      const { guard, service } = await guarded(makeStore, { toolBudget: 5 }, { models: MODELS });
      await guard.openModelCall({ ...START, callId: 'c1#1' });
      await guard.toolCall({ toolCallId: 'c1', toolName: 'search', estimate: 1, run: () => 'found' });
      const g = await service.getGuardrails(PLAN);
      expect([g?.budgetSpent, g?.budgetReserved]).toEqual([1, 0.00045]);
    });

    it('rejects a commit that found its reservation settled already, reporting no cost', async () => {
      const { guard, service } = await guarded(makeStore, { toolBudget: 1 }, { models: MODELS });
      const other = new RunGuard({ service, planId: PLAN, models: MODELS });
      const first = await guard.openModelCall(START);
      const second = await other.openModelCall(START);
      if (!first.allowed || !second.allowed) throw new Error('the calls should be allowed');
      await first.handle.commit({ inputTokens: 1000, outputTokens: 0 });
      await expect(second.handle.commit({ inputTokens: 1000, outputTokens: 0 })).rejects.toMatchObject({
        code: 'RESERVATION_NOT_OPEN',
      });
    });
  });

  it('charges the estimate of a call the store could not check the clock of, and passes the error on', async () => {
    const init = { toolBudget: 1, maxWallClockSeconds: 10 };
    const { guard, service, timers } = await guarded(makeStore, init, { models: MODELS });
    const hung = hanging();
    const call = guard.modelCall({ modelId: 'gpt-4o-mini', estimate: ESTIMATE, run: hung.run });
    await settledUntil(() => timers.pending.length === 1);
    const lost = clockLostOnce(service);
    timers.fire();

    await expect(call).rejects.toBe(lost);
    expect(hung.signal()?.aborted).toBe(true);
    expect((await service.getGuardrails(PLAN))?.budgetSpent).toBe(0.00045);
  });

  describe('streams', () => {
    it('commits the usage given at the finish', async () => {
      const { guard, service } = await guarded(makeStore, { toolBudget: 1 }, { models: MODELS });
      const opened = await guard.openModelCall({ modelId: 'gpt-4o-mini', estimate: ESTIMATE });
      if (!opened.allowed) throw new Error('the call should be allowed');
      const settled = await opened.handle.commit({ inputTokens: 1000, outputTokens: 100 });
      expect(settled.cost).toBe(0.00021);
      expect((await service.getGuardrails(PLAN))?.budgetSpent).toBe(0.00021);
    });

    it("aborts an open call's signal when the wall clock runs out, and charges its estimate", async () => {
      const init = { toolBudget: 1, maxWallClockSeconds: 10 };
      const { guard, service, clock, timers } = await guarded(makeStore, init, { models: MODELS });
      const opened = await guard.openModelCall({ modelId: 'gpt-4o-mini', estimate: ESTIMATE });
      if (!opened.allowed) throw new Error('the call should be allowed');

      clock.advance(10_001);
      timers.fire();
      await settledUntil(() => opened.signal.aborted);

      expect((opened.signal.reason as { check?: { eventType: string } }).check?.eventType).toBe(
        'wall_clock_blocked',
      );
      const spent = async () => (await service.getGuardrails(PLAN))?.budgetSpent;
      for (let i = 0; i < 100 && (await spent()) === 0; i++) await new Promise((r) => setImmediate(r));
      expect(await spent()).toBe(0.00045);
    });

    it('leaves no wall-clock timer behind once an open call is settled', async () => {
      const init = { toolBudget: 1, maxWallClockSeconds: 10 };
      const { guard, timers } = await guarded(makeStore, init, { models: MODELS });
      const opened = await guard.openModelCall({ modelId: 'gpt-4o-mini', estimate: ESTIMATE });
      if (!opened.allowed) throw new Error('the call should be allowed');

      await opened.handle.commit({ inputTokens: 10, outputTokens: 10 });

      expect(timers.armed).toHaveLength(1);
      expect(timers.pending).toHaveLength(0);
    });

    it('charges the estimate for a stream abandoned before its finish, saying so in the audit entry', async () => {
      const { guard, service } = await guarded(makeStore, { toolBudget: 1 }, { models: MODELS });
      const opened = await guard.openModelCall({ modelId: 'gpt-4o-mini', estimate: ESTIMATE });
      if (!opened.allowed) throw new Error('the call should be allowed');
      const settled = await opened.handle.abandon();
      expect(settled.cost).toBe(0.00045);
      const entry = (await service.getAuditTrail(PLAN))?.entries.at(-1);
      expect(entry?.eventType).toBe('budget_committed');
      expect(String(entry?.details['note'])).toContain('cancelled before its finish');
    });

    it('charges the estimate when the usage given at the finish cannot be priced, and rejects', async () => {
      const { guard, service } = await guarded(makeStore, { toolBudget: 1 }, { models: MODELS });
      const opened = await guard.openModelCall({ modelId: 'gpt-4o-mini', estimate: ESTIMATE });
      if (!opened.allowed) throw new Error('the call should be allowed');
      const bad = { inputTokens: 1, outputTokens: -1 };
      expect(await rejectedField(opened.handle.commit(bad))).toBe('usage.outputTokens');
      const g = await service.getGuardrails(PLAN);
      expect([g?.budgetSpent, g?.budgetReserved]).toEqual([0.00045, 0]);
    });

    it('can be released again after a release with options it refused', async () => {
      const { guard, service } = await guarded(makeStore, { toolBudget: 1 }, { models: MODELS });
      const opened = await guard.openModelCall({ modelId: 'gpt-4o-mini', estimate: ESTIMATE });
      if (!opened.allowed) throw new Error('the call should be allowed');
      const bad = { error: 'boom', extra: 1 } as { error?: string };
      expect(await rejectedField(opened.handle.release(bad))).toBe('options.extra');
      expect((await opened.handle.release()).check.eventType).toBe('budget_released');
      expect((await service.getGuardrails(PLAN))?.budgetReserved).toBe(0);
    });

    it('settles once: an abandon after a commit answers as the commit did', async () => {
      const { guard, service } = await guarded(makeStore, { toolBudget: 1 }, { models: MODELS });
      const opened = await guard.openModelCall({ modelId: 'gpt-4o-mini', estimate: ESTIMATE });
      if (!opened.allowed) throw new Error('the call should be allowed');
      await opened.handle.commit({ inputTokens: 1000, outputTokens: 0 });
      expect((await opened.handle.abandon()).cost).toBe(0.00015);
      expect((await service.getGuardrails(PLAN))?.budgetSpent).toBe(0.00015);
    });
  });
});
