import { describe, expect, it } from 'vitest';
import {
  AutonomyGuardrails,
  GuardrailValidationError,
  MAX_AMOUNT,
  type GuardCheck,
  type GuardrailsInit,
} from '../../src/index.js';
import { thrown } from '../support/thrown.js';

const START = '2026-11-30T10:00:00.000Z';
const START_MS = Date.parse(START);

/** Asserts `init` is refused with exactly this field and message. */
function expectRefused(init: unknown, field: string, message: string): void {
  const e = thrown(() => AutonomyGuardrails.create(init as GuardrailsInit));
  expect({ field: e.field, message: e.message }).toEqual({ field, message });
}

/** The parts of a check other than its free-text reason. */
function outcome(check: GuardCheck): Omit<GuardCheck, 'reason'> {
  const { reason: _reason, ...rest } = check;
  return rest;
}

/** Overwrites a readonly field, bypassing validation, the way corrupted state could arrive. */
function corruptStartTime(g: AutonomyGuardrails, value: unknown): void {
  (g as unknown as { startTime: unknown }).startTime = value;
}

describe('AutonomyGuardrails.create', () => {
  describe('defaults', () => {
    const g = AutonomyGuardrails.create();

    it('has no step limit', () => {
      expect(g.maxSteps).toBeNull();
    });

    it('has no tool budget', () => {
      expect(g.toolBudget).toBeNull();
      expect(g.toolBudgetMicros).toBeNull();
    });

    it('requires no confirmations', () => {
      expect(g.requiredConfirmations).toEqual([]);
    });

    it('has no wall-clock limit', () => {
      expect(g.maxWallClockSeconds).toBeNull();
    });

    it('has not started', () => {
      expect(g.startTime).toBeNull();
    });

    it('has unlimited actor limits', () => {
      expect(g.actorLimits.toJSON()).toEqual({
        max_tool_calls_per_invocation: null,
        max_retries_per_failure: null,
      });
    });

    it('has taken no steps', () => {
      expect(g.stepCount).toBe(0);
    });

    it('has spent nothing', () => {
      expect(g.budgetSpent).toBe(0);
      expect(g.budgetSpentMicros).toBe(0);
    });

    it('treats an empty object like no argument', () => {
      expect(AutonomyGuardrails.create({}).toJSON()).toEqual(g.toJSON());
    });

    it('treats explicit nulls like absent limits', () => {
      const explicit = AutonomyGuardrails.create({
        maxSteps: null,
        toolBudget: null,
        maxWallClockSeconds: null,
        startTime: null,
      });
      expect(explicit.toJSON()).toEqual(g.toJSON());
    });
  });

  it('keeps every field it is given', () => {
    const g = AutonomyGuardrails.create({
      maxSteps: 5,
      toolBudget: 10,
      requiredConfirmations: ['deploy', 'delete'],
      maxWallClockSeconds: 60,
      startTime: START,
      actorLimits: { maxToolCallsPerInvocation: 3, maxRetriesPerFailure: 2 },
      stepCount: 1,
      budgetSpent: 2.5,
    });
    expect(g.maxSteps).toBe(5);
    expect(g.toolBudget).toBe(10);
    expect(g.requiredConfirmations).toEqual(['deploy', 'delete']);
    expect(g.maxWallClockSeconds).toBe(60);
    expect(g.startTime).toBe(START);
    expect(g.actorLimits.maxToolCallsPerInvocation).toBe(3);
    expect(g.actorLimits.maxRetriesPerFailure).toBe(2);
    expect(g.stepCount).toBe(1);
    expect(g.budgetSpent).toBe(2.5);
  });

  it('holds the budget in micro-units', () => {
    expect(AutonomyGuardrails.create({ toolBudget: 0.3 }).toolBudgetMicros).toBe(300_000);
  });

  it('rounds a sub-micro budget down', () => {
    expect(AutonomyGuardrails.create({ toolBudget: 0.0000019 }).toolBudgetMicros).toBe(1);
  });

  it('rounds a sub-micro amount already spent up', () => {
    expect(AutonomyGuardrails.create({ budgetSpent: 0.0000011 }).budgetSpentMicros).toBe(2);
  });

  it('accepts a budget of zero', () => {
    expect(AutonomyGuardrails.create({ toolBudget: 0 }).toolBudget).toBe(0);
  });

  it('accepts a fractional wall-clock limit', () => {
    expect(AutonomyGuardrails.create({ maxWallClockSeconds: 0.5 }).maxWallClockSeconds).toBe(0.5);
  });

  it('normalizes required confirmations', () => {
    const g = AutonomyGuardrails.create({ requiredConfirmations: [' Deploy ', 'ＤＥＬＥＴＥ'] });
    expect(g.requiredConfirmations).toEqual(['deploy', 'delete']);
  });

  it('drops required confirmations that normalize to the same name', () => {
    const g = AutonomyGuardrails.create({ requiredConfirmations: ['deploy', 'DEPLOY', 'ｄｅｐｌｏｙ'] });
    expect(g.requiredConfirmations).toEqual(['deploy']);
  });

  it('freezes the required confirmations', () => {
    expect(
      Object.isFrozen(AutonomyGuardrails.create({ requiredConfirmations: ['deploy'] }).requiredConfirmations),
    ).toBe(true);
  });

  it('does not share the caller’s confirmations array', () => {
    const names = ['deploy'];
    const g = AutonomyGuardrails.create({ requiredConfirmations: names });
    names.push('delete');
    expect(g.checkConfirmation('delete').allowed).toBe(true);
  });

  it('stores the start time in canonical UTC form', () => {
    expect(AutonomyGuardrails.create({ startTime: '2026-11-30T11:00:00+01:00' }).startTime).toBe(START);
  });

  it('accepts counters already beyond their limits', () => {
    const g = AutonomyGuardrails.create({ maxSteps: 2, stepCount: 3, toolBudget: 1, budgetSpent: 2 });
    expect(g.stepCount).toBe(3);
    expect(g.budgetSpent).toBe(2);
  });
});

