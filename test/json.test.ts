import { describe, expect, it } from 'vitest';
import { GuardrailValidationError } from '../src/errors.js';
import { canonicalJson, copyJsonObject, isPlainObject, MAX_JSON_DEPTH } from '../src/json.js';
import { thrown } from './support/thrown.js';

/** `{"a":{"a":…{"a":leaf}}}` with the leaf `levels` objects deep. */
function nested(levels: number, leaf: unknown = 1): Record<string, unknown> {
  let value: unknown = leaf;
  for (let i = 0; i < levels; i++) value = { a: value };
  return value as Record<string, unknown>;
}

function isDeeplyFrozen(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true;
  return Object.isFrozen(value) && Object.values(value).every(isDeeplyFrozen);
}

describe('isPlainObject', () => {
  it('accepts an object literal', () => {
    expect(isPlainObject({ a: 1 })).toBe(true);
  });

  it('accepts an object without a prototype', () => {
    expect(isPlainObject(Object.create(null))).toBe(true);
  });

  it('rejects an array', () => {
    expect(isPlainObject([])).toBe(false);
  });

  it('rejects null', () => {
    expect(isPlainObject(null)).toBe(false);
  });

  it('rejects a class instance', () => {
    expect(isPlainObject(new Map())).toBe(false);
  });
});

