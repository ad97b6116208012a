import { describe, expect, it } from 'vitest';
import { AuditEntry, AutonomyGuardrails, GuardrailValidationError } from '../../src/index.js';
import { applyMutation } from '../../src/guardrails/mutation.js';
import { entriesOf, writesState } from '../../src/store/decide.js';

const START = '2026-11-30T10:00:00.000Z';

describe('applyMutation', () => {
  it('adds steps and spending to the same instance', () => {
    const g = AutonomyGuardrails.create({ toolBudget: 1 });
    const next = applyMutation(g, { steps: 1, spendMicros: 250_000 });
    expect(next).toBe(g);
    expect([next.stepCount, next.budgetSpent]).toEqual([1, 0.25]);
  });

  it('sets an unset start time on a copy, leaving the original unchanged', () => {
    const g = AutonomyGuardrails.create();
    const next = applyMutation(g, { startTime: START });
    expect([next.startTime, g.startTime]).toEqual([START, null]);
  });

  it('keeps a start time that is already set', () => {
    const g = AutonomyGuardrails.create({ startTime: '2026-01-01T00:00:00Z' });
    expect(applyMutation(g, { startTime: START }).startTime).toBe('2026-01-01T00:00:00.000Z');
  });

  it('refuses fractional steps without spending', () => {
    const g = AutonomyGuardrails.create();
    expect(() => applyMutation(g, { steps: 1.5, spendMicros: 10 })).toThrow(GuardrailValidationError);
    expect([g.stepCount, g.budgetSpentMicros]).toEqual([0, 0]);
  });

  it('refuses negative spending', () => {
    const g = AutonomyGuardrails.create();
    expect(() => applyMutation(g, { spendMicros: -1 })).toThrow(GuardrailValidationError);
    expect(g.budgetSpentMicros).toBe(0);
  });

  it('refuses a step past 2^53 - 1 without spending', () => {
    const g = AutonomyGuardrails.create({ stepCount: Number.MAX_SAFE_INTEGER });
    expect(() => applyMutation(g, { steps: 1, spendMicros: 10 })).toThrow(GuardrailValidationError);
    expect([g.stepCount, g.budgetSpentMicros]).toEqual([Number.MAX_SAFE_INTEGER, 0]);
  });

  it('refuses a malformed start time without counting the step', () => {
    const g = AutonomyGuardrails.create();
    expect(() => applyMutation(g, { steps: 1, startTime: 'soon' })).toThrow(GuardrailValidationError);
    expect([g.stepCount, g.startTime]).toEqual([0, null]);
  });

  it('refuses an expireBefore that is not a finite time without spending', () => {
    const g = AutonomyGuardrails.create();
    expect(() => applyMutation(g, { expireBefore: Number.NaN, spendMicros: 10 })).toThrow(
      GuardrailValidationError,
    );
    expect(g.budgetSpentMicros).toBe(0);
  });

  it('refuses a reservation expiry that could not be written back, reserving nothing', () => {
    const g = AutonomyGuardrails.create();
    expect(() => applyMutation(g, { reserve: { id: 'r1', micros: 1, expiresAt: 1e20 } })).toThrow(
      GuardrailValidationError,
    );
    expect(g.budgetReservedMicros).toBe(0);
  });

  it('gives back a reservation opened without an expiry at the next expireBefore', () => {
    const g = applyMutation(AutonomyGuardrails.create(), { reserve: { id: 'r1', micros: 5 } });
    expect(applyMutation(g, { expireBefore: 0 }).budgetReservedMicros).toBe(0);
  });

  it('remembers a reservation given back by expireBefore as lapsed', () => {
    const g = applyMutation(AutonomyGuardrails.create(), { reserve: { id: 'r1', micros: 5, expiresAt: 10 } });
    expect(applyMutation(g, { expireBefore: 10 }).hasLapsed('r1')).toBe(true);
  });

  it('forgets a lapsed reservation once it is settled', () => {
    const g = applyMutation(AutonomyGuardrails.create(), { reserve: { id: 'r1', micros: 5, expiresAt: 10 } });
    expect(applyMutation(g, { expireBefore: 10, settleLapsed: 'r1' }).hasLapsed('r1')).toBe(false);
  });

  it('refuses to settle a reservation that did not lapse, changing nothing', () => {
    const g = AutonomyGuardrails.create({ toolBudget: 1 });
    expect(() => applyMutation(g, { settleLapsed: 'r1', spendMicros: 1 })).toThrow(GuardrailValidationError);
    expect(g.budgetSpentMicros).toBe(0);
  });

  it('forgets a lapsed id when it is reserved again', () => {
    let g = applyMutation(AutonomyGuardrails.create(), { reserve: { id: 'r1', micros: 5, expiresAt: 10 } });
    g = applyMutation(g, { expireBefore: 10 });
    expect(applyMutation(g, { reserve: { id: 'r1', micros: 5, expiresAt: 20 } }).hasLapsed('r1')).toBe(false);
  });

  it('keeps lapsed ids through the wire form', () => {
    let g = applyMutation(AutonomyGuardrails.create(), { reserve: { id: 'r1', micros: 5, expiresAt: 10 } });
    g = applyMutation(g, { expireBefore: 10 });
    expect(AutonomyGuardrails.fromJSON(JSON.parse(JSON.stringify(g.toJSON()))).hasLapsed('r1')).toBe(true);
  });
});

/** A step check recorded at `i` ms past the epoch. */
function entry(i: number): AuditEntry {
  return AuditEntry.create({ eventType: 'step_allowed', guardName: 'step_limit', timestamp: i });
}

describe('writesState', () => {
  it('counts a change with entries as one that writes', () => {
    expect(writesState({ result: null, entries: [entry(1)] })).toBe(true);
  });

  it('does not count a change whose entries are empty', () => {
    expect(writesState({ result: null, entries: [] })).toBe(false);
  });
});

describe('entriesOf', () => {
  it('lists the audit entry of a change, then its entries, in order', () => {
    const [a, b, c] = [entry(1), entry(2), entry(3)];
    expect(entriesOf({ result: null, audit: a, entries: [b, c] })).toEqual([a, b, c]);
  });

  it('lists nothing for a change with neither', () => {
    expect(entriesOf({ result: null })).toEqual([]);
  });

  it('refuses entries that are not an array, naming the field', () => {
    expect(() => entriesOf({ result: null, entries: entry(1) as never })).toThrow(
      expect.objectContaining({ field: 'entries' }),
    );
  });
});
