import { describe, expect, it } from 'vitest';
import { modelPrices, parsePolicy, unpricedModels, validatePolicy } from '../../src/policy/index.js';
import { thrown } from '../support/thrown.js';

/** The field and message of the GuardrailValidationError that `fn` throws. */
function refusal(fn: () => unknown): { field: string | undefined; message: string } {
  const e = thrown(fn);
  return { field: e.field, message: e.message };
}

const YAML = `version: 1
guardrails:
  tool_budget: 5
models:
  gpt-4o-mini: { input: 0.15, output: 0.6, cached_input: 0.075 }
  o3: { input: 2, output: 8 }
unpriced_models: allow
`;

describe('policy models', () => {
  it('reads the prices of the models block, held exactly in micro-units per million tokens', () => {
    const prices = modelPrices(parsePolicy(YAML));
    expect(Object.fromEntries(prices)).toEqual({
      'gpt-4o-mini': { inputMicros: 150_000, outputMicros: 600_000, cachedInputMicros: 75_000 },
      o3: { inputMicros: 2_000_000, outputMicros: 8_000_000, cachedInputMicros: 2_000_000 },
    });
  });

  it('reads unpriced_models', () => {
    expect(unpricedModels(parsePolicy(YAML))).toBe('allow');
  });

  it('denies unpriced models when the policy does not say', () => {
    expect(unpricedModels(validatePolicy({ version: 1 }))).toBe('deny');
  });

  it('has no prices when the policy names no models', () => {
    expect(modelPrices(validatePolicy({ version: 1 })).size).toBe(0);
  });

  it('refuses a negative price, naming the model and the field', () => {
    const value = { version: 1, models: { m: { input: -1, output: 1 } } };
    expect(refusal(() => validatePolicy(value))).toEqual({
      field: 'models.m.input',
      message: 'models.m.input must be a finite number >= 0, got -1',
    });
  });

  it('refuses a model without an output price, naming the field', () => {
    expect(refusal(() => validatePolicy({ version: 1, models: { m: { input: 1 } } })).field).toBe(
      'models.m.output',
    );
  });

  it('refuses an unknown key in a model price, naming it and the known ones', () => {
    const value = { version: 1, models: { m: { input: 1, output: 1, cache: 1 } } };
    expect(refusal(() => validatePolicy(value))).toEqual({
      field: 'models.m.cache',
      message: 'models.m.cache is not a known field (known: input, output, cached_input)',
    });
  });

  it('refuses a model id that is blank, saying it must be a model id', () => {
    expect(refusal(() => validatePolicy({ version: 1, models: { ' ': { input: 1, output: 1 } } }))).toEqual({
      field: 'models',
      message: expect.stringContaining('models key must be a model id: '),
    });
  });

  it('refuses an unpriced_models other than deny or allow', () => {
    expect(refusal(() => validatePolicy({ version: 1, unpriced_models: 'warn' }))).toEqual({
      field: 'unpriced_models',
      message: 'unpriced_models must be deny or allow, got "warn"',
    });
  });
});
