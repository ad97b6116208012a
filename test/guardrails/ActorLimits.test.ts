import { describe, expect, it } from 'vitest';
import { ActorLimits, type ActorLimitsInit, GuardrailValidationError } from '../../src/index.js';
import { thrown } from '../support/thrown.js';

describe('ActorLimits.create', () => {
  it('is unlimited without arguments', () => {
    const limits = ActorLimits.create();
    expect(limits.maxToolCallsPerInvocation).toBeNull();
    expect(limits.maxRetriesPerFailure).toBeNull();
  });

  it('is unlimited for an empty object', () => {
    expect(ActorLimits.create({}).toJSON()).toEqual({
      max_tool_calls_per_invocation: null,
      max_retries_per_failure: null,
    });
  });

  it('keeps both limits', () => {
    const limits = ActorLimits.create({ maxToolCallsPerInvocation: 10, maxRetriesPerFailure: 3 });
    expect(limits.maxToolCallsPerInvocation).toBe(10);
    expect(limits.maxRetriesPerFailure).toBe(3);
  });

  it('accepts explicit nulls as unlimited', () => {
    const limits = ActorLimits.create({ maxToolCallsPerInvocation: null, maxRetriesPerFailure: null });
    expect(limits.maxToolCallsPerInvocation).toBeNull();
    expect(limits.maxRetriesPerFailure).toBeNull();
  });

  it('accepts one tool call per invocation', () => {
    expect(ActorLimits.create({ maxToolCallsPerInvocation: 1 }).maxToolCallsPerInvocation).toBe(1);
  });

  it('refuses zero tool calls per invocation, naming the field and the value', () => {
    const e = thrown(() => ActorLimits.create({ maxToolCallsPerInvocation: 0 }));
    expect(e.field).toBe('max_tool_calls_per_invocation');
    expect(e.message).toBe('max_tool_calls_per_invocation must be an integer >= 1, got 0');
  });

  it('refuses a fractional tool-call limit', () => {
    expect(() => ActorLimits.create({ maxToolCallsPerInvocation: 1.5 })).toThrow(
      'max_tool_calls_per_invocation must be an integer >= 1, got 1.5',
    );
  });

  it('refuses a tool-call limit beyond the safe integers', () => {
    expect(() => ActorLimits.create({ maxToolCallsPerInvocation: 2 ** 53 })).toThrow(
      GuardrailValidationError,
    );
  });

  it('refuses an infinite tool-call limit', () => {
    expect(() => ActorLimits.create({ maxToolCallsPerInvocation: Infinity })).toThrow(
      'max_tool_calls_per_invocation must be an integer >= 1, got Infinity',
    );
  });

  it('accepts zero retries per failure', () => {
    expect(ActorLimits.create({ maxRetriesPerFailure: 0 }).maxRetriesPerFailure).toBe(0);
  });

  it('refuses a negative retry limit, naming the field and the value', () => {
    const e = thrown(() => ActorLimits.create({ maxRetriesPerFailure: -1 }));
    expect(e.field).toBe('max_retries_per_failure');
    expect(e.message).toBe('max_retries_per_failure must be an integer >= 0, got -1');
  });

  it('refuses NaN as a retry limit', () => {
    expect(() => ActorLimits.create({ maxRetriesPerFailure: NaN })).toThrow(
      'max_retries_per_failure must be an integer >= 0, got NaN',
    );
  });

  it('refuses a string as a retry limit', () => {
    const init = { maxRetriesPerFailure: '3' } as unknown as ActorLimitsInit;
    expect(() => ActorLimits.create(init)).toThrow(
      'max_retries_per_failure must be an integer >= 0, got "3"',
    );
  });

  it('refuses an unknown key, naming it', () => {
    const init = { maxToolCalls: 3 } as unknown as ActorLimitsInit;
    const e = thrown(() => ActorLimits.create(init));
    expect(e.field).toBe('maxToolCalls');
    expect(e.message).toContain('maxToolCalls is not a known field');
  });

  it('refuses a snake_case key in the camelCase API', () => {
    const init = { max_retries_per_failure: 3 } as unknown as ActorLimitsInit;
    expect(() => ActorLimits.create(init)).toThrow(GuardrailValidationError);
  });

  it('refuses a non-object', () => {
    const e = thrown(() => ActorLimits.create(5 as unknown as ActorLimitsInit));
    expect(e.field).toBe('actorLimits');
    expect(e.message).toBe('actorLimits must be an object, got 5');
  });

  it('refuses null', () => {
    expect(() => ActorLimits.create(null as unknown as ActorLimitsInit)).toThrow(GuardrailValidationError);
  });

  it('refuses an array', () => {
    expect(() => ActorLimits.create([] as unknown as ActorLimitsInit)).toThrow(GuardrailValidationError);
  });

  it('is frozen', () => {
    expect(Object.isFrozen(ActorLimits.create({ maxRetriesPerFailure: 2 }))).toBe(true);
  });
});

