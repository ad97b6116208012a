import { describe, expect, it } from 'vitest';
import { GuardrailValidationError } from '../src/errors.js';
import { canonicalIso, formatIso, parseIsoMs } from '../src/iso.js';

const NOON_UTC = Date.UTC(2026, 10, 30, 12, 0, 0, 0);

describe('parseIsoMs', () => {
  it('parses a UTC time with a Z zone', () => {
    expect(parseIsoMs('2026-11-30T12:00:00Z')).toBe(NOON_UTC);
  });

  it('parses a positive offset as that many hours ahead of UTC', () => {
    expect(parseIsoMs('2026-11-30T14:00:00+02:00')).toBe(NOON_UTC);
  });

  it('parses a negative offset as that many hours behind UTC', () => {
    expect(parseIsoMs('2026-11-30T07:00:00-05:00')).toBe(NOON_UTC);
  });

  it('parses an offset with minutes', () => {
    expect(parseIsoMs('2026-11-30T17:30:00+05:30')).toBe(NOON_UTC);
  });

  it('treats +00:00 and -00:00 as UTC', () => {
    expect(parseIsoMs('2026-11-30T12:00:00+00:00')).toBe(NOON_UTC);
    expect(parseIsoMs('2026-11-30T12:00:00-00:00')).toBe(NOON_UTC);
  });

  it('parses an offset that crosses into the previous day', () => {
    expect(parseIsoMs('2026-12-01T01:00:00+13:00')).toBe(NOON_UTC);
  });

  it('parses a time without seconds', () => {
    expect(parseIsoMs('2026-11-30T12:00Z')).toBe(NOON_UTC);
  });

  it('parses milliseconds', () => {
    expect(parseIsoMs('2026-11-30T12:00:00.123Z')).toBe(NOON_UTC + 123);
  });

  it('parses one fractional digit as tenths of a second', () => {
    expect(parseIsoMs('2026-11-30T12:00:00.5Z')).toBe(NOON_UTC + 500);
  });

  it('parses nine fractional digits, truncating below the millisecond', () => {
    expect(parseIsoMs('2026-11-30T12:00:00.123456789Z')).toBe(NOON_UTC + 123);
  });

  it('refuses ten fractional digits', () => {
    expect(parseIsoMs('2026-11-30T12:00:00.1234567891Z')).toBeNaN();
  });

  it('refuses a decimal point without digits', () => {
    expect(parseIsoMs('2026-11-30T12:00:00.Z')).toBeNaN();
  });

  it('refuses a time without a zone', () => {
    expect(parseIsoMs('2026-11-30T12:00:00')).toBeNaN();
  });

  it('refuses a date without a time', () => {
    expect(parseIsoMs('2026-11-30')).toBeNaN();
  });

  it('refuses a space in place of T', () => {
    expect(parseIsoMs('2026-11-30 12:00:00Z')).toBeNaN();
  });

  it('refuses a lower-case z zone', () => {
    expect(parseIsoMs('2026-11-30T12:00:00z')).toBeNaN();
  });

  it('refuses an offset without a colon', () => {
    expect(parseIsoMs('2026-11-30T12:00:00+0200')).toBeNaN();
  });

  it('refuses an offset of 24 hours', () => {
    expect(parseIsoMs('2026-11-30T12:00:00+24:00')).toBeNaN();
  });

  it('refuses offset minutes of 60', () => {
    expect(parseIsoMs('2026-11-30T12:00:00+01:60')).toBeNaN();
  });

  it('refuses 30 February', () => {
    expect(parseIsoMs('2026-02-30T00:00:00Z')).toBeNaN();
  });

  it('refuses 29 February in a common year', () => {
    expect(parseIsoMs('2023-02-29T00:00:00Z')).toBeNaN();
  });

  it('accepts 29 February in a leap year', () => {
    expect(parseIsoMs('2024-02-29T00:00:00Z')).toBe(Date.UTC(2024, 1, 29));
  });

  it('refuses 29 February 1900, a century that is not a leap year', () => {
    expect(parseIsoMs('1900-02-29T00:00:00Z')).toBeNaN();
  });

  it('accepts 29 February 2000, a leap year divisible by 400', () => {
    expect(parseIsoMs('2000-02-29T00:00:00Z')).toBe(Date.UTC(2000, 1, 29));
  });

  it('accepts 29 February of year 0000, a leap year', () => {
    expect(formatIso(parseIsoMs('0000-02-29T00:00:00Z'))).toBe('0000-02-29T00:00:00.000Z');
  });

  it('maps years 0000 to 0099 to themselves, not to the 1900s', () => {
    expect(formatIso(parseIsoMs('0050-06-15T00:00:00Z'))).toBe('0050-06-15T00:00:00.000Z');
  });

  it('refuses 31 April', () => {
    expect(parseIsoMs('2026-04-31T00:00:00Z')).toBeNaN();
  });

  it('refuses month 13', () => {
    expect(parseIsoMs('2026-13-01T00:00:00Z')).toBeNaN();
  });

  it('refuses month 00', () => {
    expect(parseIsoMs('2026-00-01T00:00:00Z')).toBeNaN();
  });

  it('refuses day 00', () => {
    expect(parseIsoMs('2026-11-00T00:00:00Z')).toBeNaN();
  });

  it('refuses hour 24', () => {
    expect(parseIsoMs('2026-11-30T24:00:00Z')).toBeNaN();
  });

  it('refuses minute 60', () => {
    expect(parseIsoMs('2026-11-30T12:60:00Z')).toBeNaN();
  });

  it('refuses second 60', () => {
    expect(parseIsoMs('2026-11-30T12:00:60Z')).toBeNaN();
  });

  it('refuses a two-digit year', () => {
    expect(parseIsoMs('26-11-30T12:00:00Z')).toBeNaN();
  });

  it('refuses surrounding whitespace', () => {
    expect(parseIsoMs(' 2026-11-30T12:00:00Z')).toBeNaN();
    expect(parseIsoMs('2026-11-30T12:00:00Z\n')).toBeNaN();
  });

  it('refuses the empty string', () => {
    expect(parseIsoMs('')).toBeNaN();
  });

  it('refuses non-ASCII digits', () => {
    expect(parseIsoMs('２026-11-30T12:00:00Z')).toBeNaN();
  });
});

