import { invalid } from './errors.js';

/** One unit of money (whatever currency or credit the budget is in) is this many micro-units. */
export const MICROS_PER_UNIT = 1_000_000;

/** The largest amount leash can hold exactly: about nine billion units. */
export const MAX_AMOUNT = Math.floor(Number.MAX_SAFE_INTEGER / MICROS_PER_UNIT);

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
  if (amount === 0) return 0; // -0 too: a negative zero would leak into reasons and limits as "-0"
  const scaled = amount * MICROS_PER_UNIT;
  const nearest = Math.round(scaled);
  // Binary floating point puts 0.1 * 1e6 a hair off 100000; that is representation noise, not precision.
  if (Math.abs(scaled - nearest) < 1e-6 || rounding === 'nearest') return nearest;
  return rounding === 'up' ? Math.ceil(scaled) : Math.floor(scaled);
}

/** Converts integer micro-units back to units. */
export function fromMicros(micros: number): number {
  return micros / MICROS_PER_UNIT;
}
