import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GuardrailValidationError } from '../src/errors.js';
import { fromMicros, MAX_AMOUNT, MICROS_PER_UNIT, toMicros } from '../src/money.js';
import { thrown } from './support/thrown.js';

describe('MICROS_PER_UNIT', () => {
  it('is one million', () => {
    expect(MICROS_PER_UNIT).toBe(1_000_000);
  });
});

describe('MAX_AMOUNT', () => {
  it('is the largest whole amount whose micro-units are a safe integer', () => {
    expect(Number.isSafeInteger(MAX_AMOUNT * MICROS_PER_UNIT)).toBe(true);
    expect(Number.isSafeInteger((MAX_AMOUNT + 1) * MICROS_PER_UNIT)).toBe(false);
  });
});

describe('toMicros', () => {
  it('converts a whole amount to micro-units', () => {
    expect(toMicros(3, 'cost')).toBe(3_000_000);
  });

  it('converts zero to zero', () => {
    expect(toMicros(0, 'cost')).toBe(0);
  });

  it('converts negative zero to positive zero', () => {
    expect(Object.is(toMicros(-0, 'cost'), 0)).toBe(true);
  });

  it('converts 0.1 to exactly 100000 micro-units despite binary floating point', () => {
    expect(toMicros(0.1, 'cost', 'up')).toBe(100_000);
  });

  it('makes 0.1 + 0.2 equal 0.3 in micro-units', () => {
    expect(toMicros(0.1, 'cost', 'up') + toMicros(0.2, 'cost', 'up')).toBe(
      toMicros(0.3, 'tool_budget', 'down'),
    );
  });

  it('lets a budget of 0.3 admit 0.1 then 0.2 and then nothing more', () => {
    const budget = toMicros(0.3, 'tool_budget', 'down');
    let spent = 0;
    for (const cost of [0.1, 0.2]) {
      const micros = toMicros(cost, 'cost', 'up');
      expect(spent + micros <= budget).toBe(true);
      spent += micros;
    }
    expect(spent + toMicros(0.000001, 'cost', 'up') <= budget).toBe(false);
  });

  it('converts an amount of tens of thousands with six decimals exactly, rounding up', () => {
    expect(toMicros(66036.13539, 'cost', 'up')).toBe(66_036_135_390);
  });

  it('converts an amount of tens of thousands with six decimals exactly, rounding down', () => {
    expect(toMicros(66036.13539, 'tool_budget', 'down')).toBe(66_036_135_390);
  });

  it('converts an amount in the billions with six decimals exactly', () => {
    expect(toMicros(1234567890.123456, 'cost', 'up')).toBe(1_234_567_890_123_456);
  });

  it('treats the arithmetic noise of 0.1 + 0.2 as 0.3 when rounding up', () => {
    expect(toMicros(0.1 + 0.2, 'cost', 'up')).toBe(300_000);
  });

  it('treats the arithmetic noise of ten additions of 0.1 as 1 when rounding down', () => {
    let sum = 0;
    for (let i = 0; i < 10; i++) sum += 0.1;
    expect(toMicros(sum, 'tool_budget', 'down')).toBe(1_000_000);
  });

  it('converts an amount written in exponent notation', () => {
    expect(toMicros(2.5e-5, 'cost', 'up')).toBe(25);
  });

  it('keeps one micro-unit exactly', () => {
    expect(toMicros(0.000001, 'cost', 'up')).toBe(1);
  });

  it('rounds a fraction of a micro-unit up when asked to round up (costs)', () => {
    expect(toMicros(0.0000012, 'cost', 'up')).toBe(2);
  });

  it('rounds a fraction of a micro-unit down when asked to round down (limits)', () => {
    expect(toMicros(0.0000018, 'tool_budget', 'down')).toBe(1);
  });

  it('rounds a fraction of a micro-unit to the nearest by default', () => {
    expect(toMicros(0.0000012, 'budget_spent')).toBe(1);
    expect(toMicros(0.0000018, 'budget_spent')).toBe(2);
  });

  it('charges a tiny positive cost at least one micro-unit when rounding up', () => {
    expect(toMicros(1e-9, 'cost', 'up')).toBe(1);
  });

  it('rounds a tiny positive limit down to zero', () => {
    expect(toMicros(1e-9, 'tool_budget', 'down')).toBe(0);
  });

  it('accepts MAX_AMOUNT', () => {
    expect(toMicros(MAX_AMOUNT, 'cost')).toBe(MAX_AMOUNT * MICROS_PER_UNIT);
  });

  it('returns a safe integer for a large amount with a fraction', () => {
    expect(Number.isSafeInteger(toMicros(MAX_AMOUNT - 0.5, 'cost', 'up'))).toBe(true);
  });

  it('refuses an amount above MAX_AMOUNT, naming the field and the value', () => {
    const e = thrown(() => toMicros(MAX_AMOUNT + 1, 'tool_budget'));
    expect(e.field).toBe('tool_budget');
    expect(e.message).toBe(`tool_budget must be at most ${MAX_AMOUNT}, got ${MAX_AMOUNT + 1}`);
  });

  it('refuses a negative amount, naming the field and the value', () => {
    const e = thrown(() => toMicros(-1, 'cost'));
    expect(e.field).toBe('cost');
    expect(e.message).toBe('cost must be a finite number >= 0, got -1');
  });

  it('refuses a tiny negative amount rather than rounding it to zero', () => {
    expect(() => toMicros(-1e-12, 'cost')).toThrow(GuardrailValidationError);
  });

  it('refuses NaN, naming the field and the value', () => {
    const e = thrown(() => toMicros(NaN, 'cost'));
    expect(e.field).toBe('cost');
    expect(e.message).toBe('cost must be a finite number >= 0, got NaN');
  });

  it('refuses Infinity, naming the field and the value', () => {
    const e = thrown(() => toMicros(Infinity, 'tool_budget'));
    expect(e.field).toBe('tool_budget');
    expect(e.message).toBe('tool_budget must be a finite number >= 0, got Infinity');
  });

  it('refuses negative Infinity', () => {
    expect(() => toMicros(-Infinity, 'cost')).toThrow('cost must be a finite number >= 0, got -Infinity');
  });

  it('refuses a numeric string, quoting it in the message', () => {
    const e = thrown(() => toMicros('1', 'cost'));
    expect(e.field).toBe('cost');
    expect(e.message).toBe('cost must be a finite number >= 0, got "1"');
  });

  it('refuses null', () => {
    expect(() => toMicros(null, 'cost')).toThrow('cost must be a finite number >= 0, got null');
  });

  it('refuses undefined', () => {
    expect(() => toMicros(undefined, 'cost')).toThrow('cost must be a finite number >= 0, got undefined');
  });

  it('refuses a bigint', () => {
    expect(() => toMicros(1n, 'cost')).toThrow('cost must be a finite number >= 0, got 1');
  });

  it('refuses a boxed number', () => {
    expect(() => toMicros(Object(1), 'cost')).toThrow(GuardrailValidationError);
  });
});