describe('AutonomyGuardrails.create validation', () => {
  it('refuses max_steps 0', () => {
    expectRefused({ maxSteps: 0 }, 'max_steps', 'max_steps must be an integer >= 1, got 0');
  });

  it('refuses a negative max_steps', () => {
    expectRefused({ maxSteps: -3 }, 'max_steps', 'max_steps must be an integer >= 1, got -3');
  });

  it('refuses a fractional max_steps', () => {
    expectRefused({ maxSteps: 2.5 }, 'max_steps', 'max_steps must be an integer >= 1, got 2.5');
  });

  it('refuses max_steps NaN', () => {
    expectRefused({ maxSteps: NaN }, 'max_steps', 'max_steps must be an integer >= 1, got NaN');
  });

  it('refuses max_steps Infinity', () => {
    expectRefused({ maxSteps: Infinity }, 'max_steps', 'max_steps must be an integer >= 1, got Infinity');
  });

  it('refuses max_steps given as a string', () => {
    expectRefused({ maxSteps: '5' }, 'max_steps', 'max_steps must be an integer >= 1, got "5"');
  });

  it('refuses max_steps beyond the safe integers', () => {
    expectRefused({ maxSteps: 2 ** 53 }, 'max_steps', `max_steps must be an integer >= 1, got ${2 ** 53}`);
  });

  it('refuses a negative tool_budget', () => {
    expectRefused({ toolBudget: -1 }, 'tool_budget', 'tool_budget must be a finite number >= 0, got -1');
  });

  it('refuses tool_budget NaN', () => {
    expectRefused({ toolBudget: NaN }, 'tool_budget', 'tool_budget must be a finite number >= 0, got NaN');
  });

  it('refuses tool_budget Infinity', () => {
    expectRefused(
      { toolBudget: Infinity },
      'tool_budget',
      'tool_budget must be a finite number >= 0, got Infinity',
    );
  });

  it('refuses a tool_budget too large to hold exactly', () => {
    expectRefused(
      { toolBudget: 1e12 },
      'tool_budget',
      `tool_budget must be at most ${MAX_AMOUNT}, got 1000000000000`,
    );
  });

  it('refuses required_confirmations that is not an array', () => {
    expectRefused(
      { requiredConfirmations: 'deploy' },
      'required_confirmations',
      'required_confirmations must be an array of strings, got "deploy"',
    );
  });

  it('refuses a required confirmation that is not a string, naming its index', () => {
    expectRefused(
      { requiredConfirmations: ['deploy', 7] },
      'required_confirmations[1]',
      'required_confirmations[1] must be a string, got 7',
    );
  });

  it('refuses an empty required confirmation', () => {
    expectRefused(
      { requiredConfirmations: [' '] },
      'required_confirmations[0]',
      'required_confirmations[0] must not be empty, got " "',
    );
  });

  it('refuses a required confirmation with an invisible character', () => {
    expectRefused(
      { requiredConfirmations: ['de\u200bploy'] },
      'required_confirmations[0]',
      'required_confirmations[0] must not contain control or invisible format characters, got "de\u200bploy"',
    );
  });

  it('refuses a required confirmation holding a lone surrogate, showing it escaped', () => {
    expectRefused(
      { requiredConfirmations: ['deploy', 'dep\udc00loy'] },
      'required_confirmations[1]',
      'required_confirmations[1] must be well-formed Unicode, but holds a lone surrogate (\\udc00 at index 3), got "dep\\udc00loy"',
    );
  });

  it('refuses a hole in the required confirmations', () => {
    // eslint-disable-next-line no-sparse-arrays
    const names = [, 'deploy'];
    expectRefused(
      { requiredConfirmations: names },
      'required_confirmations[0]',
      'required_confirmations[0] must be a string, got undefined',
    );
  });

  it('refuses max_wall_clock_seconds 0', () => {
    expectRefused(
      { maxWallClockSeconds: 0 },
      'max_wall_clock_seconds',
      'max_wall_clock_seconds must be a finite number > 0, got 0',
    );
  });

  it('refuses a negative max_wall_clock_seconds', () => {
    expectRefused(
      { maxWallClockSeconds: -60 },
      'max_wall_clock_seconds',
      'max_wall_clock_seconds must be a finite number > 0, got -60',
    );
  });

  it('refuses max_wall_clock_seconds Infinity', () => {
    expectRefused(
      { maxWallClockSeconds: Infinity },
      'max_wall_clock_seconds',
      'max_wall_clock_seconds must be a finite number > 0, got Infinity',
    );
  });

  it('refuses a start_time without a zone', () => {
    expectRefused(
      { startTime: '2026-11-30T10:00:00' },
      'start_time',
      'start_time must be an ISO-8601 date-time with a time zone, like "2026-11-30T10:00:00Z", got "2026-11-30T10:00:00"',
    );
  });

  it('refuses an impossible start_time', () => {
    expectRefused(
      { startTime: '2026-02-30T10:00:00Z' },
      'start_time',
      'start_time must be an ISO-8601 date-time with a time zone, like "2026-11-30T10:00:00Z", got "2026-02-30T10:00:00Z"',
    );
  });

  it('refuses a start_time given as epoch milliseconds', () => {
    expectRefused(
      { startTime: START_MS },
      'start_time',
      `start_time must be an ISO-8601 date-time with a time zone, like "2026-11-30T10:00:00Z", got ${START_MS}`,
    );
  });

  it('refuses a bad actor limit, naming it under actor_limits', () => {
    expectRefused(
      { actorLimits: { maxToolCallsPerInvocation: 0 } },
      'actor_limits.max_tool_calls_per_invocation',
      'actor_limits.max_tool_calls_per_invocation must be an integer >= 1, got 0',
    );
  });

  it('refuses a negative retry limit, naming it under actor_limits', () => {
    expectRefused(
      { actorLimits: { maxRetriesPerFailure: -1 } },
      'actor_limits.max_retries_per_failure',
      'actor_limits.max_retries_per_failure must be an integer >= 0, got -1',
    );
  });

  it('refuses actor limits that are not an object', () => {
    expectRefused({ actorLimits: 3 }, 'actor_limits', 'actor_limits must be an object, got 3');
  });

  it('refuses an unknown key inside actor limits', () => {
    const e = thrown(() =>
      AutonomyGuardrails.create({ actorLimits: { maxRetries: 1 } } as unknown as GuardrailsInit),
    );
    expect(e.field).toBe('actor_limits.maxRetries');
  });

  it('refuses a negative step_count', () => {
    expectRefused({ stepCount: -1 }, 'step_count', 'step_count must be an integer >= 0, got -1');
  });

  it('refuses a null step_count', () => {
    expectRefused({ stepCount: null }, 'step_count', 'step_count must be an integer >= 0, got null');
  });

  it('refuses a fractional step_count', () => {
    expectRefused({ stepCount: 0.5 }, 'step_count', 'step_count must be an integer >= 0, got 0.5');
  });

  it('refuses a negative budget_spent', () => {
    expectRefused(
      { budgetSpent: -0.5 },
      'budget_spent',
      'budget_spent must be a finite number >= 0, got -0.5',
    );
  });

  it('refuses a null budget_spent', () => {
    expectRefused(
      { budgetSpent: null },
      'budget_spent',
      'budget_spent must be a finite number >= 0, got null',
    );
  });

  it('refuses an unknown key, naming it and the known ones', () => {
    expectRefused(
      { maxStep: 5 },
      'maxStep',
      'maxStep is not a known field (known: maxSteps, toolBudget, requiredConfirmations, maxWallClockSeconds, startTime, actorLimits, stepCount, budgetSpent, labels)',
    );
  });

  it('refuses snake_case keys in the camelCase API', () => {
    const e = thrown(() => AutonomyGuardrails.create({ max_steps: 5 } as unknown as GuardrailsInit));
    expect(e.field).toBe('max_steps');
    expect(e.message).toContain('max_steps is not a known field');
  });

  it('refuses an init that is not an object', () => {
    expectRefused(5, 'init', 'init must be an object, got 5');
  });

  it('refuses a null init', () => {
    expectRefused(null, 'init', 'init must be an object, got null');
  });

  it('refuses an array init', () => {
    expectRefused([], 'init', 'init must be an object, got an array of 0');
  });

  it('refuses a class instance as init', () => {
    expectRefused(new Date(0), 'init', 'init must be an object, got an object');
  });

  it('throws an error recognisable as a GuardrailValidationError', () => {
    const e = thrown(() => AutonomyGuardrails.create({ maxSteps: 0 }));
    expect(e.code).toBe('GUARDRAIL_VALIDATION');
    expect(e.name).toBe('GuardrailValidationError');
  });
});

