import { describe, expect, it } from 'vitest';
import {
  DEFAULT_MAX_OUTPUT_TOKENS,
  MODEL_OPTIONS,
  modelOptionsSchema,
} from '../../src/adapters/modelOptions.js';
import { parseOptions } from '../../src/validation.js';
import { AutonomyGuardrailService, GuardrailValidationError, RunGuard } from '../../src/index.js';

const guard = new RunGuard({ service: new AutonomyGuardrailService(), planId: 'p' });
const modelOptions = (options: unknown) => parseOptions(MODEL_OPTIONS, options);

/** The message of the validation error `f` throws. */
function refusal(f: () => unknown): string {
  try {
    f();
  } catch (error) {
    if (error instanceof GuardrailValidationError) return `${error.field}: ${error.message}`;
    throw error;
  }
  throw new Error('nothing was refused');
}

describe('the model options every adapter takes', () => {
  it('gives a call 4096 output tokens when the options set none', () => {
    expect(modelOptions({ guard }).maxOutputTokens).toBe(DEFAULT_MAX_OUTPUT_TOKENS);
  });

  it('reads null as no value: the output limit defaults, and no price key is given', () => {
    const o = modelOptions({ guard, modelId: null, maxOutputTokens: null });
    expect([o.modelId, o.maxOutputTokens]).toEqual([undefined, DEFAULT_MAX_OUTPUT_TOKENS]);
  });

  it('keeps the price key and output limit given', () => {
    const o = modelOptions({ guard, modelId: 'gpt-4o-mini', maxOutputTokens: 512 });
    expect([o.modelId, o.maxOutputTokens]).toEqual(['gpt-4o-mini', 512]);
  });

  it('refuses an output limit that is not a whole number, naming the field and the value', () => {
    expect(refusal(() => modelOptions({ guard, maxOutputTokens: 1.5 }))).toBe(
      'maxOutputTokens: maxOutputTokens must be an integer >= 1, got 1.5',
    );
  });

  it('takes an output limit of 0 only where the adapter allows it', () => {
    expect(parseOptions(modelOptionsSchema(0, {}), { guard, maxOutputTokens: 0 }).maxOutputTokens).toBe(0);
    expect(refusal(() => modelOptions({ guard, maxOutputTokens: 0 }))).toMatch(
      /must be an integer >= 1, got 0/,
    );
  });

  it('refuses an empty price key', () => {
    expect(refusal(() => modelOptions({ guard, modelId: '' }))).toBe(
      'modelId: modelId must be the price key of the model, a non-empty string, got ""',
    );
  });

  it('refuses a key no adapter takes, and a guard that is not a RunGuard', () => {
    expect(refusal(() => modelOptions({ guard, modelID: 'x' }))).toMatch(
      /^options.modelID: .* is not a known field/,
    );
    expect(refusal(() => modelOptions({ guard: {} }))).toMatch(/^guard: guard must be a RunGuard/);
  });
});
