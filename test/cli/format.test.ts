import { describe, expect, it } from 'vitest';
import { auditDetails, duration, outputLines } from '../../src/cli/format.js';

const shell = (stdout: string, stderr = '') => ({ exit_code: 0, stdout, stderr, duration_ms: 5 });
const http = (body: string, extra: Record<string, unknown> = {}) => ({
  status: 200,
  headers: {},
  body,
  ...extra,
});

describe('outputLines', () => {
  it('shows the last three lines a command printed, stdout then stderr', () => {
    expect(outputLines(shell('one\ntwo\nthree\n', 'warning\n'))).toEqual(['two', 'three', 'warning']);
  });

  it('shows all a command printed when verbose', () => {
    expect(outputLines(shell('one\ntwo\nthree\n', 'warning\n'), true)).toEqual([
      'one',
      'two',
      'three',
      'warning',
    ]);
  });

  it('cuts a long line at 200 characters', () => {
    const [line] = outputLines(shell('x'.repeat(500)));
    expect([line?.length, line?.endsWith('…')]).toEqual([200, true]);
  });

  it('shows the status and size of an HTTP answer', () => {
    expect(outputLines(http('healthy'))).toEqual(['HTTP 200, 7 bytes']);
  });

  it('says when an HTTP answer’s body was not read to its end', () => {
    expect(outputLines(http('x', { body_truncated: true }))).toEqual(['HTTP 200, 1 byte, the rest not read']);
  });

  it('shows an HTTP answer’s body too when verbose', () => {
    expect(outputLines(http('{"ok":true}'), true)).toEqual(['HTTP 200, 11 bytes', '{"ok":true}']);
  });

  it('shows another output as JSON on one line', () => {
    expect(outputLines({ message: 'deployed' })).toEqual(['{"message":"deployed"}']);
  });

  it('shows nothing for a step without output', () => {
    expect(outputLines(undefined)).toEqual([]);
  });
});

describe('duration', () => {
  it.each([
    [0, '0s'],
    [42.9, '42s'],
    [185, '3m05s'],
    [3720, '1h02m'],
    [86_399, '23h59m'],
  ])('shows %s seconds under a day as %s', (seconds, text) => {
    expect(duration(seconds)).toBe(text);
  });

  it.each([
    [86_400, '1d00h'],
    [3_000_000, '34d17h'],
    [99_999 * 86_400 + 3_600, '99999d01h'],
  ])('shows %s seconds as %s: days and hours', (seconds, text) => {
    expect(duration(seconds)).toBe(text);
  });

  it.each([
    [100_000 * 86_400, '8.64e9s'],
    [1e300, '1e300s'],
    [Number.MAX_VALUE, '1.8e308s'],
  ])('shows %s seconds, past 99999 days, as %s: a power of ten', (seconds, text) => {
    expect(duration(seconds)).toBe(text);
  });

  it.each([Infinity, -Infinity, NaN])('shows %s, which no amount of time is, as —', (seconds) => {
    expect(duration(seconds)).toBe('—');
  });
});

describe('auditDetails', () => {
  it('numbers a step check’s step from 1, as progress does', () => {
    expect(auditDetails('step_allowed', { step: 0, limit: 10 })).toBe('step 1/10');
  });

  it('shows the step a refused step check would have been', () => {
    expect(auditDetails('step_blocked', { step: 10, limit: 10 })).toBe('step 11/10');
  });

  it('says when the step check had no limit', () => {
    expect(auditDetails('step_allowed', { step: 2, limit: null })).toBe('step 3 (no limit)');
  });

  it('shows the details of other entries as recorded', () => {
    expect(auditDetails('budget_reserved', { step: 0, limit: 5 })).toBe('{"step":0,"limit":5}');
  });

  it('shows a step check whose step is not a count as recorded', () => {
    expect(auditDetails('step_allowed', { step: '0', limit: 10 })).toBe('{"step":"0","limit":10}');
  });
});
