import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GuardrailValidationError } from '../../src/errors.js';
import { AutonomyGuardrails } from '../../src/guardrails/AutonomyGuardrails.js';
import { parsePolicy, policyToGuardrailsInit, validatePolicy, type Policy } from '../../src/policy/index.js';

/** Runs `fn`; a GuardrailValidationError counts as an answer, any other error fails the property. */
function policyOrRefusal(fn: () => Policy): Policy | GuardrailValidationError {
  try {
    return fn();
  } catch (e) {
    if (e instanceof GuardrailValidationError) return e;
    throw e;
  }
}

/** Values that break a field: wrong types, edge numbers, words of the schema. */
const hostile: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(
    Number.NaN,
    Number.POSITIVE_INFINITY,
    -1,
    -0,
    0,
    0.5,
    1.5,
    2 ** 53,
    1e300,
    '',
    'deploy',
    'de\u200bploy',
    '  ',
    '__proto__',
    [],
    {},
    null,
  ),
);

const nullable = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | null> => fc.option(arb, { nil: null });
const amount = fc.integer({ min: 0, max: 50_000_000 }).map((micros) => micros / 1_000_000);
const seconds = fc.double({ min: 0.001, max: 1e6, noNaN: true });
const toolName = fc.oneof(
  fc.constantFrom('shell', 'search', 'constructor', 'my.tool', 'ｗｉｄｅ'),
  fc.string({ minLength: 1, maxLength: 8 }).filter((name) => name !== '__proto__' && name.trim() !== ''),
);

/** Valid policies, every key optional but the version. */
const validPolicy = fc.record(
  {
    version: fc.constant(1),
    guardrails: fc.record(
      {
        max_steps: nullable(fc.integer({ min: 1, max: 1000 })),
        tool_budget: nullable(amount),
        required_confirmations: fc.array(fc.constantFrom('deploy', 'Send_Email', 'ＰＡＹ', ' delete '), {
          maxLength: 4,
        }),
        max_wall_clock_seconds: nullable(seconds),
        actor_limits: fc.record(
          {
            max_tool_calls_per_invocation: nullable(fc.integer({ min: 1, max: 100 })),
            max_retries_per_failure: nullable(fc.integer({ min: 0, max: 100 })),
          },
          { requiredKeys: [] },
        ),
      },
      { requiredKeys: [] },
    ),
    approvals: fc.record({ ttl_seconds: seconds }, { requiredKeys: [] }),
    tools: fc.dictionary(
      toolName,
      fc.record(
        {
          max_calls_per_plan: fc.integer({ min: 1, max: 100 }),
          cost_per_call: amount,
          requires_confirmation: fc.boolean(),
        },
        { requiredKeys: [] },
      ),
      { maxKeys: 3 },
    ),
  },
  { requiredKeys: ['version'] },
);

/** Where a hostile value may land: every known path, some unknown ones, and runtime state. */
const PATHS: readonly (readonly string[])[] = [
  [],
  ['version'],
  ['guardrails'],
  ['guardrails', 'max_steps'],
  ['guardrails', 'tool_budget'],
  ['guardrails', 'required_confirmations'],
  ['guardrails', 'required_confirmations', '0'],
  ['guardrails', 'max_wall_clock_seconds'],
  ['guardrails', 'actor_limits'],
  ['guardrails', 'actor_limits', 'max_tool_calls_per_invocation'],
  ['guardrails', 'actor_limits', 'max_retries_per_failure'],
  ['guardrails', 'step_count'],
  ['guardrails', 'start_time'],
  ['approvals'],
  ['approvals', 'ttl_seconds'],
  ['tools'],
  ['tools', 'shell'],
  ['tools', ''],
  ['tools', 'shell', 'max_calls_per_plan'],
  ['tools', 'shell', 'cost_per_call'],
  ['tools', 'shell', 'requires_confirmation'],
  ['tools', 'shell', 'timeout'],
  ['extra'],
];

/** Puts `value` at `path` in a copy of `policy`, making the objects on the way as needed. */
function plant(policy: unknown, path: readonly string[], value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path as [string, ...string[]];
  const base: Record<string, unknown> =
    typeof policy === 'object' && policy !== null ? { ...(policy as Record<string, unknown>) } : {};
  Object.defineProperty(base, head, {
    value: plant(base[head], rest, value),
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return base;
}

/** Valid policies with, most of the time, one hostile value planted somewhere. */
const nearlyValid: fc.Arbitrary<unknown> = fc
  .tuple(validPolicy, fc.option(fc.tuple(fc.constantFrom(...PATHS), hostile), { freq: 4 }))
  .map(([policy, planted]) => (planted === null ? policy : plant(policy, planted[0], planted[1])));

describe('policy properties', () => {
  it('answers any JSON value with a policy or a GuardrailValidationError', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        policyOrRefusal(() => validatePolicy(value));
      }),
      { numRuns: 500 },
    );
  });

  it('answers any parsed JSON text, __proto__ keys included, with a policy or a GuardrailValidationError', () => {
    fc.assert(
      fc.property(fc.json(), (text) => {
        policyOrRefusal(() => validatePolicy(JSON.parse(text)));
      }),
      { numRuns: 300 },
    );
  });

  it('answers any text with a policy or a GuardrailValidationError', () => {
    fc.assert(
      fc.property(fc.string(), fc.constantFrom('yaml' as const, 'json' as const), (text, format) => {
        policyOrRefusal(() => parsePolicy(text, { format }));
      }),
      { numRuns: 500 },
    );
  });

  it('accepts every valid policy, unchanged', () => {
    fc.assert(
      fc.property(validPolicy, (value) => {
        expect(validatePolicy(value)).toEqual(value);
      }),
      { numRuns: 300 },
    );
  });

  it('reads back a valid policy through JSON and through YAML', () => {
    fc.assert(
      fc.property(validPolicy, (value) => {
        const text = JSON.stringify(value);
        expect(parsePolicy(text, { format: 'json' })).toEqual(value);
        expect(parsePolicy(text)).toEqual(value);
      }),
      { numRuns: 200 },
    );
  });

  it('answers a policy with a planted bad value with a policy or a GuardrailValidationError', () => {
    fc.assert(
      fc.property(nearlyValid, (value) => {
        policyOrRefusal(() => validatePolicy(value));
      }),
      { numRuns: 500 },
    );
  });

  it('accepts a policy only when its guardrails can configure a plan', () => {
    fc.assert(
      fc.property(nearlyValid, (value) => {
        const result = policyOrRefusal(() => validatePolicy(value));
        if (!(result instanceof GuardrailValidationError)) {
          expect(() => AutonomyGuardrails.create(policyToGuardrailsInit(result))).not.toThrow();
        }
      }),
      { numRuns: 500 },
    );
  });
});
