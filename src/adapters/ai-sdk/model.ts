import { modelOptionsSchema, priceKey } from '../modelOptions.js';
import { functionOption, parseOptions } from '../../validation.js';
import { wrapLanguageModel, type LanguageModelMiddleware } from 'ai';
import type { ModelCallHandle } from '../../agent/modelCalls.js';
import { bytesToTokens, type TokenEstimate, type TokenUsage } from '../../agent/prices.js';
import { errorTail, GuardrailViolationError, invalid } from '../../errors.js';
import { eitherAborts } from '../../signals.js';
import { type GuardOption } from '../../agent/guardOption.js';

type WrapOptions = Parameters<typeof wrapLanguageModel>[0];
/** A language model as the installed AI SDK wraps one: `LanguageModelV3` in ai 6, V2 to V4 in ai 7. */
export type GuardedLanguageModel = WrapOptions['model'];
type CallOptions = Parameters<GuardedLanguageModel['doGenerate']>[0];
type ModelUsage = Awaited<ReturnType<GuardedLanguageModel['doGenerate']>>['usage'];
type StreamPart =
  Awaited<ReturnType<GuardedLanguageModel['doStream']>>['stream'] extends ReadableStream<infer P> ? P : never;

export interface GuardModelOptions extends GuardOption {
  /** The price table's key for this model; default the model's own id. */
  readonly modelId?: string;
  /** The output a call may use when it sets no `maxOutputTokens`; default 4096. */
  readonly maxOutputTokens?: number;
  /** Input tokens to reserve for a call; default an estimate from the prompt (see the README). */
  readonly estimateInputTokens?: (params: CallOptions) => number;
}

// A call may ask for no output at all here (`maxOutputTokens: 0`), as the AI SDK allows.
const GUARD_MODEL_OPTIONS = modelOptionsSchema(0, {
  estimateInputTokens: functionOption<(params: CallOptions) => number>().default(() => promptTokens),
});

/** A file part (an image, a document) counts as this many tokens in the estimate. */
const FILE_TOKENS = 1500;
/** Tokens for each message's framing in the estimate. */
const MESSAGE_TOKENS = 4;

/**
 * The model with each call metered against the plan's budget (`wrapLanguageModel` middleware), for
 * `generateText` and `streamText` alike: before a call, the wall clock is checked and the price of its
 * estimate (the prompt's tokens, and `maxOutputTokens`, which the provider is given as the call's cap
 * when the caller set none) set aside; after it, what its usage cost is
 * spent — for a stream, from its finish part. A call that fails gives the estimate back; a stream
 * cancelled before its finish is charged the estimate. A call the wall clock or the budget does not
 * allow is not made: it throws a GuardrailViolationError carrying the check (the stop condition of
 * `guardStop` normally ends the loop before that happens).
 */
export function guardModel(model: GuardedLanguageModel, options: GuardModelOptions): GuardedLanguageModel {
  if (typeof model?.doGenerate !== 'function' || typeof model.doStream !== 'function')
    invalid('model', 'a language model with doGenerate and doStream', model);
  const {
    guard,
    modelId: given,
    maxOutputTokens: maxOut,
    estimateInputTokens: estimateInput,
  } = parseOptions(GUARD_MODEL_OPTIONS, options);
  const modelId = priceKey(given, model.modelId);
  const estimateOf = (params: CallOptions): TokenEstimate => ({
    inputTokens: estimateInput(params),
    maxOutputTokens: params.maxOutputTokens ?? maxOut,
  });
  const middleware: LanguageModelMiddleware = {
    specificationVersion: 'v3',
    wrapGenerate: async ({ params, model: inner }) => {
      const estimate = estimateOf(params);
      const done = await guard.modelCall({
        modelId,
        estimate,
        run: async (ctx) => {
          const [abortSignal, done] = eitherAborts(params.abortSignal, ctx.signal);
          try {
            const result = await inner.doGenerate(capped(params, estimate, abortSignal));
            return { output: result, usage: usageOf(result.usage, estimate) };
          } finally {
            done();
          }
        },
      });
      if (!done.allowed) throw new GuardrailViolationError(done.check);
      return done.output;
    },
    wrapStream: async ({ params, model: inner }) => {
      const estimate = estimateOf(params);
      const opened = await guard.openModelCall({ modelId, estimate });
      if (!opened.allowed) throw new GuardrailViolationError(opened.check);
      const { handle, signal } = opened;
      // Listened to for as long as the stream lives: a provider may read the signal at any point of it.
      const [abortSignal] = eitherAborts(params.abortSignal, signal);
      let result: Awaited<ReturnType<GuardedLanguageModel['doStream']>>;
      try {
        result = await inner.doStream(capped(params, estimate, abortSignal));
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        await handle.release({ error: errorTail(error) });
        throw error;
      }
      return { ...result, stream: metered(result.stream, handle, estimate, signal) };
    },
  };
  return wrapLanguageModel({ model, middleware, modelId: model.modelId, providerId: model.provider });
}

