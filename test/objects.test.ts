import { describe, expect, it } from 'vitest';
import { merged, withMissingKeys } from '../src/objects.js';

describe('withMissingKeys', () => {
  it('adds the keys the target lacks, and keeps its own over the source’s', () => {
    const out = withMissingKeys({ execute: 'mine' }, { execute: 'theirs', inputSchema: 's' });
    expect(out).toEqual({ execute: 'mine', inputSchema: 's' });
  });

  it('returns the target itself', () => {
    const target = { a: 1 };
    expect(withMissingKeys(target, { b: 2 })).toBe(target);
  });

  it('copies enumerable symbol keys, as a spread does', () => {
    const tag = Symbol('tag');
    const out = withMissingKeys({}, { [tag]: 'v' }) as Record<symbol, unknown>;
    expect(out[tag]).toBe('v');
  });

  it('leaves out keys that are not enumerable, as a spread does', () => {
    const source = Object.defineProperty({ a: 1 }, 'hidden', { value: 2, enumerable: false });
    expect(Object.keys(withMissingKeys({}, source))).toEqual(['a']);
  });

  it('copies the value a getter gives, not the getter', () => {
    const source = {
      get now() {
        return 'read';
      },
    };
    const out = withMissingKeys({}, source) as Record<string, unknown>;
    expect(Object.getOwnPropertyDescriptor(out, 'now')?.value).toBe('read');
  });

  it('keeps a __proto__ key an own property instead of setting the prototype', () => {
    const source: unknown = JSON.parse('{"__proto__": {"polluted": true}}');
    const out = withMissingKeys({}, source as object);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.keys(out)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });
});

describe('merged', () => {
  it('holds the keys of both in the order a spread gives, the second’s values winning', () => {
    const out = merged({ step: 1, tool: 'a', limit: null }, { tool: 'b', input_hash: 'h' });
    expect(Object.entries(out)).toEqual([
      ['step', 1],
      ['tool', 'b'],
      ['limit', null],
      ['input_hash', 'h'],
    ]);
  });

  it('leaves both objects as they were', () => {
    const first = { a: 1 };
    const second = { b: 2 };
    merged(first, second);
    expect(first).toEqual({ a: 1 });
    expect(second).toEqual({ b: 2 });
  });

  it('keeps a __proto__ key an own property instead of setting the prototype', () => {
    const first: unknown = JSON.parse('{"__proto__": {"polluted": true}}');
    const out = merged(first as object, { b: 2 });
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.keys(out)).toEqual(['__proto__', 'b']);
  });
});