describe('copyJsonObject', () => {
  it('copies a JSON object to an equal one', () => {
    const input = { s: 'x', n: 1.5, b: true, z: null, a: [1, 'two', { three: 3 }], o: { p: { q: [] } } };
    expect(copyJsonObject(input, 'details').value).toEqual(input);
  });

  it('returns a fresh object, not the input', () => {
    const input = { a: { b: 1 } };
    const { value } = copyJsonObject(input, 'details');
    expect(value).not.toBe(input);
    expect(value['a']).not.toBe(input.a);
  });

  it('is unaffected by later changes to the input', () => {
    const input: Record<string, unknown> = { a: [1] };
    const { value } = copyJsonObject(input, 'details');
    (input['a'] as number[]).push(2);
    input['b'] = 1;
    expect(value).toEqual({ a: [1] });
  });

  it('freezes the result deeply', () => {
    const { value } = copyJsonObject({ a: { b: [1, { c: 2 }] }, d: [[3]] }, 'details');
    expect(isDeeplyFrozen(value)).toBe(true);
  });

  it('does not freeze the input', () => {
    const input = { a: { b: 1 } };
    copyJsonObject(input, 'details');
    expect(Object.isFrozen(input)).toBe(false);
    expect(Object.isFrozen(input.a)).toBe(false);
  });

  it('accepts an object without a prototype', () => {
    const input = Object.assign(Object.create(null) as Record<string, unknown>, { a: 1 });
    expect(copyJsonObject(input, 'details').value).toEqual({ a: 1 });
  });

  it('keeps a __proto__ key as an own data property', () => {
    const input: unknown = JSON.parse('{"__proto__": {"polluted": true}}');
    const { value } = copyJsonObject(input, 'details');
    expect(Object.keys(value)).toEqual(['__proto__']);
    expect(Object.getOwnPropertyDescriptor(value, '__proto__')?.value).toEqual({ polluted: true });
  });

  it('keeps the result’s prototype when a __proto__ key is copied', () => {
    const { value } = copyJsonObject(JSON.parse('{"__proto__": {"polluted": true}}'), 'details');
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect((value as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('never pollutes Object.prototype through a __proto__ key', () => {
    copyJsonObject(JSON.parse('{"a": {"__proto__": {"polluted": true}}}'), 'details');
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
  });

  it('keeps constructor and prototype keys as own data properties', () => {
    const input: unknown = JSON.parse('{"constructor": {"prototype": {"polluted": true}}}');
    const { value } = copyJsonObject(input, 'details');
    expect(Object.hasOwn(value, 'constructor')).toBe(true);
    expect(value['constructor']).toEqual({ prototype: { polluted: true } });
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('serializes a __proto__ key back out', () => {
    const text = '{"__proto__":{"x":1}}';
    expect(JSON.stringify(copyJsonObject(JSON.parse(text), 'details').value)).toBe(text);
  });

  it('counts its serialized size in bytes', () => {
    expect(copyJsonObject({ a: 1 }, 'details').bytes).toBe('{"a":1}'.length);
  });

  it('counts an empty object as two bytes', () => {
    expect(copyJsonObject({}, 'details').bytes).toBe(2);
  });

  it('counts non-ASCII characters in UTF-8 bytes, not UTF-16 units', () => {
    // "é" is 2 bytes, "€" 3 and "😀" 4 in UTF-8; the JSON around them is 8 bytes: {"s":""}
    expect(copyJsonObject({ s: 'é€😀' }, 'details').bytes).toBe(8 + 2 + 3 + 4);
  });

  it('counts the escapes JSON adds', () => {
    expect(copyJsonObject({ s: '"\n' }, 'details').bytes).toBe(Buffer.byteLength('{"s":"\\"\\n"}'));
  });

  it('accepts nesting exactly MAX_JSON_DEPTH levels deep', () => {
    expect(() => copyJsonObject(nested(MAX_JSON_DEPTH), 'details')).not.toThrow();
  });

  it('refuses nesting one level deeper than MAX_JSON_DEPTH', () => {
    const e = thrown(() => copyJsonObject(nested(MAX_JSON_DEPTH + 1), 'details'));
    expect(e.message).toContain(`nests deeper than ${MAX_JSON_DEPTH} levels`);
  });

  it('counts arrays as levels of nesting', () => {
    // One object level plus MAX_JSON_DEPTH array levels puts the leaf one level too deep.
    let value: unknown = 1;
    for (let i = 0; i < MAX_JSON_DEPTH; i++) value = [value];
    expect(() => copyJsonObject({ a: value }, 'details')).toThrow(GuardrailValidationError);
  });

  it('refuses hostile nesting with a validation error, not a stack overflow', () => {
    const deep: unknown = JSON.parse('{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000));
    expect(() => copyJsonObject(deep, 'details')).toThrow(GuardrailValidationError);
  });

  it('refuses a cycle with a validation error', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    expect(() => copyJsonObject(cyclic, 'details')).toThrow(GuardrailValidationError);
  });

  it('names the path of a NaN', () => {
    const e = thrown(() => copyJsonObject({ a: [0, { b: NaN }] }, 'details'));
    expect(e.field).toBe('details.a[1].b');
    expect(e.message).toBe('details.a[1].b must be a finite number, got NaN');
  });

  it('refuses Infinity', () => {
    expect(() => copyJsonObject({ a: Infinity }, 'details')).toThrow(
      'details.a must be a finite number, got Infinity',
    );
  });

  it('refuses negative Infinity', () => {
    expect(() => copyJsonObject({ a: -Infinity }, 'details')).toThrow(GuardrailValidationError);
  });

  it('refuses a function', () => {
    expect(() => copyJsonObject({ f: () => 1 }, 'details')).toThrow(
      'details.f must be plain JSON, got a function',
    );
  });

  it('refuses undefined', () => {
    expect(() => copyJsonObject({ u: undefined }, 'details')).toThrow(
      'details.u must be plain JSON, got undefined',
    );
  });

  it('refuses a hole in an array', () => {
    // eslint-disable-next-line no-sparse-arrays
    expect(() => copyJsonObject({ a: [1, , 3] }, 'details')).toThrow(
      'details.a[1] must be plain JSON, got undefined',
    );
  });

  it('refuses a Date', () => {
    expect(() => copyJsonObject({ d: new Date(0) }, 'details')).toThrow(
      'details.d must be plain JSON, got an object',
    );
  });

  it('refuses a Map', () => {
    expect(() => copyJsonObject({ m: new Map() }, 'details')).toThrow(GuardrailValidationError);
  });

  it('refuses a bigint', () => {
    expect(() => copyJsonObject({ n: 1n }, 'details')).toThrow('details.n must be plain JSON, got 1');
  });

  it('refuses a symbol', () => {
    expect(() => copyJsonObject({ s: Symbol('s') }, 'details')).toThrow(GuardrailValidationError);
  });

  it('refuses an array at the top', () => {
    const e = thrown(() => copyJsonObject([1], 'details'));
    expect(e.field).toBe('details');
    expect(e.message).toBe('details must be a JSON object, got an array of 1');
  });

  it('refuses null at the top', () => {
    expect(() => copyJsonObject(null, 'details')).toThrow('details must be a JSON object, got null');
  });

  it('refuses a string at the top', () => {
    expect(() => copyJsonObject('{}', 'details')).toThrow('details must be a JSON object, got "{}"');
  });

  it('leaves out symbol keys', () => {
    const { value } = copyJsonObject({ a: 1, [Symbol('hidden')]: 2 }, 'details');
    expect(Reflect.ownKeys(value)).toEqual(['a']);
  });
});

describe('copyJsonObject and negative zero', () => {
  it('copies -0 as 0, as JSON would', () => {
    expect(Object.is(copyJsonObject({ n: -0 }, 'details').value['n'], 0)).toBe(true);
  });
});

describe('copyJsonObject and lone surrogates', () => {
  it('refuses a string holding a lone surrogate, naming its path', () => {
    const e = thrown(() => copyJsonObject({ note: ['ok', 'dep\udc00loy'] }, 'details'));
    expect(e.field).toBe('details.note[1]');
    expect(e.message).toBe(
      'details.note[1] must be well-formed Unicode, but holds a lone surrogate (\\udc00 at index 3), got "dep\\udc00loy"',
    );
  });

  it('refuses a key holding a lone surrogate, naming the object it is in', () => {
    const e = thrown(() => copyJsonObject({ inner: { ['k\ud800']: 1 } }, 'details'));
    expect(e.field).toBe('details.inner');
    expect(e.message).toMatch(/^a key of details\.inner must be well-formed Unicode, .*\\ud800 at index 1/);
  });

  it('keeps a surrogate pair', () => {
    expect(copyJsonObject({ '\u{1F600}': '\u{1F680}' }, 'details').value).toEqual({ '😀': '🚀' });
  });
});

describe('canonicalJson', () => {
  it('sorts keys and writes no white space', () => {
    expect(canonicalJson({ b: [1, { d: true, c: null }], a: 'x' })).toBe(
      '{"a":"x","b":[1,{"c":null,"d":true}]}',
    );
  });

  it('writes a surrogate pair as the character, not as escapes', () => {
    expect(canonicalJson('\ud83d\ude00')).toBe('"😀"');
  });

  it('refuses a lone high surrogate (RFC 8785 makes it an error)', () => {
    const e = thrown(() => canonicalJson('\ud800'));
    expect(e.field).toBe('value');
    expect(e.message).toBe(
      'value must be well-formed Unicode, but holds a lone surrogate (\\ud800 at index 0), got "\\ud800"',
    );
  });

  it('refuses a lone low surrogate after a whole pair', () => {
    expect(thrown(() => canonicalJson('\u{1F600}\udc00')).message).toContain('(\\udc00 at index 2)');
  });

  it('refuses a lone surrogate deep in a value, naming its path', () => {
    expect(thrown(() => canonicalJson({ a: [{ b: 'x\udfff' }] }, 'input')).field).toBe('input.a[0].b');
  });

  it('refuses a key holding a lone surrogate, naming the object it is in', () => {
    const e = thrown(() => canonicalJson({ a: { ['\udbff']: 1 } }, 'input'));
    expect(e.field).toBe('input.a');
    expect(e.message).toMatch(/^a key of input\.a must be well-formed Unicode, .*\\udbff at index 0/);
  });

  it('accepts nesting exactly MAX_JSON_DEPTH levels deep', () => {
    expect(() => canonicalJson(nested(MAX_JSON_DEPTH))).not.toThrow();
  });

  it('refuses hostile nesting with a validation error, not a stack overflow', () => {
    expect(() => canonicalJson(nested(100_000))).toThrow(GuardrailValidationError);
  });
});