describe('checkStepLimit', () => {
  const g = AutonomyGuardrails.create({ maxSteps: 5 });

  it('allows a step below max_steps', () => {
    expect(outcome(g.checkStepLimit(4))).toEqual({
      allowed: true,
      result: 'allowed',
      eventType: 'step_allowed',
      guardName: 'step_limit',
      limit: 5,
      observed: 4,
    });
  });

  it('denies a step at max_steps', () => {
    expect(outcome(g.checkStepLimit(5))).toEqual({
      allowed: false,
      result: 'denied',
      eventType: 'step_blocked',
      guardName: 'step_limit',
      limit: 5,
      observed: 5,
    });
  });

  it('denies a step beyond max_steps', () => {
    expect(g.checkStepLimit(6).eventType).toBe('step_blocked');
  });

  it('allows step 0 with max_steps 1', () => {
    expect(AutonomyGuardrails.create({ maxSteps: 1 }).checkStepLimit(0).allowed).toBe(true);
  });

  it('denies step 1 with max_steps 1', () => {
    expect(AutonomyGuardrails.create({ maxSteps: 1 }).checkStepLimit(1).allowed).toBe(false);
  });

  it('allows any step without a step limit, with a null limit', () => {
    expect(outcome(AutonomyGuardrails.create().checkStepLimit(1_000_000))).toEqual({
      allowed: true,
      result: 'allowed',
      eventType: 'step_allowed',
      guardName: 'step_limit',
      limit: null,
      observed: 1_000_000,
    });
  });

  it('gives a reason naming the step and the limit', () => {
    expect(g.checkStepLimit(5).reason).toBe('step 5 reaches max_steps 5');
  });

  it('writes the same reason each time it is read', () => {
    const check = g.checkStepLimit(5);
    expect(check.reason).toBe(check.reason);
    expect(JSON.parse(JSON.stringify(check))).toMatchObject({ reason: 'step 5 reaches max_steps 5' });
  });

  it('refuses a negative step', () => {
    const e = thrown(() => g.checkStepLimit(-1));
    expect(e.field).toBe('step');
    expect(e.message).toBe('step must be an integer >= 0, got -1');
  });

  it('refuses a fractional step', () => {
    expect(() => g.checkStepLimit(1.5)).toThrow('step must be an integer >= 0, got 1.5');
  });

  it('refuses a NaN step', () => {
    expect(() => g.checkStepLimit(NaN)).toThrow(GuardrailValidationError);
  });
});

