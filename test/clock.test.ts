import { describe, expect, it } from 'vitest';
import { GuardrailValidationError } from '../src/errors.js';
import { ManualClock, systemClock } from '../src/clock.js';

describe('ManualClock', () => {
  it('starts at zero by default', () => {
    expect(new ManualClock().now()).toBe(0);
  });

  it('starts at the given time', () => {
    expect(new ManualClock(1_700_000_000_000).now()).toBe(1_700_000_000_000);
  });

  it('accepts a start before 1970', () => {
    expect(new ManualClock(-86_400_000).now()).toBe(-86_400_000);
  });

  it('stands still until told to move', () => {
    const clock = new ManualClock(5);
    clock.now();
    expect(clock.now()).toBe(5);
  });

  it('moves forward by advance', () => {
    const clock = new ManualClock(1_000);
    clock.advance(61_000);
    expect(clock.now()).toBe(62_000);
  });

  it('adds up successive advances', () => {
    const clock = new ManualClock();
    clock.advance(1);
    clock.advance(2.5);
    expect(clock.now()).toBe(3.5);
  });

  it('accepts an advance of zero', () => {
    const clock = new ManualClock(7);
    clock.advance(0);
    expect(clock.now()).toBe(7);
  });

  it('refuses a negative advance', () => {
    const clock = new ManualClock(7);
    expect(() => clock.advance(-1)).toThrow(GuardrailValidationError);
  });

  it('names the bad value when refusing an advance', () => {
    expect(() => new ManualClock().advance(-1)).toThrow('ms must be a finite number >= 0, got -1');
  });

  it('refuses an advance of NaN', () => {
    expect(() => new ManualClock().advance(NaN)).toThrow(GuardrailValidationError);
  });

  it('refuses an advance of Infinity', () => {
    expect(() => new ManualClock().advance(Infinity)).toThrow(GuardrailValidationError);
  });

  it('refuses an advance that would overflow to Infinity', () => {
    const clock = new ManualClock(Number.MAX_VALUE);
    expect(() => clock.advance(Number.MAX_VALUE)).toThrow(GuardrailValidationError);
  });

  it('keeps its time when an advance is refused', () => {
    const clock = new ManualClock(7);
    expect(() => clock.advance(-1)).toThrow(GuardrailValidationError);
    expect(clock.now()).toBe(7);
  });

  it('jumps to the time given to set', () => {
    const clock = new ManualClock(1_000);
    clock.set(42);
    expect(clock.now()).toBe(42);
  });

  it('refuses to set NaN', () => {
    expect(() => new ManualClock().set(NaN)).toThrow('ms must be a finite number, got NaN');
  });

  it('refuses to set Infinity', () => {
    expect(() => new ManualClock().set(Infinity)).toThrow(GuardrailValidationError);
  });

  it('keeps its time when set is refused', () => {
    const clock = new ManualClock(9);
    expect(() => clock.set(NaN)).toThrow(GuardrailValidationError);
    expect(clock.now()).toBe(9);
  });

  it('refuses to start at NaN', () => {
    expect(() => new ManualClock(NaN)).toThrow('startMs must be a finite number, got NaN');
  });

  it('refuses to start at Infinity', () => {
    expect(() => new ManualClock(-Infinity)).toThrow(GuardrailValidationError);
  });

  it('refuses a non-number start', () => {
    expect(() => new ManualClock('1000' as unknown as number)).toThrow(GuardrailValidationError);
  });
});

describe('systemClock', () => {
  it('returns a finite number of epoch milliseconds', () => {
    const now = systemClock.now();
    expect(typeof now).toBe('number');
    expect(Number.isFinite(now)).toBe(true);
  });

  it('agrees with Date.now()', () => {
    const before = Date.now();
    const now = systemClock.now();
    const after = Date.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(after);
  });

  it('is frozen', () => {
    expect(Object.isFrozen(systemClock)).toBe(true);
  });
});
