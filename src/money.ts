import { invalid } from './errors.js';

/** One unit of money (whatever currency or credit the budget is in) is this many micro-units. */
export const MICROS_PER_UNIT = 1_000_000;

/**
 * The largest amount leash accepts (about nine billion units). Up to 2^33 units (about 8.6 billion) every
 * micro-unit has its own number, so amounts read back exactly; above that, to within one micro-unit.
 */
export const MAX_AMOUNT = Math.floor(Number.MAX_SAFE_INTEGER / MICROS_PER_UNIT);

const EXACT_BELOW = 2 ** 33;

/**
 * How an amount finer than one micro-unit is rounded. Costs round `up` and limits round `down`, so
 * rounding can never admit spending beyond a budget; a stored counter rounds to the `nearest`.
 */
export type Rounding = 'up' | 'down' | 'nearest';

/**
 * Converts an amount to integer micro-units, validating it on the way.
 *
 * @example
 * toMicros(0.1, 'cost') + toMicros(0.2, 'cost') === toMicros(0.3, 'tool_budget') // true
 */
export function toMicros(amount: unknown, field: string, rounding: Rounding = 'nearest'): number {
  if (typeof amount !== 'number' || !Number.isFinite(amount) || amount < 0) {
    invalid(field, 'a finite number >= 0', amount);
  }
  if (amount > MAX_AMOUNT) invalid(field, `at most ${MAX_AMOUNT}`, amount);
  if (Number.isInteger(amount)) return amount * MICROS_PER_UNIT + 0; // + 0 turns -0 into 0
  // Fast path: when dividing the rounded product back gives `amount` itself, `amount` is the double
  // nearest to that many micro-units, so its shortest decimal form has at most six decimals: exact.
  // Above 2^33 units two micro-unit decimals can share one double, so only the exact path decides there.
  if (amount < EXACT_BELOW) {
    const rounded = Math.round(amount * MICROS_PER_UNIT);
    if (rounded / MICROS_PER_UNIT === amount) return rounded;
  }
  const nearest = decimalMicros(amount, 'nearest');
  // Arithmetic noise is not precision: 0.1 + 0.2 is 0.30000000000000004, a few ULPs off 0.3, and costs 0.3.
  // The tolerance is capped at a tenth of a micro-unit, so large amounts are never rounded the unsafe way.
  const tolerance = Math.min(amount * 8 * Number.EPSILON, 0.1 / MICROS_PER_UNIT);
  const noise = Math.abs(amount - nearest / MICROS_PER_UNIT) <= tolerance;
  return rounding === 'nearest' || noise ? nearest : decimalMicros(amount, rounding);
}

/**
 * Scales by 1e6 in exact decimal arithmetic on the shortest decimal that reads back as `amount`, which is
 * what the caller wrote and what JSON carries. Multiplying the double instead is off by more than a
 * micro-unit's rounding margin from about 16,000 units up (66036.13539 * 1e6 = 66036135389.99999).
 */
function decimalMicros(amount: number, rounding: Rounding): number {
  const [mantissa = '', exponent = '0'] = String(amount).split('e');
  const [whole = '', fraction = ''] = mantissa.split('.');
  const digits = BigInt(whole + fraction);
  const shift = Number(exponent) - fraction.length + 6;
  if (shift >= 0) return Number(digits * 10n ** BigInt(shift));
  const divisor = 10n ** BigInt(-shift);
  const quotient = digits / divisor;
  const remainder = digits % divisor;
  const roundUp =
    remainder !== 0n && (rounding === 'up' || (rounding === 'nearest' && remainder * 2n >= divisor));
  return Number(roundUp ? quotient + 1n : quotient);
}

/** Converts integer micro-units back to units. */
export function fromMicros(micros: number): number {
  return micros / MICROS_PER_UNIT;
}