describe('checkToolBudget', () => {
  it('allows a cost that fits within the budget', () => {
    const g = AutonomyGuardrails.create({ toolBudget: 10, budgetSpent: 2 });
    expect(outcome(g.checkToolBudget(3))).toEqual({
      allowed: true,
      result: 'allowed',
      eventType: 'budget_allowed',
      guardName: 'tool_budget',
      limit: 10,
      observed: 3,
    });
  });

  it('allows a cost that brings spending exactly to the budget', () => {
    const g = AutonomyGuardrails.create({ toolBudget: 10, budgetSpent: 2 });
    expect(g.checkToolBudget(8).allowed).toBe(true);
  });

  it('denies a cost one micro-unit over the budget', () => {
    const g = AutonomyGuardrails.create({ toolBudget: 10, budgetSpent: 2 });
    expect(outcome(g.checkToolBudget(8.000001))).toEqual({
      allowed: false,
      result: 'denied',
      eventType: 'budget_blocked',
      guardName: 'tool_budget',
      limit: 10,
      observed: 8.000001,
    });
  });

  it('denies a cost larger than the whole budget', () => {
    expect(AutonomyGuardrails.create({ maxSteps: 5, toolBudget: 10 }).checkToolBudget(12).allowed).toBe(
      false,
    );
  });

  it('allows a cost equal to a large budget with six decimals', () => {
    expect(AutonomyGuardrails.create({ toolBudget: 66036.13539 }).checkToolBudget(66036.13539).allowed).toBe(
      true,
    );
  });

  it('allows a zero cost on an exhausted budget', () => {
    expect(AutonomyGuardrails.create({ toolBudget: 1, budgetSpent: 1 }).checkToolBudget(0).allowed).toBe(
      true,
    );
  });

  it('denies any positive cost on an exhausted budget', () => {
    expect(
      AutonomyGuardrails.create({ toolBudget: 1, budgetSpent: 1 }).checkToolBudget(0.000001).allowed,
    ).toBe(false);
  });

  it('allows a zero cost with a budget of zero', () => {
    expect(AutonomyGuardrails.create({ toolBudget: 0 }).checkToolBudget(0).allowed).toBe(true);
  });

  it('denies a positive cost with a budget of zero', () => {
    expect(AutonomyGuardrails.create({ toolBudget: 0 }).checkToolBudget(0.01).allowed).toBe(false);
  });

  it('allows any cost without a budget, with a null limit', () => {
    expect(outcome(AutonomyGuardrails.create().checkToolBudget(1e9))).toEqual({
      allowed: true,
      result: 'allowed',
      eventType: 'budget_allowed',
      guardName: 'tool_budget',
      limit: null,
      observed: 1e9,
    });
  });

  it('rounds a sub-micro cost up, so it cannot slip under the budget', () => {
    // The budget rounds down to 1 micro-unit and the cost up to 2.
    const g = AutonomyGuardrails.create({ toolBudget: 0.0000015 });
    expect(g.checkToolBudget(0.0000015).allowed).toBe(false);
  });

  it('lets a budget of 0.3 admit 0.1 then 0.2', () => {
    const g = AutonomyGuardrails.create({ toolBudget: 0.3 });
    expect(g.checkToolBudget(0.1).allowed).toBe(true);
    g.recordCost(0.1);
    expect(g.checkToolBudget(0.2).allowed).toBe(true);
  });

  it('admits nothing more after 0.1 and 0.2 are spent from a budget of 0.3', () => {
    const g = AutonomyGuardrails.create({ toolBudget: 0.3 });
    g.recordCost(0.1);
    g.recordCost(0.2);
    expect(g.checkToolBudget(0.000001).allowed).toBe(false);
  });

  it('does not spend', () => {
    const g = AutonomyGuardrails.create({ toolBudget: 10 });
    g.checkToolBudget(4);
    expect(g.budgetSpent).toBe(0);
  });

  it('gives a reason naming the cost, the total after it and the budget', () => {
    const g = AutonomyGuardrails.create({ toolBudget: 10, budgetSpent: 5 });
    expect(g.checkToolBudget(6).reason).toBe('cost 6 would bring spending to 11, over tool_budget 10');
  });

  it('refuses a negative cost', () => {
    const e = thrown(() => AutonomyGuardrails.create({ toolBudget: 10 }).checkToolBudget(-1));
    expect(e.field).toBe('cost');
    expect(e.message).toBe('cost must be a finite number >= 0, got -1');
  });

  it('refuses a NaN cost', () => {
    expect(() => AutonomyGuardrails.create({ toolBudget: 10 }).checkToolBudget(NaN)).toThrow(
      'cost must be a finite number >= 0, got NaN',
    );
  });

  it('refuses an infinite cost even without a budget', () => {
    expect(() => AutonomyGuardrails.create().checkToolBudget(Infinity)).toThrow(GuardrailValidationError);
  });
});

describe('checkToolBudgetMicros', () => {
  it('compares an amount already in micro-units', () => {
    const g = AutonomyGuardrails.create({ toolBudget: 1 });
    expect(g.checkToolBudgetMicros(1_000_000).allowed).toBe(true);
    expect(g.checkToolBudgetMicros(1_000_001).allowed).toBe(false);
  });

  it('refuses a negative amount', () => {
    expect(() => AutonomyGuardrails.create({ toolBudget: 1 }).checkToolBudgetMicros(-1)).toThrow(
      GuardrailValidationError,
    );
  });

  it('refuses a fractional amount', () => {
    expect(() => AutonomyGuardrails.create({ toolBudget: 1 }).checkToolBudgetMicros(0.5)).toThrow(
      GuardrailValidationError,
    );
  });
});

