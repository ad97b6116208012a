import { describe, expect, it } from 'vitest';
import {
  describeValue,
  errorTail,
  GuardrailError,
  GuardrailValidationError,
  GuardrailViolationError,
  invalid,
  isGuardrailError,
  isGuardrailValidationError,
  isGuardrailViolationError,
  textTail,
} from '../src/errors.js';
import type { GuardCheck } from '../src/index.js';

const DENIED_STEP: GuardCheck = Object.freeze({
  allowed: false,
  result: 'denied',
  eventType: 'step_blocked',
  guardName: 'step_limit',
  reason: 'step 5 reaches max_steps 5',
  limit: 5,
  observed: 5,
});

/** What an error thrown by a second copy of the package looks like: same brand, different classes. */
function foreignError(code: string): Error {
  const e = new Error('from another copy');
  Object.defineProperty(e, Symbol.for('leash.GuardrailError'), { value: true });
  Object.defineProperty(e, 'code', { value: code });
  return e;
}

describe('GuardrailError', () => {
  it('is an Error', () => {
    expect(new GuardrailError('STORE_CORRUPT', 'boom')).toBeInstanceOf(Error);
  });

  it('carries its code', () => {
    expect(new GuardrailError('STORE_CLOSED', 'the store is closed').code).toBe('STORE_CLOSED');
  });

  it('carries its message', () => {
    expect(new GuardrailError('STORE_CLOSED', 'the store is closed').message).toBe('the store is closed');
  });

  it('is named GuardrailError', () => {
    expect(new GuardrailError('STORE_CORRUPT', 'x').name).toBe('GuardrailError');
  });

  it('carries a cause', () => {
    const cause = new Error('root');
    expect(new GuardrailError('STORE_CORRUPT', 'x', { cause }).cause).toBe(cause);
  });

  it('has no cause when none is given', () => {
    expect(new GuardrailError('STORE_CORRUPT', 'x').cause).toBeUndefined();
  });

  it('has a stack trace', () => {
    expect(new GuardrailError('STORE_CORRUPT', 'x').stack).toContain('GuardrailError');
  });

  it('carries the cross-copy brand', () => {
    const e = new GuardrailError('STORE_CORRUPT', 'x') as unknown as Record<symbol, unknown>;
    expect(e[Symbol.for('leash.GuardrailError')]).toBe(true);
  });
});

describe('GuardrailValidationError', () => {
  it('is a GuardrailError', () => {
    expect(new GuardrailValidationError('max_steps', 'bad')).toBeInstanceOf(GuardrailError);
  });

  it('has the code GUARDRAIL_VALIDATION', () => {
    expect(new GuardrailValidationError('max_steps', 'bad').code).toBe('GUARDRAIL_VALIDATION');
  });

  it('is named GuardrailValidationError', () => {
    expect(new GuardrailValidationError('max_steps', 'bad').name).toBe('GuardrailValidationError');
  });

  it('carries the field', () => {
    expect(new GuardrailValidationError('actor_limits.max_retries_per_failure', 'bad').field).toBe(
      'actor_limits.max_retries_per_failure',
    );
  });

  it('allows an undefined field', () => {
    expect(new GuardrailValidationError(undefined, 'bad').field).toBeUndefined();
  });

  it('carries its message', () => {
    expect(new GuardrailValidationError('max_steps', 'max_steps is wrong').message).toBe(
      'max_steps is wrong',
    );
  });

  it('carries a cause', () => {
    const cause = new SyntaxError('Unexpected token');
    expect(new GuardrailValidationError('metadata', 'bad', { cause }).cause).toBe(cause);
  });
});

describe('GuardrailViolationError', () => {
  it('is a GuardrailError', () => {
    expect(new GuardrailViolationError(DENIED_STEP)).toBeInstanceOf(GuardrailError);
  });

  it('has the code GUARDRAIL_VIOLATION', () => {
    expect(new GuardrailViolationError(DENIED_STEP).code).toBe('GUARDRAIL_VIOLATION');
  });

  it('is named GuardrailViolationError', () => {
    expect(new GuardrailViolationError(DENIED_STEP).name).toBe('GuardrailViolationError');
  });

  it('carries the check that denied', () => {
    expect(new GuardrailViolationError(DENIED_STEP).check).toBe(DENIED_STEP);
  });

  it('names the guard and the reason in its message', () => {
    expect(new GuardrailViolationError(DENIED_STEP).message).toBe('step_limit: step 5 reaches max_steps 5');
  });

  it('carries a cause', () => {
    const cause = new Error('root');
    expect(new GuardrailViolationError(DENIED_STEP, { cause }).cause).toBe(cause);
  });
});

