import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { handle, integer, parseOptions, strict } from '../src/validation.js';
import { thrown } from './support/thrown.js';

const isRunner = (v: unknown) => typeof (v as { run?: unknown } | null)?.run === 'function';

const schema = z.object({
  runner: handle<{ run(): void }>('an object with a run() method', isRunner).optional(),
  count: integer(1, { value: 10, rule: 'at most 10' }).default(3),
  mode: z.enum(['fast', 'slow'], { error: '"fast" or "slow"' }).optional(),
  limits: strict({ depth: integer(0).optional() }).optional(),
});

describe('parseOptions', () => {
  it('fills the defaults in for undefined options', () => {
    expect(parseOptions(schema, undefined)).toEqual({ count: 3 });
  });

  it('reads an undefined value as no value', () => {
    expect(parseOptions(schema, { count: undefined })).toEqual({ count: 3 });
  });

  it('refuses options that are not a plain object, naming options', () => {
    const e = thrown(() => parseOptions(schema, new Map()));
    expect([e.field, e.message]).toEqual(['options', 'options must be a plain object, got a Map']);
  });

  it('refuses an unknown key, listing the known ones', () => {
    const e = thrown(() => parseOptions(schema, { cuont: 2 }));
    expect(e.field).toBe('options.cuont');
    expect(e.message).toBe('options.cuont is not a known field (known: runner, count, mode, limits)');
  });

  it('accepts options made without a prototype', () => {
    const options = Object.assign(Object.create(null) as object, { count: 4 });
    expect(parseOptions(schema, options)).toEqual({ count: 4 });
  });

  it('words a refused value as `<field> must be <rule>, got <value>`', () => {
    const e = thrown(() => parseOptions(schema, { count: 11 }));
    expect([e.field, e.message]).toEqual(['count', 'count must be at most 10, got 11']);
  });

  it('names the nested field of a refused value', () => {
    const e = thrown(() => parseOptions(schema, { limits: { depth: -1 } }));
    expect([e.field, e.message]).toEqual(['limits.depth', 'limits.depth must be an integer >= 0, got -1']);
  });

  it('refuses an unknown key of a nested object, naming it', () => {
    expect(thrown(() => parseOptions(schema, { limits: { deep: 1 } })).field).toBe('limits.deep');
  });

  it('accepts a class instance where the schema takes a handle', () => {
    class Runner {
      run(): void {}
    }
    const runner = new Runner();
    expect(parseOptions(schema, { runner }).runner).toBe(runner);
  });

  it('refuses a handle its rule does not accept', () => {
    const e = thrown(() => parseOptions(schema, { runner: {} }));
    expect(e.message).toBe('runner must be an object with a run() method, got an object');
  });

  it('refuses a value that is not plain data where the schema takes data', () => {
    const e = thrown(() => parseOptions(schema, { limits: new Map([['depth', 1]]) }));
    expect(e.field).toBe('limits');
    expect(e.message).toMatch(/^limits must be plain data .*got a Map$/);
  });

  it('reads -0 as 0', () => {
    expect(Object.is(parseOptions(schema, { limits: { depth: -0 } }).limits?.depth, 0)).toBe(true);
  });

  it('turns a getter that throws into a refusal of the options', () => {
    const options = {
      get count(): number {
        throw new Error('boom');
      },
    };
    const e = thrown(() => parseOptions(schema, options));
    expect([e.field, e.message]).toEqual(['options', 'options could not be read: boom']);
  });
});