describe('checkConfirmation', () => {
  const g = AutonomyGuardrails.create({ requiredConfirmations: ['deploy', 'delete'] });

  it('requires confirmation for a listed operation, as a denial', () => {
    expect(outcome(g.checkConfirmation('deploy'))).toEqual({
      allowed: false,
      result: 'denied',
      eventType: 'confirmation_required',
      guardName: 'confirmation',
      limit: null,
    });
  });

  it('does not require confirmation for an unlisted operation, as an allowance', () => {
    expect(outcome(g.checkConfirmation('read'))).toEqual({
      allowed: true,
      result: 'allowed',
      eventType: 'confirmation_not_required',
      guardName: 'confirmation',
      limit: null,
    });
  });

  it('requires no confirmation when the list is empty', () => {
    expect(AutonomyGuardrails.create().checkConfirmation('deploy').allowed).toBe(true);
  });

  it('matches regardless of case', () => {
    expect(g.checkConfirmation('DEPLOY').eventType).toBe('confirmation_required');
  });

  it('matches a listed name given in upper case', () => {
    const upper = AutonomyGuardrails.create({ requiredConfirmations: ['Deploy', 'DELETE'] });
    expect(upper.checkConfirmation('delete').eventType).toBe('confirmation_required');
  });

  it('matches fullwidth ＤＥＰＬＯＹ to deploy', () => {
    expect(g.checkConfirmation('ＤＥＰＬＯＹ').eventType).toBe('confirmation_required');
  });

  it('matches with surrounding spaces', () => {
    expect(g.checkConfirmation('  deploy ').eventType).toBe('confirmation_required');
  });

  it('does not match a name that merely contains a listed one', () => {
    expect(g.checkConfirmation('deploy-preview').allowed).toBe(true);
  });

  it('refuses an operation hiding a zero-width space rather than calling it not required', () => {
    const e = thrown(() => g.checkConfirmation('de\u200bploy'));
    expect(e.field).toBe('operation');
  });

  it('refuses an operation holding a lone surrogate rather than calling it not required', () => {
    const e = thrown(() => g.checkConfirmation('dep\udc00loy'));
    expect(e.field).toBe('operation');
    expect(e.message).toContain('\\udc00');
  });

  it('refuses an operation with a right-to-left override', () => {
    expect(() => g.checkConfirmation('\u202eyolped')).toThrow(GuardrailValidationError);
  });

  it('refuses an operation with a NUL character', () => {
    expect(() => g.checkConfirmation('deploy\u0000')).toThrow(GuardrailValidationError);
  });

  it('refuses an empty operation', () => {
    expect(() => g.checkConfirmation('')).toThrow('operation must not be empty, got ""');
  });

  it('names the normalized operation in its reason', () => {
    expect(g.checkConfirmation('DEPLOY').reason).toBe('operation "deploy" requires confirmation');
  });

  it('names an operation that does not require confirmation in its reason', () => {
    expect(g.checkConfirmation('read').reason).toBe('operation "read" does not require confirmation');
  });
});

describe('checkWallClock', () => {
  const started = (): AutonomyGuardrails =>
    AutonomyGuardrails.create({ maxWallClockSeconds: 60, startTime: START });

  it('allows without a wall-clock limit, with a null limit', () => {
    expect(outcome(AutonomyGuardrails.create({ startTime: START }).checkWallClock(START_MS + 1e9))).toEqual({
      allowed: true,
      result: 'allowed',
      eventType: 'wall_clock_allowed',
      guardName: 'wall_clock',
      limit: null,
    });
  });

  it('allows a plan with a limit that has not started', () => {
    expect(outcome(AutonomyGuardrails.create({ maxWallClockSeconds: 60 }).checkWallClock(START_MS))).toEqual({
      allowed: true,
      result: 'allowed',
      eventType: 'wall_clock_allowed',
      guardName: 'wall_clock',
      limit: 60,
    });
  });

  it('says in its reason that a plan has not started', () => {
    expect(AutonomyGuardrails.create({ maxWallClockSeconds: 60 }).checkWallClock(START_MS).reason).toContain(
      'not started',
    );
  });

  it('allows while the elapsed time is below the limit', () => {
    expect(outcome(started().checkWallClock(START_MS + 59_999))).toEqual({
      allowed: true,
      result: 'allowed',
      eventType: 'wall_clock_allowed',
      guardName: 'wall_clock',
      limit: 60,
      observed: 59.999,
    });
  });

  it('denies when the elapsed time reaches the limit', () => {
    expect(outcome(started().checkWallClock(START_MS + 60_000))).toEqual({
      allowed: false,
      result: 'denied',
      eventType: 'wall_clock_blocked',
      guardName: 'wall_clock',
      limit: 60,
      observed: 60,
    });
  });

  it('denies when the elapsed time is beyond the limit', () => {
    expect(started().checkWallClock(START_MS + 61_000).eventType).toBe('wall_clock_blocked');
  });

  it('allows at the start instant, observing zero seconds', () => {
    expect(started().checkWallClock(START_MS).observed).toBe(0);
  });

  it('counts a time before the start as zero elapsed', () => {
    const check = started().checkWallClock(START_MS - 5_000);
    expect(check.allowed).toBe(true);
    expect(check.observed).toBe(0);
  });

  it('applies a fractional limit at millisecond precision', () => {
    const g = AutonomyGuardrails.create({ maxWallClockSeconds: 0.5, startTime: START });
    expect(g.checkWallClock(START_MS + 499).allowed).toBe(true);
    expect(g.checkWallClock(START_MS + 500).allowed).toBe(false);
  });

  it('measures from a start time given with an offset', () => {
    const g = AutonomyGuardrails.create({ maxWallClockSeconds: 60, startTime: '2026-11-30T11:00:00+01:00' });
    expect(g.checkWallClock(START_MS + 60_000).allowed).toBe(false);
  });

  it('denies when the start time is malformed (fail closed)', () => {
    const g = AutonomyGuardrails.create({ maxWallClockSeconds: 60 });
    corruptStartTime(g, 'yesterday');
    expect(outcome(g.checkWallClock(START_MS))).toEqual({
      allowed: false,
      result: 'denied',
      eventType: 'wall_clock_blocked',
      guardName: 'wall_clock',
      limit: 60,
    });
  });

  it('names the malformed start time in its reason', () => {
    const g = AutonomyGuardrails.create({ maxWallClockSeconds: 60 });
    corruptStartTime(g, 'yesterday');
    expect(g.checkWallClock(START_MS).reason).toContain('"yesterday"');
  });

  it('denies when the start time is not a string', () => {
    const g = AutonomyGuardrails.create({ maxWallClockSeconds: 60 });
    corruptStartTime(g, START_MS);
    expect(g.checkWallClock(START_MS).allowed).toBe(false);
  });

  it('denies when the start time is undefined', () => {
    const g = AutonomyGuardrails.create({ maxWallClockSeconds: 60 });
    corruptStartTime(g, undefined);
    expect(g.checkWallClock(START_MS).allowed).toBe(false);
  });

  it('denies when a valid start time is corrupted after a first check', () => {
    const g = started();
    expect(g.checkWallClock(START_MS).allowed).toBe(true);
    corruptStartTime(g, '2026-02-30T10:00:00Z');
    expect(g.checkWallClock(START_MS).allowed).toBe(false);
  });

  it('refuses a NaN now', () => {
    const e = thrown(() => started().checkWallClock(NaN));
    expect(e.field).toBe('now');
    expect(e.message).toBe('now must be a finite number of epoch milliseconds, got NaN');
  });

  it('refuses an infinite now even without a limit', () => {
    expect(() => AutonomyGuardrails.create().checkWallClock(Infinity)).toThrow(GuardrailValidationError);
  });
});

