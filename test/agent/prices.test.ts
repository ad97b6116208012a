import { describe, expect, it } from 'vitest';
import { estimateCostMicros, priceTable, usageCostMicros, type TokenUsage } from '../../src/agent/prices.js';
import { fieldOf } from '../support/thrown.js';

const MINI = priceTable({ 'gpt-4o-mini': { input: 0.15, output: 0.6, cached_input: 0.075 } }).get(
  'gpt-4o-mini',
)!;

describe('model prices', () => {
  it('holds prices per million tokens as micro-units', () => {
    expect(MINI).toEqual({ inputMicros: 150_000, outputMicros: 600_000, cachedInputMicros: 75_000 });
  });

  it('prices cached input at the input price when the table gives no cached price', () => {
    expect(priceTable({ m: { input: 2, output: 8 } }).get('m')?.cachedInputMicros).toBe(2_000_000);
  });

  it.each<[string, TokenUsage, number]>([
    ['no tokens', { inputTokens: 0, outputTokens: 0 }, 0],
    ['input and output', { inputTokens: 1000, outputTokens: 500 }, 450],
    [
      'cached input at the cached price',
      { inputTokens: 1000, outputTokens: 500, cachedInputTokens: 400 },
      420,
    ],
    ['all input cached', { inputTokens: 1000, outputTokens: 0, cachedInputTokens: 1000 }, 75],
    ['a fraction of a micro-unit, rounded up', { inputTokens: 1, outputTokens: 0 }, 1],
    ['a billion input tokens, exactly', { inputTokens: 1e9, outputTokens: 0 }, 150_000_000],
  ])('prices %s exactly, in micro-units', (_case, usage, micros) => {
    expect(usageCostMicros(MINI, usage)).toBe(micros);
  });

  it('prices an estimate as all of its input at the input price plus its most output', () => {
    expect(estimateCostMicros(MINI, { inputTokens: 1000, maxOutputTokens: 500 })).toBe(450);
  });

  it('prices an estimate at the cached input price when it is the higher one, so it bounds any usage', () => {
    const rates = priceTable({ m: { input: 1, output: 0, cached_input: 3 } }).get('m')!;
    const estimate = estimateCostMicros(rates, { inputTokens: 1000, maxOutputTokens: 0 });
    expect(estimate).toBe(3000);
    expect(usageCostMicros(rates, { inputTokens: 1000, outputTokens: 0, cachedInputTokens: 1000 })).toBe(
      estimate,
    );
  });

  it('refuses more cached tokens than input tokens, naming the field', () => {
    expect(
      fieldOf(() => usageCostMicros(MINI, { inputTokens: 1, outputTokens: 0, cachedInputTokens: 2 })),
    ).toBe('usage.cachedInputTokens');
  });

  it('refuses a token count that is not a whole number, naming the field', () => {
    expect(fieldOf(() => usageCostMicros(MINI, { inputTokens: 1.5, outputTokens: 0 }))).toBe(
      'usage.inputTokens',
    );
  });

  it('refuses a negative price, naming the model and the field', () => {
    expect(fieldOf(() => priceTable({ m: { input: -1, output: 1 } }))).toBe('models.m.input');
  });

  it('refuses a price with no output price, naming the field', () => {
    expect(fieldOf(() => priceTable({ m: { input: 1 } as never }))).toBe('models.m.output');
  });

  it('says a missing price is missing rather than describing undefined', () => {
    expect(() => priceTable({ m: { input: 1 } as never })).toThrow('models.m.output is missing');
  });

  it('names a price under a model id with a dot by the id in brackets', () => {
    expect(fieldOf(() => priceTable({ 'gpt-4.1': { input: 'x' as never, output: 1 } }))).toBe(
      'models["gpt-4.1"].input',
    );
  });

  it('refuses a misspelt price key, listing the known ones', () => {
    expect(() => priceTable({ m: { input: 1, output: 1, cachedInput: 1 } as never })).toThrow(
      'models.m.cachedInput is not a known field (known: input, output, cached_input)',
    );
  });

  it('refuses a held price table whose rate is not a whole number of micro-units', () => {
    const held = new Map([['m', { inputMicros: 1.5, outputMicros: 1, cachedInputMicros: 1 }]]);
    expect(fieldOf(() => priceTable(held))).toBe('models.m.inputMicros');
  });
});