describe('isGuardrailError', () => {
  it('recognises a GuardrailError', () => {
    expect(isGuardrailError(new GuardrailError('STORE_CORRUPT', 'x'))).toBe(true);
  });

  it('recognises a GuardrailValidationError', () => {
    expect(isGuardrailError(new GuardrailValidationError('f', 'x'))).toBe(true);
  });

  it('recognises a GuardrailViolationError', () => {
    expect(isGuardrailError(new GuardrailViolationError(DENIED_STEP))).toBe(true);
  });

  it('recognises an error from another copy of the package', () => {
    const e = foreignError('GUARDRAIL_VALIDATION');
    expect(e instanceof GuardrailError).toBe(false);
    expect(isGuardrailError(e)).toBe(true);
  });

  it('recognises a plain object carrying the brand', () => {
    expect(isGuardrailError({ [Symbol.for('leash.GuardrailError')]: true, code: 'X' })).toBe(true);
  });

  it('rejects a brand whose value is not exactly true', () => {
    expect(isGuardrailError({ [Symbol.for('leash.GuardrailError')]: 'yes' })).toBe(false);
  });

  it('rejects a brand under a different symbol of the same description', () => {
    expect(isGuardrailError({ [Symbol('leash.GuardrailError')]: true })).toBe(false);
  });

  it('rejects an ordinary Error', () => {
    expect(isGuardrailError(new Error('x'))).toBe(false);
  });

  it('rejects an Error that merely has a code', () => {
    expect(isGuardrailError(Object.assign(new Error('x'), { code: 'GUARDRAIL_VALIDATION' }))).toBe(false);
  });

  it('rejects null', () => {
    expect(isGuardrailError(null)).toBe(false);
  });

  it('rejects undefined', () => {
    expect(isGuardrailError(undefined)).toBe(false);
  });

  it('rejects a string', () => {
    expect(isGuardrailError('GuardrailError')).toBe(false);
  });
});

describe('isGuardrailValidationError', () => {
  it('recognises a GuardrailValidationError', () => {
    expect(isGuardrailValidationError(new GuardrailValidationError('f', 'x'))).toBe(true);
  });

  it('recognises a validation error from another copy of the package', () => {
    expect(isGuardrailValidationError(foreignError('GUARDRAIL_VALIDATION'))).toBe(true);
  });

  it('rejects a GuardrailViolationError', () => {
    expect(isGuardrailValidationError(new GuardrailViolationError(DENIED_STEP))).toBe(false);
  });

  it('rejects a GuardrailError with another code', () => {
    expect(isGuardrailValidationError(new GuardrailError('STORE_CLOSED', 'x'))).toBe(false);
  });

  it('rejects an unbranded error with the validation code', () => {
    expect(isGuardrailValidationError(Object.assign(new Error('x'), { code: 'GUARDRAIL_VALIDATION' }))).toBe(
      false,
    );
  });
});

describe('isGuardrailViolationError', () => {
  it('recognises a GuardrailViolationError', () => {
    expect(isGuardrailViolationError(new GuardrailViolationError(DENIED_STEP))).toBe(true);
  });

  it('recognises a violation error from another copy of the package', () => {
    expect(isGuardrailViolationError(foreignError('GUARDRAIL_VIOLATION'))).toBe(true);
  });

  it('rejects a GuardrailValidationError', () => {
    expect(isGuardrailViolationError(new GuardrailValidationError('f', 'x'))).toBe(false);
  });
});