describe('elapsedSeconds', () => {
  it('is null before the plan started', () => {
    expect(AutonomyGuardrails.create({ maxWallClockSeconds: 60 }).elapsedSeconds(START_MS)).toBeNull();
  });

  it('counts the seconds since the start', () => {
    expect(AutonomyGuardrails.create({ startTime: START }).elapsedSeconds(START_MS + 90_500)).toBe(90.5);
  });

  it('leaves out the time spent waiting for a person, as the wall-clock guard does', () => {
    const g = AutonomyGuardrails.fromJSON({
      ...AutonomyGuardrails.create({ maxWallClockSeconds: 600, startTime: START }).toJSON(),
      paused_ms: 30_000,
    });
    expect([g.elapsedSeconds(START_MS + 90_000), g.checkWallClock(START_MS + 90_000).observed]).toEqual([
      60, 60,
    ]);
  });
});

describe('checkActorToolCalls', () => {
  const g = AutonomyGuardrails.create({ actorLimits: { maxToolCallsPerInvocation: 3 } });

  it('allows calls below the limit', () => {
    expect(outcome(g.checkActorToolCalls(2))).toEqual({
      allowed: true,
      result: 'allowed',
      eventType: 'actor_tool_calls_allowed',
      guardName: 'actor_tool_calls',
      limit: 3,
      observed: 2,
    });
  });

  it('denies calls at the limit', () => {
    expect(outcome(g.checkActorToolCalls(3))).toEqual({
      allowed: false,
      result: 'denied',
      eventType: 'actor_tool_calls_blocked',
      guardName: 'actor_tool_calls',
      limit: 3,
      observed: 3,
    });
  });

  it('denies calls beyond the limit', () => {
    expect(g.checkActorToolCalls(4).allowed).toBe(false);
  });

  it('allows the first call with a limit of one', () => {
    const one = AutonomyGuardrails.create({ actorLimits: { maxToolCallsPerInvocation: 1 } });
    expect(one.checkActorToolCalls(0).allowed).toBe(true);
  });

  it('allows any number of calls without a limit, with a null limit', () => {
    expect(outcome(AutonomyGuardrails.create().checkActorToolCalls(500))).toEqual({
      allowed: true,
      result: 'allowed',
      eventType: 'actor_tool_calls_allowed',
      guardName: 'actor_tool_calls',
      limit: null,
      observed: 500,
    });
  });

  it('refuses a negative count of calls', () => {
    const e = thrown(() => g.checkActorToolCalls(-1));
    expect(e.field).toBe('current_calls');
    expect(e.message).toBe('current_calls must be an integer >= 0, got -1');
  });

  it('refuses a fractional count of calls', () => {
    expect(() => g.checkActorToolCalls(0.5)).toThrow(GuardrailValidationError);
  });
});

describe('checkRetries', () => {
  const g = AutonomyGuardrails.create({ actorLimits: { maxRetriesPerFailure: 2 } });

  it('allows retries below the limit', () => {
    expect(outcome(g.checkRetries(1))).toEqual({
      allowed: true,
      result: 'allowed',
      eventType: 'retry_allowed',
      guardName: 'retry_limit',
      limit: 2,
      observed: 1,
    });
  });

  it('denies retries at the limit', () => {
    expect(outcome(g.checkRetries(2))).toEqual({
      allowed: false,
      result: 'denied',
      eventType: 'retry_blocked',
      guardName: 'retry_limit',
      limit: 2,
      observed: 2,
    });
  });

  it('denies retries beyond the limit', () => {
    expect(g.checkRetries(3).allowed).toBe(false);
  });

  it('denies the first retry with a limit of zero', () => {
    const none = AutonomyGuardrails.create({ actorLimits: { maxRetriesPerFailure: 0 } });
    expect(none.checkRetries(0).eventType).toBe('retry_blocked');
  });

  it('allows any number of retries without a limit, with a null limit', () => {
    expect(outcome(AutonomyGuardrails.create().checkRetries(99))).toEqual({
      allowed: true,
      result: 'allowed',
      eventType: 'retry_allowed',
      guardName: 'retry_limit',
      limit: null,
      observed: 99,
    });
  });

  it('refuses a negative count of retries', () => {
    const e = thrown(() => g.checkRetries(-1));
    expect(e.field).toBe('current_retries');
    expect(e.message).toBe('current_retries must be an integer >= 0, got -1');
  });

  it('refuses a string count of retries', () => {
    expect(() => g.checkRetries('1' as unknown as number)).toThrow(GuardrailValidationError);
  });
});

describe('checks do not mutate', () => {
  it('leaves every limit and counter unchanged after all six checks, allowed or denied', () => {
    const g = AutonomyGuardrails.create({
      maxSteps: 1,
      toolBudget: 1,
      requiredConfirmations: ['deploy'],
      maxWallClockSeconds: 1,
      startTime: START,
      actorLimits: { maxToolCallsPerInvocation: 1, maxRetriesPerFailure: 0 },
    });
    const before = g.toJSON();
    g.checkStepLimit(0);
    g.checkStepLimit(5);
    g.checkToolBudget(0.5);
    g.checkToolBudget(5);
    g.checkConfirmation('deploy');
    g.checkConfirmation('read');
    g.checkWallClock(START_MS);
    g.checkWallClock(START_MS + 5_000);
    g.checkActorToolCalls(0);
    g.checkActorToolCalls(5);
    g.checkRetries(0);
    g.checkRetries(5);
    expect(g.toJSON()).toEqual(before);
  });
});

