// leash's structural OpenTelemetry types accept the API's own tracer and meter, so an application passes
// them as they are.
import { metrics, trace } from '@opentelemetry/api';
import { expect, it } from 'vitest';
import { AutonomyGuardrailService, type OtelMeter, type OtelTracer } from '../../src/index.js';

it("takes the API's Tracer and Meter as leash's tracer and meter", () => {
  const tracer: OtelTracer = trace.getTracer('app');
  const meter: OtelMeter = metrics.getMeter('app');
  const service = new AutonomyGuardrailService({ telemetry: { tracer, meter } });
  expect(service.telemetry?.tracer).toBe(tracer);
  expect(service.telemetry?.meter).toBe(meter);
});

it('has no telemetry when the option is false', () => {
  expect(new AutonomyGuardrailService({ telemetry: false }).telemetry).toBeNull();
});

it('refuses a telemetry option that is not one, naming the field', () => {
  expect(() => new AutonomyGuardrailService({ telemetry: { tracer: {} as OtelTracer } })).toThrow(
    /telemetry\.tracer must be an OpenTelemetry Tracer/,
  );
  expect(
    () =>
      new AutonomyGuardrailService({
        telemetry: { recordInputs: true } as unknown as { recordContent: boolean },
      }),
  ).toThrow(/telemetry\.recordInputs/);
});