describe('toMicros on large amounts', () => {
  it('rounds a cost just above a whole amount up, even where doubles are coarse', () => {
    expect(toMicros(1000000000.0000004, 'cost', 'up')).toBe(1_000_000_000_000_001);
  });
});

describe('fromMicros', () => {
  it('converts micro-units back to units', () => {
    expect(fromMicros(2_500_000)).toBe(2.5);
  });

  it('converts zero to zero', () => {
    expect(fromMicros(0)).toBe(0);
  });

  it('gives back 0.3 for the micro-units of 0.1 plus 0.2', () => {
    expect(fromMicros(toMicros(0.1, 'cost') + toMicros(0.2, 'cost'))).toBe(0.3);
  });

  it('round-trips every listed amount with at most six decimals', () => {
    for (const amount of [0, 0.000001, 0.1, 0.3, 1.23, 19.99, 1234.567891, MAX_AMOUNT]) {
      expect(fromMicros(toMicros(amount, 'cost'))).toBe(amount);
    }
  });

  it('reads back as the same micro-units under every rounding, up to 2^33 units', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 33 * MICROS_PER_UNIT }),
        fc.constantFrom('up' as const, 'down' as const, 'nearest' as const),
        (micros, rounding) => toMicros(fromMicros(micros), 'cost', rounding) === micros,
      ),
      { numRuns: 2000 },
    );
  });
});