describe('incrementStep', () => {
  it('counts one step', () => {
    const g = AutonomyGuardrails.create();
    g.incrementStep();
    expect(g.stepCount).toBe(1);
  });

  it('counts from the initial step count', () => {
    const g = AutonomyGuardrails.create({ stepCount: 4 });
    g.incrementStep();
    expect(g.stepCount).toBe(5);
  });

  it('brings the step count to the limit after max_steps steps', () => {
    const g = AutonomyGuardrails.create({ maxSteps: 3 });
    for (let i = 0; i < 3; i++) {
      expect(g.checkStepLimit(g.stepCount).allowed).toBe(true);
      g.incrementStep();
    }
    expect(g.checkStepLimit(g.stepCount).allowed).toBe(false);
  });

  it('refuses to count past the largest safe integer', () => {
    const g = AutonomyGuardrails.create({ stepCount: Number.MAX_SAFE_INTEGER });
    expect(() => g.incrementStep()).toThrow(GuardrailValidationError);
    expect(g.stepCount).toBe(Number.MAX_SAFE_INTEGER);
  });
});

describe('recordCost', () => {
  it('adds to the money spent', () => {
    const g = AutonomyGuardrails.create({ toolBudget: 10 });
    g.recordCost(2.5);
    expect(g.budgetSpent).toBe(2.5);
  });

  it('adds exactly: 0.1 then 0.2 makes 0.3', () => {
    const g = AutonomyGuardrails.create();
    g.recordCost(0.1);
    g.recordCost(0.2);
    expect(g.budgetSpent).toBe(0.3);
  });

  it('records spending without a budget', () => {
    const g = AutonomyGuardrails.create();
    g.recordCost(1_000);
    expect(g.budgetSpent).toBe(1_000);
  });

  it('records a cost beyond the budget (an overrun)', () => {
    const g = AutonomyGuardrails.create({ toolBudget: 10 });
    g.recordCost(12);
    expect(g.budgetSpent).toBe(12);
  });

  it('denies even a zero cost after an overrun', () => {
    const g = AutonomyGuardrails.create({ toolBudget: 10 });
    g.recordCost(12);
    expect(g.checkToolBudget(0).allowed).toBe(false);
  });

  it('rounds a sub-micro cost up', () => {
    const g = AutonomyGuardrails.create();
    g.recordCost(0.0000001);
    expect(g.budgetSpentMicros).toBe(1);
  });

  it('refuses a negative cost', () => {
    const g = AutonomyGuardrails.create({ toolBudget: 10 });
    const e = thrown(() => g.recordCost(-1));
    expect(e.field).toBe('cost');
    expect(e.message).toBe('cost must be a finite number >= 0, got -1');
  });

  it('leaves the money spent unchanged when it refuses a cost', () => {
    const g = AutonomyGuardrails.create({ budgetSpent: 1 });
    expect(() => g.recordCost(-1)).toThrow(GuardrailValidationError);
    expect(g.budgetSpent).toBe(1);
  });

  it('refuses a NaN cost', () => {
    expect(() => AutonomyGuardrails.create().recordCost(NaN)).toThrow(GuardrailValidationError);
  });

  it('refuses spending that would pass the largest exact amount', () => {
    const g = AutonomyGuardrails.create({ budgetSpent: MAX_AMOUNT });
    expect(() => g.recordCost(MAX_AMOUNT)).toThrow(GuardrailValidationError);
    expect(g.budgetSpent).toBe(MAX_AMOUNT);
  });
});

describe('recordCostMicros', () => {
  it('adds an amount already in micro-units', () => {
    const g = AutonomyGuardrails.create();
    g.recordCostMicros(250_000);
    expect(g.budgetSpent).toBe(0.25);
  });

  it('refuses a negative amount', () => {
    const g = AutonomyGuardrails.create({ budgetSpent: 1 });
    expect(() => g.recordCostMicros(-500_000)).toThrow(GuardrailValidationError);
    expect(g.budgetSpent).toBe(1);
  });

  it('refuses a fractional amount', () => {
    expect(() => AutonomyGuardrails.create().recordCostMicros(0.5)).toThrow(GuardrailValidationError);
  });
});

describe('withStartTime', () => {
  it('returns a copy with the start time set in canonical form', () => {
    const g = AutonomyGuardrails.create({ maxWallClockSeconds: 60 });
    expect(g.withStartTime('2026-11-30T11:00:00+01:00').startTime).toBe(START);
  });

  it('leaves the original without a start time', () => {
    const g = AutonomyGuardrails.create({ maxWallClockSeconds: 60 });
    g.withStartTime(START);
    expect(g.startTime).toBeNull();
  });

  it('keeps limits and counters in the copy', () => {
    const g = AutonomyGuardrails.create({ maxSteps: 4, toolBudget: 3, stepCount: 2, budgetSpent: 1 });
    const copy = g.withStartTime(START);
    expect(copy.toJSON()).toEqual({ ...g.toJSON(), start_time: START });
  });

  it('returns guardrails that have already started unchanged', () => {
    const g = AutonomyGuardrails.create({ startTime: START });
    const again = g.withStartTime('2027-01-01T00:00:00Z');
    expect(again).toBe(g);
    expect(again.startTime).toBe(START);
  });

  it('starts the wall clock', () => {
    const g = AutonomyGuardrails.create({ maxWallClockSeconds: 60 }).withStartTime(START);
    expect(g.checkWallClock(START_MS + 60_000).allowed).toBe(false);
  });

  it('refuses a malformed start time', () => {
    const e = thrown(() => AutonomyGuardrails.create().withStartTime('now'));
    expect(e.field).toBe('start_time');
  });
});

