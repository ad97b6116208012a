/** Where chat models keep their output cap: `maxTokens` (OpenAI, Anthropic, Mistral, …), else `maxOutputTokens`. */
const CAP_FIELDS = ['maxTokens', 'maxOutputTokens'] as const;

/** What a model call may output at most, and the model to make it with. */
export interface OutputCap {
  readonly tokens: number;
  readonly model: unknown;
}

/**
 * The most a call of `model` may output, and the model to call: the model's own cap when it set one;
 * else `fallback`, given to the model as its cap for this call when it keeps one in a field it left
 * unset (a copy of the model with the field set: the application's model is not changed). A model with
 * neither field is called as it is, and charged what it used even past what was set aside.
 */
export function outputCap(model: unknown, fallback: number): OutputCap {
  if (typeof model !== 'object' || model === null) return { tokens: fallback, model };
  for (const field of CAP_FIELDS) {
    if (!(field in model)) continue;
    const own = (model as Record<string, unknown>)[field];
    if (typeof own === 'number' && Number.isSafeInteger(own) && own > 0) return { tokens: own, model };
    const copy: object = Object.create(Object.getPrototypeOf(model), Object.getOwnPropertyDescriptors(model));
    Object.defineProperty(copy, field, {
      value: fallback,
      writable: true,
      enumerable: true,
      configurable: true,
    });
    return { tokens: fallback, model: copy };
  }
  return { tokens: fallback, model };
}
