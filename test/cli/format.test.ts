import { describe, expect, it } from 'vitest';
import { outputLines } from '../../src/cli/format.js';

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
