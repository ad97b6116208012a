import { describe, expect, it } from 'vitest';
import { AuditEntry, EVENT_INFO, GuardrailEventType, type GuardName } from '../../src/index.js';
import { fieldOf } from '../support/thrown.js';

const T0 = Date.parse('2026-11-30T10:00:00.000Z');
const ALL_EVENT_TYPES = Object.values(GuardrailEventType);

/** DESIGN.md: `*_allowed` and `confirmation_not_required` are allowed; everything else is denied. */
/** Events that deny; the spec's rule (`*_blocked` and `confirmation_required` deny) plus the later ones. */
const DENYING = new Set([
  'step_blocked',
  'budget_blocked',
  'confirmation_required',
  'wall_clock_blocked',
  'actor_tool_calls_blocked',
  'retry_blocked',
  'budget_overrun',
  'confirmation_denied',
  'confirmation_grant_refused',
  'confirmation_vote_refused',
  'confirmation_expired',
  'tool_calls_blocked',
  'budget_cap_blocked',
]);

function expectedResult(eventType: string): 'allowed' | 'denied' {
  return DENYING.has(eventType) ? 'denied' : 'allowed';
}

describe('AuditEntry', () => {
  it('keeps the event type, guard name, timestamp and details it was created with', () => {
    const entry = AuditEntry.create({
      eventType: 'step_blocked',
      guardName: 'step_limit',
      timestamp: T0,
      details: { step: 5, limit: 5 },
    });
    expect(entry.eventType).toBe('step_blocked');
    expect(entry.guardName).toBe('step_limit');
    expect(entry.timestamp).toBe(T0);
    expect(entry.details).toEqual({ step: 5, limit: 5 });
  });

  it.each(ALL_EVENT_TYPES)('derives the result of a %s entry from its event type', (eventType) => {
    const entry = AuditEntry.create({ eventType, guardName: EVENT_INFO[eventType].guardName, timestamp: T0 });
    expect(entry.result).toBe(expectedResult(eventType));
  });

  it('ignores a result passed in alongside the event type', () => {
    const init = { eventType: 'budget_blocked', guardName: 'tool_budget', timestamp: T0, result: 'allowed' };
    const entry = AuditEntry.create(init as Parameters<typeof AuditEntry.create>[0]);
    expect(entry.result).toBe('denied');
  });

  it('refuses a guard name that is not the guard of the event type', () => {
    expect(
      fieldOf(() =>
        AuditEntry.create({ eventType: 'step_allowed', guardName: 'tool_budget', timestamp: T0 }),
      ),
    ).toBe('guard_name');
  });

  it('refuses a guard name that does not exist', () => {
    const guardName = 'speed_limit' as GuardName;
    expect(fieldOf(() => AuditEntry.create({ eventType: 'step_allowed', guardName, timestamp: T0 }))).toBe(
      'guard_name',
    );
  });

  it('refuses an unknown event type', () => {
    const eventType = 'step_maybe' as GuardrailEventType;
    expect(fieldOf(() => AuditEntry.create({ eventType, guardName: 'step_limit', timestamp: T0 }))).toBe(
      'event_type',
    );
  });

  it('refuses an init that is not an object', () => {
    expect(fieldOf(() => AuditEntry.create(null as unknown as Parameters<typeof AuditEntry.create>[0]))).toBe(
      'init',
    );
  });

  it('has empty details when none are given', () => {
    const entry = AuditEntry.create({ eventType: 'retry_allowed', guardName: 'retry_limit', timestamp: T0 });
    expect(entry.details).toEqual({});
  });

  it.each([
    ['a function', { f: () => 1 }],
    ['NaN', { n: Number.NaN }],
    ['Infinity', { n: Number.POSITIVE_INFINITY }],
    ['undefined', { u: undefined }],
    ['a Date', { d: new Date(T0) }],
    ['a nested class instance', { nested: { m: new Map() } }],
  ])('refuses details holding %s', (_label, details) => {
    expect(
      fieldOf(() =>
        AuditEntry.create({
          eventType: 'step_allowed',
          guardName: 'step_limit',
          timestamp: T0,
          details: details as Record<string, unknown>,
        }),
      ),
    ).toMatch(/^details/);
  });

  it('refuses details that are not an object', () => {
    const details = [1, 2] as unknown as Record<string, unknown>;
    expect(
      fieldOf(() =>
        AuditEntry.create({ eventType: 'step_allowed', guardName: 'step_limit', timestamp: T0, details }),
      ),
    ).toBe('details');
  });

  it('refuses details holding a lone surrogate, naming where, as no audit log can hash one', () => {
    const details = { operation: 'dep\udc00loy' };
    expect(
      fieldOf(() =>
        AuditEntry.create({ eventType: 'step_allowed', guardName: 'step_limit', timestamp: T0, details }),
      ),
    ).toBe('details.operation');
  });

  it('refuses details larger than 4 KiB of JSON', () => {
    const details = { text: 'x'.repeat(4096) };
    expect(
      fieldOf(() =>
        AuditEntry.create({ eventType: 'step_allowed', guardName: 'step_limit', timestamp: T0, details }),
      ),
    ).toBe('details');
  });

  it('accepts details of exactly 4 KiB of JSON', () => {
    const overhead = JSON.stringify({ text: '' }).length;
    const details = { text: 'x'.repeat(4096 - overhead) };
    expect(Buffer.byteLength(JSON.stringify(details))).toBe(4096);
    const entry = AuditEntry.create({
      eventType: 'step_allowed',
      guardName: 'step_limit',
      timestamp: T0,
      details,
    });
    expect(entry.details).toEqual(details);
  });

  it('copies details so later changes to the caller object do not reach the entry', () => {
    const details = { step: 1, nested: { tags: ['a'] } };
    const entry = AuditEntry.create({
      eventType: 'step_allowed',
      guardName: 'step_limit',
      timestamp: T0,
      details,
    });
    details.step = 2;
    details.nested.tags.push('b');
    expect(entry.details).toEqual({ step: 1, nested: { tags: ['a'] } });
  });

  it('freezes its details deeply', () => {
    const entry = AuditEntry.create({
      eventType: 'step_allowed',
      guardName: 'step_limit',
      timestamp: T0,
      details: { nested: { tags: ['a'] } },
    });
    const nested = entry.details['nested'] as { tags: string[] };
    expect(Object.isFrozen(entry.details)).toBe(true);
    expect(Object.isFrozen(nested)).toBe(true);
    expect(Object.isFrozen(nested.tags)).toBe(true);
    expect(() => nested.tags.push('b')).toThrow(TypeError);
  });

  it('refuses a change to any of its fields', () => {
    const entry = AuditEntry.create({ eventType: 'step_allowed', guardName: 'step_limit', timestamp: T0 });
    for (const field of ['eventType', 'guardName', 'result', 'timestamp', 'details'] as const) {
      expect(() => {
        (entry as unknown as Record<string, unknown>)[field] = 0;
      }).toThrow(TypeError);
    }
    expect(entry.timestamp).toBe(T0);
  });

  it('keeps a __proto__ key in details as an own property instead of a prototype', () => {
    const details = JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    const entry = AuditEntry.create({
      eventType: 'step_allowed',
      guardName: 'step_limit',
      timestamp: T0,
      details,
    });
    expect(Object.getPrototypeOf(entry.details)).toBe(Object.prototype);
    expect(Object.keys(entry.details)).toEqual(['__proto__']);
    expect((entry.details as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('keeps the timestamp as epoch milliseconds', () => {
    const entry = AuditEntry.create({
      eventType: 'step_allowed',
      guardName: 'step_limit',
      timestamp: T0 + 1,
    });
    expect(typeof entry.timestamp).toBe('number');
    expect(entry.timestamp).toBe(T0 + 1);
  });

  it('stamps the current time when no timestamp is given', () => {
    const before = Date.now();
    const entry = AuditEntry.create({ eventType: 'step_allowed', guardName: 'step_limit' });
    const after = Date.now();
    expect(entry.timestamp).toBeGreaterThanOrEqual(before);
    expect(entry.timestamp).toBeLessThanOrEqual(after);
  });

  it.each([
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['a string', '2026-11-30T10:00:00Z'],
    ['a time before year 0000', Date.parse('0000-01-01T00:00:00.000Z') - 1],
    ['a time after year 9999', Date.parse('9999-12-31T23:59:59.999Z') + 1],
  ])('refuses a timestamp that is %s', (_label, timestamp) => {
    expect(
      fieldOf(() =>
        AuditEntry.create({
          eventType: 'step_allowed',
          guardName: 'step_limit',
          timestamp: timestamp as number,
        }),
      ),
    ).toBe('timestamp');
  });

  it('serializes to the snake_case wire form with an ISO-8601 timestamp', () => {
    const entry = AuditEntry.create({
      eventType: 'confirmation_required',
      guardName: 'confirmation',
      timestamp: T0 + 1000,
      details: { operation: 'deploy' },
    });
    expect(entry.toJSON()).toEqual({
      event_type: 'confirmation_required',
      guard_name: 'confirmation',
      result: 'denied',
      timestamp: '2026-11-30T10:00:01.000Z',
      details: { operation: 'deploy' },
    });
  });

  it('keeps the timestamp numeric after serializing', () => {
    const entry = AuditEntry.create({ eventType: 'step_allowed', guardName: 'step_limit', timestamp: T0 });
    entry.toJSON();
    expect(entry.timestamp).toBe(T0);
  });

  it('serializes through JSON.stringify using toJSON', () => {
    const entry = AuditEntry.create({ eventType: 'step_allowed', guardName: 'step_limit', timestamp: T0 });
    const parsed = JSON.parse(JSON.stringify(entry)) as Record<string, unknown>;
    expect(parsed['timestamp']).toBe(new Date(T0).toISOString());
    expect(parsed['event_type']).toBe('step_allowed');
  });

  it('refuses a timestamp with a fraction of a millisecond, which the wire form cannot keep', () => {
    expect(
      fieldOf(() =>
        AuditEntry.create({ eventType: 'step_allowed', guardName: 'step_limit', timestamp: 1.7 }),
      ),
    ).toBe('timestamp');
  });
});
