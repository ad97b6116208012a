// leash's metrics on the meter a service is given, read with the SDK's own reader.
import type { Histogram } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { AutonomyGuardrailService, RunGuard, type OtelMeter, type ToolCallBegin } from '../../src/index.js';
import { points, tracedService, useOtel } from './otel-support.js';

const otel = useOtel();

const summed = (list: { attributes: object; value: unknown }[]) =>
  list.map((p) => ({ attributes: p.attributes, value: p.value }));

describe('leash metrics', () => {
  it('counts decisions by event type and result', async () => {
    const { service } = await tracedService(otel, { maxSteps: 1 });
    await service.takeStep('plan');
    await service.takeStep('plan');
    await service.takeStep('plan');
    expect(summed(points(await otel.metrics(), 'leash.decisions'))).toEqual([
      { attributes: { 'leash.event_type': 'step_allowed', 'leash.result': 'allowed' }, value: 1 },
      { attributes: { 'leash.event_type': 'step_blocked', 'leash.result': 'denied' }, value: 2 },
    ]);
  });

  it("counts spending under the plan's labels", async () => {
    const { service } = await tracedService(otel, { toolBudget: 5, labels: { team: 'ml', user: 'ann' } });
    await service.checkToolBudget('plan', 0.5);
    await service.checkToolBudget('plan', 0.25);
    expect(summed(points(await otel.metrics(), 'leash.spend'))).toEqual([
      { attributes: { 'leash.label.team': 'ml', 'leash.label.user': 'ann' }, value: 0.75 },
    ]);
  });

  it('counts a reservation once, at its commit', async () => {
    const { service } = await tracedService(otel, { toolBudget: 5 });
    const reservation = await service.reserveBudget('plan', 0.4, { reservationId: 'r1' });
    await reservation.commit(0.3);
    expect(summed(points(await otel.metrics(), 'leash.spend'))).toEqual([{ attributes: {}, value: 0.3 }]);
  });

  it("counts a tool call's commit under its tool", async () => {
    const { service } = await tracedService(otel, { toolBudget: 5 });
    const call: ToolCallBegin = {
      confirm: { decisionId: 'c1', operation: 'search', ttlMs: 60_000, pauseClock: false },
      tool: { name: 'search', maxCallsPerPlan: 3 },
      estimate: 0.25,
      reservationId: 'tool:c1',
    };
    const begun = await service.beginToolCall('plan', call);
    await begun?.reservation?.commit(0.125);
    expect(summed(points(await otel.metrics(), 'leash.spend'))).toEqual([
      { attributes: { 'gen_ai.tool.name': 'search' }, value: 0.125 },
    ]);
  });

  it("counts a metered model call's commit under its model", async () => {
    const { service } = await tracedService(otel, { toolBudget: 5, labels: { team: 'ml' } });
    const models = { 'gpt-x': { input: 1000, output: 2000 } };
    const guard = new RunGuard({ service, planId: 'plan', models });
    await guard.modelCall({
      modelId: 'gpt-x',
      estimate: { inputTokens: 100, maxOutputTokens: 10 },
      run: () => ({ output: 'hi', usage: { inputTokens: 100, outputTokens: 10 } }),
    });
    expect(summed(points(await otel.metrics(), 'leash.spend'))).toEqual([
      { attributes: { 'gen_ai.request.model': 'gpt-x', 'leash.label.team': 'ml' }, value: 0.12 },
    ]);
  });

  it('counts the commit of a model reservation under its model when the settlement names none', async () => {
    const { service } = await tracedService(otel, { toolBudget: 5 });
    await service.reserveBudget('plan', 0.4, { reservationId: 'r1', model: 'gpt-x' });
    await service.settleReservation('plan', 'r1', 0.3);
    expect(summed(points(await otel.metrics(), 'leash.spend'))).toEqual([
      { attributes: { 'gen_ai.request.model': 'gpt-x' }, value: 0.3 },
    ]);
  });

  it('records how long an approval waited for its decision, in seconds', async () => {
    const { service, clock } = await tracedService(otel, { requiredConfirmations: ['deploy'] });
    const asked = await service.requestConfirmation('plan', {
      decisionId: 'd1',
      operation: 'deploy',
      ttlMs: 600_000,
    });
    clock.advance(90_000);
    await service.approve(asked.approval?.id ?? '', { by: 'ann' });
    const [point] = points(await otel.metrics(), 'leash.approval.wait');
    expect(point?.attributes).toEqual({ 'leash.result': 'approved' });
    expect((point?.value as Histogram).sum).toBe(90);
    expect((point?.value as Histogram).count).toBe(1);
  });

  it("observes each spend cap's remaining amount in its current window", async () => {
    const { service } = await tracedService(otel, { toolBudget: 50, labels: { team: 'ml' } });
    await service.installSpendCaps([{ id: 'team-ml', match: { team: 'ml' }, limit: 10, window: 'month' }]);
    await service.checkToolBudget('plan', 3);
    expect(summed(points(await otel.metrics(), 'leash.cap.remaining'))).toEqual([
      { attributes: { 'leash.cap.id': 'team-ml', 'leash.label.team': 'ml' }, value: 7 },
    ]);
  });

  it('answers checks when the meter cannot make or use its instruments', async () => {
    const fails = () => {
      throw new Error('meter down');
    };
    const throwingInstruments: OtelMeter = {
      createCounter: () => ({ add: fails }),
      createHistogram: () => ({ record: fails }),
      createObservableGauge: () => ({ addCallback: fails }),
    };
    const throwingMeter: OtelMeter = {
      createCounter: fails,
      createHistogram: fails,
      createObservableGauge: fails,
    };
    for (const meter of [throwingInstruments, throwingMeter]) {
      const service = new AutonomyGuardrailService({ telemetry: { meter } });
      await service.configureGuardrails('plan', { toolBudget: 1 });
      expect((await service.checkToolBudget('plan', 0.5)).allowed).toBe(true);
    }
  });
});