describe('describeValue', () => {
  it('renders null', () => {
    expect(describeValue(null)).toBe('null');
  });

  it('renders undefined', () => {
    expect(describeValue(undefined)).toBe('undefined');
  });

  it('renders a number', () => {
    expect(describeValue(42.5)).toBe('42.5');
  });

  it('renders NaN', () => {
    expect(describeValue(NaN)).toBe('NaN');
  });

  it('renders Infinity', () => {
    expect(describeValue(-Infinity)).toBe('-Infinity');
  });

  it('renders negative zero as -0', () => {
    expect(describeValue(-0)).toBe('-0');
  });

  it('renders a string quoted', () => {
    expect(describeValue('deploy')).toBe('"deploy"');
  });

  it('renders a string with escapes so hidden characters show', () => {
    expect(describeValue('a\u0000b\n')).toBe('"a\\u0000b\\n"');
  });

  it('renders a 60-character string whole', () => {
    expect(describeValue('x'.repeat(60))).toBe(`"${'x'.repeat(60)}"`);
  });

  it('shortens a long string and gives its length', () => {
    expect(describeValue('x'.repeat(1000))).toBe(`"${'x'.repeat(60)}…" (1000 characters)`);
  });

  it('renders a boolean', () => {
    expect(describeValue(false)).toBe('false');
  });

  it('renders a bigint', () => {
    expect(describeValue(12n)).toBe('12');
  });

  it('renders an array by its length', () => {
    expect(describeValue([1, 2, 3])).toBe('an array of 3');
  });

  it('renders an object without its contents', () => {
    expect(describeValue({ secret: 'x' })).toBe('an object');
  });

  it('renders a function by its type', () => {
    expect(describeValue(() => 1)).toBe('a function');
  });

  it('renders a symbol by its type', () => {
    expect(describeValue(Symbol('s'))).toBe('a symbol');
  });

  it('does not throw for an object whose toString throws', () => {
    const hostile = {
      toString(): string {
        throw new Error('no');
      },
    };
    expect(describeValue(hostile)).toBe('an object');
  });

  it('does not throw for an object without a prototype', () => {
    expect(describeValue(Object.create(null))).toBe('an object');
  });

  it('does not throw for a proxy whose traps all throw', () => {
    const trap = (): never => {
      throw new Error('trap');
    };
    const hostile = new Proxy({}, { get: trap, has: trap, ownKeys: trap, getPrototypeOf: trap });
    expect(describeValue(hostile)).toBe('an object');
  });

  it('does not throw for a revoked proxy', () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(describeValue(proxy)).toBe('an object');
  });

  it('does not throw for a string with a lone surrogate', () => {
    expect(describeValue('\ud800')).toBe('"\\ud800"');
  });
});

describe('invalid', () => {
  it('throws a GuardrailValidationError naming the field, the rule and the value', () => {
    let error: unknown;
    try {
      invalid('max_steps', 'an integer >= 1', 0);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(GuardrailValidationError);
    expect((error as GuardrailValidationError).field).toBe('max_steps');
    expect((error as GuardrailValidationError).message).toBe('max_steps must be an integer >= 1, got 0');
  });
});

describe('textTail', () => {
  it('keeps a short text as it is, without its trailing blank lines', () => {
    expect(textTail('exit code 1\n\n', 20, 4096)).toBe('exit code 1');
  });

  it('keeps the last lines, marked as cut', () => {
    expect(textTail('a\nb\nc', 2, 4096)).toBe('…b\nc');
  });

  it('counts the last lines without the trailing spaces, tabs and blank lines', () => {
    expect(textTail('a\nb\nc \t\n\n  \n', 2, 4096)).toBe('…b\nc');
  });

  it('ends CRLF lines with \\n, trailing ones dropped', () => {
    expect(textTail('a\r\nb\r\nc\r\n\r\n', 2, 4096)).toBe('…b\nc');
  });

  it('keeps a text of fewer lines whole, its trailing newlines dropped', () => {
    expect(textTail('\na\nb\n\n', 3, 4096)).toBe('\na\nb');
  });

  it('keeps whitespace that is not at the end', () => {
    expect(textTail(`x${' '.repeat(10)}y\n\n`, 20, 4096)).toBe(`x${' '.repeat(10)}y`);
  });

  it('keeps the end of a long run of spaces before the last character, within the bytes', () => {
    expect(textTail(`${' '.repeat(10_000)}x`, 20, 4096)).toBe(`…${' '.repeat(4092)}x`);
  });

  it('keeps at most the bytes asked for, in whole characters, the mark included', () => {
    const tail = textTail('ééééé', 20, 7);
    expect([tail, Buffer.byteLength(tail, 'utf8')]).toEqual(['…éé', 7]);
  });
});

describe('errorTail', () => {
  it('replaces a lone surrogate in the message with U+FFFD', () => {
    expect(errorTail(new Error('boom \ud800'))).toBe('boom \ufffd');
  });

  it('keeps a pair whole', () => {
    expect(errorTail(new Error('boom 😀'))).toBe('boom 😀');
  });
});