/**
 * The call as the provider gets it: capped at the output its estimate set aside (the caller's own
 * `maxOutputTokens`, else the guard's), so that its answer is no longer than the output reserved for.
 */
function capped(params: CallOptions, estimate: TokenEstimate, abortSignal: AbortSignal): CallOptions {
  return { ...params, maxOutputTokens: estimate.maxOutputTokens, abortSignal };
}

/**
 * The stream's parts, passed on as they are read: its usage spent at the finish part, the estimate
 * charged when it ends, errors or is cancelled before one. (A pulling source rather than a transform
 * stream, whose cancel hook older Node 20 releases lack.)
 */
function metered(
  source: ReadableStream<StreamPart>,
  handle: ModelCallHandle,
  estimate: TokenEstimate,
  wallClock: AbortSignal,
): ReadableStream<StreamPart> {
  const reader = source.getReader();
  let settled = false;
  const cutShort = async (): Promise<void> => {
    if (settled) return;
    settled = true;
    await handle.abandon();
  };
  return new ReadableStream<StreamPart>({
    async pull(controller) {
      if (wallClock.aborted) {
        // The wall clock ran out (the estimate is charged): the stream ends with the violation.
        await cutShort();
        controller.error(wallClock.reason);
        void reader.cancel(wallClock.reason).catch(() => undefined);
        return;
      }
      let next: Awaited<ReturnType<typeof reader.read>>;
      try {
        next = await reader.read();
      } catch (error) {
        await cutShort();
        controller.error(error);
        return;
      }
      if (next.done) {
        await cutShort();
        controller.close();
        return;
      }
      const part = next.value;
      if (part.type === 'finish' && !settled) {
        await handle.commit(usageOf(part.usage, estimate));
        settled = true;
      }
      controller.enqueue(part);
    },
    async cancel(reason) {
      await cutShort();
      await reader.cancel(reason);
    },
  });
}

/**
 * What a call used, as leash prices it. A count the provider did not report is taken at its estimate,
 * so a call is never charged less than it may have cost.
 */
export function usageOf(usage: ModelUsage, estimate: TokenEstimate): TokenUsage {
  return {
    inputTokens: usage.inputTokens.total ?? estimate.inputTokens,
    outputTokens: usage.outputTokens.total ?? estimate.maxOutputTokens,
    cachedInputTokens: usage.inputTokens.cacheRead ?? 0,
  };
}

/**
 * Input tokens a prompt may use, estimated from its size: a token for every 3 bytes of its text (UTF-8,
 * tool definitions included), {@link FILE_TOKENS} for each file part and {@link MESSAGE_TOKENS} for each
 * message. Generous for English and code, close for scripts that take a token per character.
 */
export function promptTokens(params: CallOptions): number {
  let bytes = 0;
  let extra = 0;
  for (const message of params.prompt) {
    extra += MESSAGE_TOKENS;
    if (typeof message.content === 'string') {
      bytes += Buffer.byteLength(message.content);
      continue;
    }
    for (const part of message.content) {
      if (part.type === 'file') extra += FILE_TOKENS;
      else bytes += Buffer.byteLength(JSON.stringify(part));
    }
  }
  if (params.tools) bytes += Buffer.byteLength(JSON.stringify(params.tools));
  if (params.responseFormat) bytes += Buffer.byteLength(JSON.stringify(params.responseFormat));
  return bytesToTokens(bytes) + extra;
}
