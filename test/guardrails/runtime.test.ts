import { describe, expect, it } from 'vitest';
import { runtimeKeyOf, validRuntimeKey } from '../../src/guardrails/runtime.js';

describe('the runtime key of an id and a suffix', () => {
  it('is the id and the suffix when they fit', () => {
    expect(runtimeKeyOf('deploy', '#2')).toBe('deploy#2');
  });

  it('fits the key limit for an id of the longest length an id may have', () => {
    const key = runtimeKeyOf('d'.repeat(256), '#1');
    expect([key.length <= 256, validRuntimeKey(key, 'key'), key.endsWith('#1')]).toEqual([true, key, true]);
  });

  it('keeps two long ids that share their start apart', () => {
    const start = 'x'.repeat(250);
    expect(runtimeKeyOf(`${start}aaaaaa`, '#1')).not.toBe(runtimeKeyOf(`${start}bbbbbb`, '#1'));
  });

  it('never cuts a character outside the BMP in half', () => {
    const key = runtimeKeyOf('😀'.repeat(128), '#1');
    expect(validRuntimeKey(key, 'key')).toBe(key);
  });
});
