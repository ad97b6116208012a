import { describe, expect, it } from 'vitest';
import {
  AutonomyGuardrailService,
  ManualClock,
  type AutonomyGuardrailServiceOptions,
} from '../../src/index.js';
import { rejectedField, trailOf } from '../support/service.js';

const T0 = Date.parse('2026-11-30T10:00:00.000Z');

async function configured(options: AutonomyGuardrailServiceOptions = {}) {
  const clock = new ManualClock(T0);
  const service = new AutonomyGuardrailService({ clock, ...options });
  await service.configureGuardrails('plan', { maxSteps: 10 });
  return { clock, service };
}

async function callsOf(service: AutonomyGuardrailService, tool: string, planId = 'plan'): Promise<number> {
  const g = await service.getGuardrails(planId);
  if (!g) throw new Error(`plan ${planId} should have guardrails`);
  return g.toolCallCount(tool);
}

/** `n` calls of `tool` in a row; whether each was allowed. */
async function calls(service: AutonomyGuardrailService, tool: string, n: number, max: number) {
  const allowed: boolean[] = [];
  for (let i = 0; i < n; i++) allowed.push((await service.checkToolCalls('plan', tool, max)).allowed);
  return allowed;
}

/** The plan's metadata after a trip through JSON. */
async function jsonMetadata(service: AutonomyGuardrailService): Promise<unknown> {
  return JSON.parse(JSON.stringify(await service.toMetadata('plan')));
}

describe('checkToolCalls', () => {
  it('allows calls of a tool below its limit and counts each', async () => {
    const { service } = await configured();
    expect(await calls(service, 'search', 3, 3)).toEqual([true, true, true]);
    expect(await callsOf(service, 'search')).toBe(3);
  });

  it('blocks the call that reaches the limit, with tool_calls_blocked', async () => {
    const { service } = await configured();
    await calls(service, 'search', 2, 2);
    const check = await service.checkToolCalls('plan', 'search', 2);
    expect([check.allowed, check.result, check.eventType, check.guardName]).toEqual([
      false,
      'denied',
      'tool_calls_blocked',
      'tool_calls_per_plan',
    ]);
    expect([check.limit, check.observed]).toEqual([2, 2]);
  });

  it('counts no blocked call', async () => {
    const { service } = await configured();
    await calls(service, 'search', 5, 2);
    expect(await callsOf(service, 'search')).toBe(2);
  });

  it('answers an allowed call with tool_calls_allowed, the calls so far and the limit', async () => {
    const { service } = await configured();
    await service.checkToolCalls('plan', 'search', 3);
    const check = await service.checkToolCalls('plan', 'search', 3);
    expect([check.allowed, check.eventType, check.limit, check.observed]).toEqual([
      true,
      'tool_calls_allowed',
      3,
      1,
    ]);
  });

  it('counts each tool apart', async () => {
    const { service } = await configured();
    await calls(service, 'search', 2, 2);
    expect((await service.checkToolCalls('plan', 'fetch', 2)).allowed).toBe(true);
    expect([await callsOf(service, 'search'), await callsOf(service, 'fetch')]).toEqual([2, 1]);
  });

  it('counts tool names as written, case and all', async () => {
    const { service } = await configured();
    await calls(service, 'search', 1, 1);
    expect((await service.checkToolCalls('plan', 'Search', 1)).allowed).toBe(true);
  });

  it('counts each plan apart', async () => {
    const { service } = await configured();
    await service.configureGuardrails('other', {});
    await calls(service, 'search', 1, 1);
    expect((await service.checkToolCalls('other', 'search', 1)).allowed).toBe(true);
    expect(await callsOf(service, 'search', 'other')).toBe(1);
  });

  it('takes the limit given with each call', async () => {
    const { service } = await configured();
    await calls(service, 'search', 2, 2);
    expect((await service.checkToolCalls('plan', 'search', 3)).allowed).toBe(true);
  });

  it('allows exactly the limit of many concurrent calls', async () => {
    const { service } = await configured();
    const checks = await Promise.all(
      Array.from({ length: 50 }, () => service.checkToolCalls('plan', 'search', 10)),
    );
    expect(checks.filter((c) => c.allowed)).toHaveLength(10);
    expect(await callsOf(service, 'search')).toBe(10);
  });
});