describe('clone', () => {
  it('copies every limit and counter', () => {
    const g = AutonomyGuardrails.create({
      maxSteps: 5,
      toolBudget: 10,
      requiredConfirmations: ['deploy'],
      maxWallClockSeconds: 60,
      startTime: START,
      actorLimits: { maxToolCallsPerInvocation: 3, maxRetriesPerFailure: 1 },
      stepCount: 2,
      budgetSpent: 4.5,
    });
    expect(g.clone().toJSON()).toEqual(g.toJSON());
  });

  it('returns a different instance', () => {
    const g = AutonomyGuardrails.create();
    expect(g.clone()).not.toBe(g);
  });

  it('counts steps independently of the original', () => {
    const g = AutonomyGuardrails.create({ maxSteps: 5 });
    const copy = g.clone();
    copy.incrementStep();
    expect(g.stepCount).toBe(0);
    expect(copy.stepCount).toBe(1);
  });

  it('records spending independently of the original', () => {
    const g = AutonomyGuardrails.create({ toolBudget: 10 });
    const copy = g.clone();
    g.recordCost(3);
    expect(copy.budgetSpent).toBe(0);
    expect(g.budgetSpent).toBe(3);
  });

  it('requires the same confirmations', () => {
    const copy = AutonomyGuardrails.create({ requiredConfirmations: ['deploy'] }).clone();
    expect(copy.checkConfirmation('DEPLOY').allowed).toBe(false);
  });
});

describe('toJSON', () => {
  it('produces the snake_case wire form', () => {
    const g = AutonomyGuardrails.create({
      maxSteps: 5,
      toolBudget: 10,
      requiredConfirmations: ['deploy'],
      startTime: START,
      actorLimits: { maxRetriesPerFailure: 3 },
      stepCount: 1,
      budgetSpent: 2.5,
    });
    expect(g.toJSON()).toEqual({
      max_steps: 5,
      tool_budget: 10,
      required_confirmations: ['deploy'],
      max_wall_clock_seconds: null,
      start_time: START,
      actor_limits: { max_tool_calls_per_invocation: null, max_retries_per_failure: 3 },
      step_count: 1,
      budget_spent: 2.5,
    });
  });

  it('is what JSON.stringify writes', () => {
    const g = AutonomyGuardrails.create({ maxSteps: 2 });
    expect(JSON.parse(JSON.stringify(g))).toEqual(g.toJSON());
  });

  it('returns a confirmations array the caller may change without effect', () => {
    const g = AutonomyGuardrails.create({ requiredConfirmations: ['deploy'] });
    g.toJSON().required_confirmations.push('delete');
    expect(g.requiredConfirmations).toEqual(['deploy']);
  });
});

describe('fromJSON', () => {
  it('round-trips through JSON text', () => {
    const g = AutonomyGuardrails.create({
      maxSteps: 5,
      toolBudget: 0.3,
      requiredConfirmations: ['deploy', 'delete'],
      maxWallClockSeconds: 90.5,
      startTime: START,
      actorLimits: { maxToolCallsPerInvocation: 3, maxRetriesPerFailure: 0 },
      stepCount: 2,
      budgetSpent: 0.1,
    });
    const back = AutonomyGuardrails.fromJSON(JSON.parse(JSON.stringify(g)));
    expect(back.toJSON()).toEqual(g.toJSON());
  });

  it('round-trips money in micro-units exactly', () => {
    const g = AutonomyGuardrails.create({ toolBudget: 66036.13539, budgetSpent: 1234.000001 });
    const back = AutonomyGuardrails.fromJSON(JSON.parse(JSON.stringify(g)));
    expect(back.toolBudgetMicros).toBe(g.toolBudgetMicros);
    expect(back.budgetSpentMicros).toBe(g.budgetSpentMicros);
  });

  it('behaves like the original after the round trip', () => {
    const g = AutonomyGuardrails.create({ toolBudget: 0.3 });
    g.recordCost(0.1);
    const back = AutonomyGuardrails.fromJSON(g.toJSON());
    expect(back.checkToolBudget(0.2).allowed).toBe(true);
    expect(back.checkToolBudget(0.200001).allowed).toBe(false);
  });

  /** The wire form of unlimited guardrails with `changes` applied. */
  const wire = (changes: Record<string, unknown>) => ({
    ...AutonomyGuardrails.create().toJSON(),
    ...changes,
  });

  it('refuses a wire object missing a key rather than reading it as unlimited', () => {
    const { tool_budget: _dropped, ...rest } = AutonomyGuardrails.create({ toolBudget: 1 }).toJSON();
    const e = thrown(() => AutonomyGuardrails.fromJSON(rest));
    expect(e.field).toBe('tool_budget');
    expect(e.message).toBe('tool_budget is missing');
  });

  it('rounds budget_spent to the nearest micro-unit', () => {
    expect(AutonomyGuardrails.fromJSON(wire({ budget_spent: 0.0000014 })).budgetSpentMicros).toBe(1);
  });

  it('validates like create, naming the wire field', () => {
    const e = thrown(() => AutonomyGuardrails.fromJSON({ max_steps: 0 }));
    expect(e.field).toBe('max_steps');
    expect(e.message).toBe('max_steps must be an integer >= 1, got 0');
  });

  it('names a bad nested actor limit by its wire path', () => {
    const e = thrown(() =>
      AutonomyGuardrails.fromJSON(
        wire({ actor_limits: { max_tool_calls_per_invocation: null, max_retries_per_failure: -1 } }),
      ),
    );
    expect(e.field).toBe('actor_limits.max_retries_per_failure');
  });

  it('refuses camelCase keys', () => {
    const e = thrown(() => AutonomyGuardrails.fromJSON({ maxSteps: 5 }));
    expect(e.field).toBe('maxSteps');
  });

  it('refuses a malformed start_time', () => {
    const e = thrown(() => AutonomyGuardrails.fromJSON(wire({ start_time: 'soon' })));
    expect(e.field).toBe('start_time');
  });

  it('refuses a value that is not an object', () => {
    expect(() => AutonomyGuardrails.fromJSON('{}')).toThrow('init must be an object, got "{}"');
  });

  it('refuses an own __proto__ key from parsed JSON as unknown', () => {
    const e = thrown(() => AutonomyGuardrails.fromJSON(JSON.parse('{"__proto__": {"max_steps": 1}}')));
    expect(e.field).toBe('__proto__');
  });
});

describe('negative zero', () => {
  it('stores a step_count of -0 as 0, as JSON would', () => {
    expect(Object.is(AutonomyGuardrails.create({ stepCount: -0 }).stepCount, 0)).toBe(true);
  });
});
