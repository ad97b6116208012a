import { describe, expect, it } from 'vitest';
import {
  AuditEntry,
  AuditTrail,
  DEFAULT_AUDIT_CAPACITY,
  GuardrailValidationError,
  type GuardName,
  type GuardrailEventType,
} from '../../src/index.js';

const T0 = Date.parse('2026-11-30T10:00:00.000Z');

function allowed(i: number): AuditEntry {
  return AuditEntry.create({
    eventType: 'step_allowed',
    guardName: 'step_limit',
    timestamp: T0 + i,
    details: { i },
  });
}

function denied(i: number): AuditEntry {
  return AuditEntry.create({
    eventType: 'step_blocked',
    guardName: 'step_limit',
    timestamp: T0 + i,
    details: { i },
  });
}

function ids(trail: AuditTrail): number[] {
  return trail.entries.map((e) => e.details['i'] as number);
}

/** Counts computed from scratch, to compare with the trail's incrementally kept counts. */
function recount(trail: AuditTrail): { allowed: number; denied: number } {
  const entries = trail.entries;
  const allowedN = entries.filter((e) => e.result === 'allowed').length;
  return { allowed: allowedN, denied: entries.length - allowedN };
}

describe('AuditTrail', () => {
  it('starts empty', () => {
    const trail = new AuditTrail({ maxEntries: 3 });
    expect(trail.size).toBe(0);
    expect(trail.entries).toEqual([]);
    expect(trail.allowedCount).toBe(0);
    expect(trail.deniedCount).toBe(0);
  });

  it('keeps the default capacity when no maxEntries is given', () => {
    expect(new AuditTrail().maxEntries).toBe(DEFAULT_AUDIT_CAPACITY);
  });

  it('lists entries oldest first', () => {
    const trail = new AuditTrail({ maxEntries: 5 });
    for (let i = 0; i < 3; i++) trail.add(allowed(i));
    expect(ids(trail)).toEqual([0, 1, 2]);
    expect(trail.size).toBe(3);
  });

  it('evicts the oldest entry once full', () => {
    const trail = new AuditTrail({ maxEntries: 3 });
    for (let i = 0; i < 4; i++) trail.add(allowed(i));
    expect(trail.size).toBe(3);
    expect(ids(trail)).toEqual([1, 2, 3]);
  });

  it('counts allowed and denied entries as they are added', () => {
    const trail = new AuditTrail({ maxEntries: 10 });
    trail.add(allowed(0));
    trail.add(denied(1));
    trail.add(allowed(2));
    expect(trail.allowedCount).toBe(2);
    expect(trail.deniedCount).toBe(1);
  });

  it('decrements the allowed count when an allowed entry is evicted', () => {
    const trail = new AuditTrail({ maxEntries: 2 });
    trail.add(allowed(0));
    trail.add(denied(1));
    trail.add(denied(2));
    expect(trail.allowedCount).toBe(0);
    expect(trail.deniedCount).toBe(2);
  });

  it('decrements the denied count when a denied entry is evicted', () => {
    const trail = new AuditTrail({ maxEntries: 2 });
    trail.add(denied(0));
    trail.add(allowed(1));
    trail.add(allowed(2));
    expect(trail.deniedCount).toBe(0);
    expect(trail.allowedCount).toBe(2);
  });

  it('keeps exactly one entry, the newest, with a capacity of 1', () => {
    const trail = new AuditTrail({ maxEntries: 1 });
    trail.add(allowed(0));
    trail.add(denied(1));
    expect(ids(trail)).toEqual([1]);
    expect(trail.allowedCount).toBe(0);
    expect(trail.deniedCount).toBe(1);
    trail.add(allowed(2));
    expect(ids(trail)).toEqual([2]);
    expect(trail.allowedCount).toBe(1);
    expect(trail.deniedCount).toBe(0);
  });

  it('keeps order and counts right after wrapping around many times', () => {
    const capacity = 7;
    const trail = new AuditTrail({ maxEntries: capacity });
    // A pattern with no period dividing the capacity, so every slot sees both kinds of entry.
    const isDenied = (i: number): boolean => i % 3 === 0 || i % 5 === 0;
    const total = capacity * 13 + 4;
    for (let i = 0; i < total; i++) {
      trail.add(isDenied(i) ? denied(i) : allowed(i));
      const counts = recount(trail);
      expect(trail.allowedCount).toBe(counts.allowed);
      expect(trail.deniedCount).toBe(counts.denied);
    }
    const expected = Array.from({ length: capacity }, (_, k) => total - capacity + k);
    expect(ids(trail)).toEqual(expected);
    expect(trail.size).toBe(capacity);
  });

  it('returns a fresh entries array each time', () => {
    const trail = new AuditTrail({ maxEntries: 3 });
    trail.add(allowed(0));
    const first = trail.entries as AuditEntry[];
    first.push(allowed(99));
    expect(trail.size).toBe(1);
    expect(ids(trail)).toEqual([0]);
  });

  it('clones into an independent trail with the same entries, capacity and counts', () => {
    const trail = new AuditTrail({ maxEntries: 3 });
    for (let i = 0; i < 5; i++) trail.add(i % 2 === 0 ? allowed(i) : denied(i));
    const copy = trail.clone();
    expect(copy.maxEntries).toBe(3);
    expect(ids(copy)).toEqual(ids(trail));
    expect(copy.allowedCount).toBe(trail.allowedCount);
    expect(copy.deniedCount).toBe(trail.deniedCount);
    copy.add(denied(9));
    expect(ids(trail)).toEqual([2, 3, 4]);
  });

  it.each([
    ['zero', 0],
    ['negative', -1],
    ['fractional', 1.5],
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['above 2^53', 2 ** 53],
    ['a string', '10'],
  ])('refuses a maxEntries that is %s', (_label, maxEntries) => {
    let thrown: unknown;
    try {
      new AuditTrail({ maxEntries: maxEntries as number });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(GuardrailValidationError);
    expect((thrown as GuardrailValidationError).field).toBe('max_entries');
  });

  it('counts every kind of denied event as denied', () => {
    const deniedTypes: [GuardrailEventType, GuardName][] = [
      ['step_blocked', 'step_limit'],
      ['budget_blocked', 'tool_budget'],
      ['confirmation_required', 'confirmation'],
      ['wall_clock_blocked', 'wall_clock'],
      ['actor_tool_calls_blocked', 'actor_tool_calls'],
      ['retry_blocked', 'retry_limit'],
    ];
    const trail = new AuditTrail({ maxEntries: 10 });
    for (const [eventType, guardName] of deniedTypes)
      trail.add(AuditEntry.create({ eventType, guardName, timestamp: T0 }));
    expect(trail.deniedCount).toBe(deniedTypes.length);
    expect(trail.allowedCount).toBe(0);
  });

  it('refuses a null maxEntries rather than using the default', () => {
    expect(() => new AuditTrail({ maxEntries: null as unknown as number })).toThrow(GuardrailValidationError);
  });
});
