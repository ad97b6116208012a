import { describe, expect, it } from 'vitest';
import { MAX_AMOUNT } from '../../src/money.js';
import { MAX_APPROVAL_TTL_SECONDS, validatePolicy } from '../../src/policy/index.js';
import { thrown } from '../support/thrown.js';

/** The field and message of the GuardrailValidationError that `fn` throws. */
function refusal(fn: () => unknown): { field: string | undefined; message: string } {
  const e = thrown(fn);
  return { field: e.field, message: e.message };
}

/** `{ version: 1, ...rest }` */
const policy = (rest: Record<string, unknown>): Record<string, unknown> => ({ version: 1, ...rest });
const guardrails = (g: Record<string, unknown>) => policy({ guardrails: g });
const actorLimits = (a: Record<string, unknown>) => guardrails({ actor_limits: a });
const shell = (rule: unknown) => policy({ tools: { shell: rule } });

const GUARDRAIL_KEYS = 'max_steps, tool_budget, required_confirmations, max_wall_clock_seconds, actor_limits';

describe('validatePolicy', () => {
  describe('accepting', () => {
    it('accepts a policy holding only its version', () => {
      expect(validatePolicy({ version: 1 })).toEqual({ version: 1 });
    });

    it('accepts null as "no limit"', () => {
      const value = guardrails({
        max_steps: null,
        tool_budget: null,
        max_wall_clock_seconds: null,
        actor_limits: { max_tool_calls_per_invocation: null, max_retries_per_failure: null },
      });
      expect(validatePolicy(value)).toEqual(value);
    });

    it('accepts zero retries and a zero budget', () => {
      const value = guardrails({ tool_budget: 0, actor_limits: { max_retries_per_failure: 0 } });
      expect(validatePolicy(value)).toEqual(value);
    });

    it('leaves absent keys absent rather than undefined', () => {
      const result = validatePolicy(guardrails({ max_steps: 3 }));
      expect(Object.keys(result.guardrails ?? {})).toEqual(['max_steps']);
    });

    it('keeps operation names as written', () => {
      const result = validatePolicy(guardrails({ required_confirmations: ['  ＤＥＰＬＯＹ '] }));
      expect(result.guardrails?.required_confirmations).toEqual(['  ＤＥＰＬＯＹ ']);
    });

    it('turns -0 into 0', () => {
      expect(Object.is(validatePolicy(shell({ cost_per_call: -0 })).tools?.['shell']?.cost_per_call, 0)).toBe(
        true,
      );
    });

    it('accepts its own output', () => {
      const first = validatePolicy(policy({ tools: { constructor: { max_calls_per_plan: 1 } } }));
      expect(validatePolicy(first)).toEqual(first);
    });

    it('treats a tool named constructor as an ordinary tool', () => {
      const result = validatePolicy(policy({ tools: { constructor: { max_calls_per_plan: 2 } } }));
      expect(Object.keys(result.tools ?? {})).toEqual(['constructor']);
      expect(result.tools?.['toString']).toBeUndefined();
    });
  });

  describe('the result', () => {
    it('is deeply frozen', () => {
      const result = validatePolicy(
        policy({
          guardrails: { required_confirmations: ['deploy'], actor_limits: {} },
          approvals: {},
          tools: { shell: {} },
        }),
      );
      expect(
        [
          result,
          result.guardrails,
          result.guardrails?.required_confirmations,
          result.guardrails?.actor_limits,
          result.approvals,
          result.tools,
          result.tools?.['shell'],
        ].map((v) => v !== undefined && Object.isFrozen(v)),
      ).toEqual([true, true, true, true, true, true, true]);
    });

    it('shares nothing with the input', () => {
      const input = { version: 1, guardrails: { required_confirmations: ['deploy'] } };
      const result = validatePolicy(input);
      input.guardrails.required_confirmations.push('pay');
      expect(result.guardrails?.required_confirmations).toEqual(['deploy']);
    });
  });

  describe('refusing a bad value, naming its path', () => {
    it.each([
      [guardrails({ max_steps: 0 }), 'guardrails.max_steps', 'must be an integer >= 1, got 0'],
      [guardrails({ max_steps: 1.5 }), 'guardrails.max_steps', 'must be an integer >= 1, got 1.5'],
      [guardrails({ max_steps: '5' }), 'guardrails.max_steps', 'must be an integer >= 1, got "5"'],
      [guardrails({ max_steps: 2 ** 53 }), 'guardrails.max_steps', `must be an integer >= 1, got ${2 ** 53}`],
      [guardrails({ tool_budget: -1 }), 'guardrails.tool_budget', 'must be a finite number >= 0, got -1'],
      [
        guardrails({ tool_budget: Infinity }),
        'guardrails.tool_budget',
        'must be a finite number >= 0, got Infinity',
      ],
      [guardrails({ tool_budget: NaN }), 'guardrails.tool_budget', 'must be a finite number >= 0, got NaN'],
      [
        guardrails({ tool_budget: MAX_AMOUNT + 1 }),
        'guardrails.tool_budget',
        `must be at most ${MAX_AMOUNT}, got ${MAX_AMOUNT + 1}`,
      ],
      [
        guardrails({ required_confirmations: 'deploy' }),
        'guardrails.required_confirmations',
        'must be an array of strings, got "deploy"',
      ],
      [
        guardrails({ required_confirmations: ['deploy', 5] }),
        'guardrails.required_confirmations[1]',
        'must be a string, got 5',
      ],
      [
        guardrails({ max_wall_clock_seconds: 0 }),
        'guardrails.max_wall_clock_seconds',
        'must be a finite number > 0, got 0',
      ],
      [guardrails({ actor_limits: 5 }), 'guardrails.actor_limits', 'must be an object, got 5'],
      [
        actorLimits({ max_tool_calls_per_invocation: 0 }),
        'guardrails.actor_limits.max_tool_calls_per_invocation',
        'must be an integer >= 1, got 0',
      ],
      [
        actorLimits({ max_retries_per_failure: -1 }),
        'guardrails.actor_limits.max_retries_per_failure',
        'must be an integer >= 0, got -1',
      ],
      [policy({ guardrails: null }), 'guardrails', 'must be an object, got null'],
      [policy({ approvals: [] }), 'approvals', 'must be an object, got an array of 0'],
      [
        policy({ approvals: { ttl_seconds: 0 } }),
        'approvals.ttl_seconds',
        'must be a finite number > 0, got 0',
      ],
      [
        policy({ approvals: { ttl_seconds: null } }),
        'approvals.ttl_seconds',
        'must be a finite number > 0, got null',
      ],
      [
        policy({ approvals: { ttl_seconds: 1e300 } }),
        'approvals.ttl_seconds',
        `must be at most ${MAX_APPROVAL_TTL_SECONDS}, got 1e+300`,
      ],
      [policy({ tools: ['shell'] }), 'tools', 'must be an object, got an array of 1'],
      [shell(null), 'tools.shell', 'must be an object, got null'],
      [shell({ max_calls_per_plan: 0 }), 'tools.shell.max_calls_per_plan', 'must be an integer >= 1, got 0'],
      [
        shell({ max_calls_per_plan: null }),
        'tools.shell.max_calls_per_plan',
        'must be an integer >= 1, got null',
      ],
      [shell({ cost_per_call: -1 }), 'tools.shell.cost_per_call', 'must be a finite number >= 0, got -1'],
      [
        shell({ requires_confirmation: 'true' }),
        'tools.shell.requires_confirmation',
        'must be a boolean, got "true"',
      ],
      [{ version: 2 }, 'version', 'must be 1 (the version this release reads), got 2'],
      [{ version: '1' }, 'version', 'must be 1 (the version this release reads), got "1"'],
    ])('refuses %j at %s', (value, field, rule) => {
      expect(refusal(() => validatePolicy(value))).toEqual({ field, message: `${field} ${rule}` });
    });

    it('refuses a missing version', () => {
      expect(refusal(() => validatePolicy({ guardrails: {} }))).toEqual({
        field: 'version',
        message: 'version is missing',
      });
    });

    it.each([null, 'version: 1', [], 1])('refuses %j as a whole', (value) => {
      expect(thrown(() => validatePolicy(value)).field).toBe('policy');
    });
  });

  describe('refusing a bad tool name', () => {
    const rule = 'a string of 1 to 128 characters, not only space, without control or invisible characters';

    it.each([
      ['an empty name', ''],
      ['a name that is only space', '   '],
      ['a name of 129 characters', 'x'.repeat(129)],
      ['a control character', 'sh\u0007ell'],
      ['a zero-width space', 'sh\u200bell'],
      ['a soft hyphen', 'sh\u00adell'],
    ])('refuses %s', (_what, name) => {
      expect(refusal(() => validatePolicy(policy({ tools: { [name]: {} } })))).toEqual({
        field: 'tools',
        message: expect.stringContaining(`tools key must be a tool name: ${rule}, got `),
      });
    });

    it('refuses a name holding a lone surrogate', () => {
      expect(refusal(() => validatePolicy(policy({ tools: { ['sh\udc00ell']: {} } })))).toEqual({
        field: 'tools',
        message:
          'tools key must be a tool name: a string of well-formed Unicode, without a lone surrogate, got "sh\\udc00ell"',
      });
    });

    it('accepts a name of 128 characters', () => {
      const name = 'x'.repeat(128);
      expect(Object.keys(validatePolicy(policy({ tools: { [name]: {} } })).tools ?? {})).toEqual([name]);
    });

    it('refuses __proto__ as a tool name', () => {
      const value: unknown = JSON.parse('{"version": 1, "tools": {"__proto__": {"cost_per_call": 1}}}');
      expect(refusal(() => validatePolicy(value))).toEqual({
        field: 'tools',
        message: 'tools must not have a "__proto__" key',
      });
    });
  });

  describe('applying the guardrails’ own rules', () => {
    it('refuses an operation name holding an invisible character', () => {
      expect(refusal(() => validatePolicy(guardrails({ required_confirmations: ['de\u200bploy'] })))).toEqual(
        {
          field: 'guardrails.required_confirmations[0]',
          message:
            'guardrails.required_confirmations[0] must not contain control or invisible format characters, got "de\u200bploy"',
        },
      );
    });

    it('refuses an operation name holding a lone surrogate', () => {
      expect(refusal(() => validatePolicy(guardrails({ required_confirmations: ['dep\udc00loy'] })))).toEqual(
        {
          field: 'guardrails.required_confirmations[0]',
          message:
            'guardrails.required_confirmations[0] must be well-formed Unicode, but holds a lone surrogate (\\udc00 at index 3), got "dep\\udc00loy"',
        },
      );
    });

    it('refuses an operation name of only spaces', () => {
      expect(refusal(() => validatePolicy(guardrails({ required_confirmations: ['  '] })))).toEqual({
        field: 'guardrails.required_confirmations[0]',
        message: 'guardrails.required_confirmations[0] must not be empty, got "  "',
      });
    });

    it('keeps the guardrails’ error as the cause', () => {
      const e = thrown(() => validatePolicy(guardrails({ required_confirmations: ['  '] })));
      expect((e.cause as { field?: unknown }).field).toBe('required_confirmations[0]');
    });

    it('starts the message with the source when one is given', () => {
      const e = thrown(() =>
        validatePolicy(guardrails({ required_confirmations: ['  '] }), { source: 'leash.yaml' }),
      );
      expect(e.message).toBe('leash.yaml: guardrails.required_confirmations[0] must not be empty, got "  "');
    });
  });

  describe('refusing unknown keys', () => {
    it.each([
      [
        { version: 1, gaurdrails: {} },
        'gaurdrails',
        'version, guardrails, approvals, tools, models, unpriced_models, mcp, budgets, notify',
      ],
      [guardrails({ max_step: 5 }), 'guardrails.max_step', GUARDRAIL_KEYS],
      [
        actorLimits({ max_retries: 1 }),
        'guardrails.actor_limits.max_retries',
        'max_tool_calls_per_invocation, max_retries_per_failure',
      ],
      [
        shell({ max_calls: 5 }),
        'tools.shell.max_calls',
        'max_calls_per_plan, cost_per_call, requires_confirmation',
      ],
    ])('refuses %j', (value, field, known) => {
      expect(refusal(() => validatePolicy(value))).toEqual({
        field,
        message: `${field} is not a known field (known: ${known})`,
      });
    });
  });

  describe('refusing runtime state', () => {
    it.each([
      ['step_count', 3],
      ['budget_spent', 1.5],
      ['start_time', '2026-11-30T10:00:00.000Z'],
    ])('refuses %s', (key, value) => {
      expect(refusal(() => validatePolicy(guardrails({ [key]: value })))).toEqual({
        field: `guardrails.${key}`,
        message: `guardrails.${key} is not a known field (known: ${GUARDRAIL_KEYS})`,
      });
    });
  });

  describe('refusing values that are not plain data', () => {
    it('refuses a Date where an object belongs', () => {
      expect(refusal(() => validatePolicy(policy({ guardrails: new Date(0) })))).toEqual({
        field: 'guardrails',
        message:
          'guardrails must be plain data (an object, array, string, number, boolean or null), got a Date',
      });
    });

    it('refuses a Map where an object belongs', () => {
      expect(thrown(() => validatePolicy(policy({ tools: new Map([['shell', {}]]) }))).field).toBe('tools');
    });

    it('refuses an object whose fields are inherited', () => {
      expect(thrown(() => validatePolicy(Object.create({ version: 1 }))).field).toBe('policy');
    });

    it('refuses a value whose getter throws, keeping the cause', () => {
      const boom = new Error('boom');
      const value = {
        version: 1,
        get guardrails(): unknown {
          throw boom;
        },
      };
      const e = thrown(() => validatePolicy(value));
      expect({ field: e.field, message: e.message, cause: e.cause }).toEqual({
        field: 'policy',
        message: 'policy could not be read: boom',
        cause: boom,
      });
    });

    it('accepts an object without a prototype', () => {
      const value = Object.assign(Object.create(null) as object, { version: 1 });
      expect(validatePolicy(value)).toEqual({ version: 1 });
    });
  });
});