describe('formatIso', () => {
  it('formats epoch milliseconds as UTC with milliseconds', () => {
    expect(formatIso(NOON_UTC + 7)).toBe('2026-11-30T12:00:00.007Z');
  });
});

describe('canonicalIso', () => {
  it('returns a UTC time with milliseconds unchanged', () => {
    expect(canonicalIso('2026-11-30T10:00:00.000Z', 'start_time')).toBe('2026-11-30T10:00:00.000Z');
  });

  it('adds milliseconds to a time without them', () => {
    expect(canonicalIso('2026-11-30T10:00:00Z', 'start_time')).toBe('2026-11-30T10:00:00.000Z');
  });

  it('converts an offset time to UTC', () => {
    expect(canonicalIso('2026-11-30T11:30:00+01:30', 'start_time')).toBe('2026-11-30T10:00:00.000Z');
  });

  it('truncates nine fractional digits to milliseconds', () => {
    expect(canonicalIso('2026-11-30T10:00:00.987654321Z', 'start_time')).toBe('2026-11-30T10:00:00.987Z');
  });

  it('refuses a time without a zone, naming the field and the value', () => {
    let error: unknown;
    try {
      canonicalIso('2026-11-30T10:00:00', 'start_time');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(GuardrailValidationError);
    expect((error as GuardrailValidationError).field).toBe('start_time');
    expect((error as GuardrailValidationError).message).toBe(
      'start_time must be an ISO-8601 date-time with a time zone, like "2026-11-30T10:00:00Z", got "2026-11-30T10:00:00"',
    );
  });

  it('refuses 30 February', () => {
    expect(() => canonicalIso('2026-02-30T10:00:00Z', 'start_time')).toThrow(GuardrailValidationError);
  });

  it('refuses a number of epoch milliseconds', () => {
    expect(() => canonicalIso(NOON_UTC, 'start_time')).toThrow(
      `start_time must be an ISO-8601 date-time with a time zone, like "2026-11-30T10:00:00Z", got ${NOON_UTC}`,
    );
  });

  it('refuses null', () => {
    expect(() => canonicalIso(null, 'start_time')).toThrow(GuardrailValidationError);
  });

  it('refuses a Date object', () => {
    expect(() => canonicalIso(new Date(NOON_UTC), 'start_time')).toThrow(GuardrailValidationError);
  });

  it('refuses a time whose offset moves it before year 0000', () => {
    expect(() => canonicalIso('0000-01-01T00:00:00+01:00', 'start_time')).toThrow(GuardrailValidationError);
  });

  it('refuses a time whose offset moves it past year 9999', () => {
    expect(() => canonicalIso('9999-12-31T23:30:00-01:00', 'start_time')).toThrow(GuardrailValidationError);
  });

  it('returns a form that parses back to the same instant', () => {
    const canonical = canonicalIso('2026-11-30T23:59:59.999-12:00', 'start_time');
    expect(parseIsoMs(canonical)).toBe(parseIsoMs('2026-11-30T23:59:59.999-12:00'));
  });
});