describe('audit entries of tool calls', () => {
  it('records an allowed call with the tool, the calls before it and the limit', async () => {
    const { service, clock } = await configured();
    clock.advance(300);
    await service.checkToolCalls('plan', 'search', 3);
    const [entry] = (await trailOf(service)).entries;
    expect([entry?.eventType, entry?.guardName, entry?.result, entry?.timestamp]).toEqual([
      'tool_calls_allowed',
      'tool_calls_per_plan',
      'allowed',
      T0 + 300,
    ]);
    expect(entry?.details).toEqual({ tool: 'search', calls: 0, limit: 3 });
  });

  it('records a blocked call with tool_calls_blocked and the reason', async () => {
    const { service } = await configured();
    await calls(service, 'search', 1, 1);
    const check = await service.checkToolCalls('plan', 'search', 1);
    const entry = (await trailOf(service)).entries.at(-1);
    expect([entry?.eventType, entry?.result]).toEqual(['tool_calls_blocked', 'denied']);
    expect(entry?.details).toEqual({ tool: 'search', calls: 1, limit: 1, reason: check.reason });
  });

  it('records every call, allowed or blocked', async () => {
    const { service } = await configured();
    await calls(service, 'search', 4, 2);
    const trail = await trailOf(service);
    expect([trail.size, trail.allowedCount, trail.deniedCount]).toEqual([4, 2, 2]);
  });
});

describe('tool calls in metadata', () => {
  it('writes the calls per tool under the wire key tool_calls', async () => {
    const { service } = await configured();
    await calls(service, 'search', 2, 5);
    await calls(service, 'fetch', 1, 5);
    expect(await jsonMetadata(service)).toMatchObject({
      autonomy_guardrails: { guardrails: { tool_calls: { search: 2, fetch: 1 } } },
    });
  });

  it('writes no tool_calls key for a plan that made no tool call', async () => {
    const { service } = await configured();
    const metadata = (await jsonMetadata(service)) as { autonomy_guardrails: { guardrails: object } };
    expect(metadata.autonomy_guardrails.guardrails).not.toHaveProperty('tool_calls');
  });

  it('keeps counting after the state went through metadata and JSON', async () => {
    const { service } = await configured();
    await calls(service, 'search', 2, 3);
    const copy = new AutonomyGuardrailService({ clock: new ManualClock(T0) });
    await copy.loadFromMetadata('plan', await jsonMetadata(service));
    expect(await callsOf(copy, 'search')).toBe(2);
    expect(await calls(copy, 'search', 2, 3)).toEqual([true, false]);
  });

  it.each([
    ['negative', -1],
    ['fractional', 1.5],
    ['a string', '2'],
  ])('refuses a count that is %s, naming its path', async (_label, count) => {
    const { service } = await configured();
    await calls(service, 'search', 1, 3);
    const metadata = (await jsonMetadata(service)) as {
      autonomy_guardrails: { guardrails: { tool_calls: Record<string, unknown> } };
    };
    metadata.autonomy_guardrails.guardrails.tool_calls['search'] = count;
    expect(await rejectedField(() => service.loadFromMetadata('plan', metadata))).toBe(
      'autonomy_guardrails.guardrails.tool_calls.search',
    );
  });

  it('leaves the counts as they were when metadata is refused', async () => {
    const { service } = await configured();
    await calls(service, 'search', 1, 3);
    const metadata = (await jsonMetadata(service)) as {
      autonomy_guardrails: { guardrails: { tool_calls: Record<string, unknown> } };
    };
    metadata.autonomy_guardrails.guardrails.tool_calls['search'] = -1;
    await rejectedField(() => service.loadFromMetadata('plan', metadata));
    expect(await callsOf(service, 'search')).toBe(1);
  });
});

describe('bad tool-call arguments', () => {
  it.each([
    ['empty', ''],
    ['holding a control character', 'sea\u0000rch'],
    ['longer than 256 characters', 't'.repeat(257)],
    ['a number', 7],
  ])('refuses a tool name that is %s, naming tool, and records nothing', async (_label, tool) => {
    const { service } = await configured();
    expect(await rejectedField(() => service.checkToolCalls('plan', tool as string, 3))).toBe('tool');
    expect((await trailOf(service)).size).toBe(0);
  });

  it.each([
    ['zero', 0],
    ['fractional', 2.5],
    ['null', null],
  ])('refuses a limit that is %s, naming max_calls_per_plan', async (_label, max) => {
    const { service } = await configured();
    const call = () => service.checkToolCalls('plan', 'search', max as number);
    expect(await rejectedField(call)).toBe('max_calls_per_plan');
  });

  it('refuses a bad plan id, naming plan_id', async () => {
    const { service } = await configured();
    expect(await rejectedField(() => service.checkToolCalls('', 'search', 3))).toBe('plan_id');
  });
});

describe('tool calls of unconfigured plans', () => {
  it('allows a call of an unconfigured plan by default and stores nothing', async () => {
    const { service } = await configured();
    const check = await service.checkToolCalls('unknown', 'search', 1);
    expect([check.allowed, check.eventType]).toEqual([true, 'tool_calls_allowed']);
    expect(await service.getGuardrails('unknown')).toBeNull();
  });

  it('blocks a call of an unconfigured plan under unconfiguredPlans "deny"', async () => {
    const { service } = await configured({ unconfiguredPlans: 'deny' });
    const check = await service.checkToolCalls('unknown', 'search', 1);
    expect([check.allowed, check.eventType]).toEqual([false, 'tool_calls_blocked']);
  });
});