describe('ActorLimits.parse', () => {
  it('reads the snake_case wire form', () => {
    const limits = ActorLimits.parse(
      { max_tool_calls_per_invocation: 4, max_retries_per_failure: 0 },
      'actor_limits.',
      true,
    );
    expect(limits.maxToolCallsPerInvocation).toBe(4);
    expect(limits.maxRetriesPerFailure).toBe(0);
  });

  it('prefixes the field in its errors with the enclosing path', () => {
    const wire = { max_tool_calls_per_invocation: null, max_retries_per_failure: -2 };
    const e = thrown(() => ActorLimits.parse(wire, 'actor_limits.', true));
    expect(e.field).toBe('actor_limits.max_retries_per_failure');
    expect(e.message).toBe('actor_limits.max_retries_per_failure must be an integer >= 0, got -2');
  });

  it('refuses wire limits missing a key, naming it', () => {
    const e = thrown(() => ActorLimits.parse({ max_retries_per_failure: 1 }, 'actor_limits.', true));
    expect(e.field).toBe('actor_limits.max_tool_calls_per_invocation');
    expect(e.message).toBe('actor_limits.max_tool_calls_per_invocation is missing');
  });

  it('names an unknown wire key with its full path', () => {
    const e = thrown(() => ActorLimits.parse({ retries: 1 }, 'actor_limits.', true));
    expect(e.field).toBe('actor_limits.retries');
  });

  it('names the enclosing object when it is not an object', () => {
    const e = thrown(() => ActorLimits.parse('none', 'actor_limits.', true));
    expect(e.field).toBe('actor_limits');
    expect(e.message).toBe('actor_limits must be an object, got "none"');
  });

  it('refuses camelCase keys in the wire form', () => {
    expect(() => ActorLimits.parse({ maxRetriesPerFailure: 1 }, 'actor_limits.', true)).toThrow(
      GuardrailValidationError,
    );
  });
});

describe('ActorLimits.UNLIMITED', () => {
  it('has no limits', () => {
    expect(ActorLimits.UNLIMITED.maxToolCallsPerInvocation).toBeNull();
    expect(ActorLimits.UNLIMITED.maxRetriesPerFailure).toBeNull();
  });

  it('is frozen', () => {
    expect(Object.isFrozen(ActorLimits.UNLIMITED)).toBe(true);
  });
});

describe('ActorLimits.toJSON', () => {
  it('uses the snake_case wire names', () => {
    expect(ActorLimits.create({ maxToolCallsPerInvocation: 7, maxRetriesPerFailure: 2 }).toJSON()).toEqual({
      max_tool_calls_per_invocation: 7,
      max_retries_per_failure: 2,
    });
  });

  it('reads back through parse to equal limits', () => {
    const limits = ActorLimits.create({ maxToolCallsPerInvocation: 7 });
    const json: unknown = JSON.parse(JSON.stringify(limits));
    expect(ActorLimits.parse(json, 'actor_limits.', true)).toEqual(limits);
  });
});
