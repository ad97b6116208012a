import { wrapLanguageModel, type LanguageModelMiddleware } from 'ai';
import type { ModelCallHandle } from '../../agent/modelCalls.js';
import type { TokenEstimate, TokenUsage } from '../../agent/prices.js';
import type { RunGuard } from '../../agent/RunGuard.js';
import { errorTail, GuardrailViolationError, invalid } from '../../errors.js';
import { guardOptions, type GuardOption } from './options.js';

type WrapOptions = Parameters<typeof wrapLanguageModel>[0];
/** A language model as the AI SDK's providers make it (`LanguageModelV3`). */
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

const DEFAULT_MAX_OUTPUT = 4096;
/** A file part (an image, a document) counts as this many tokens in the estimate. */
const FILE_TOKENS = 1500;
/** Tokens for each message's framing in the estimate. */
const MESSAGE_TOKENS = 4;

/**
 * The model with each call metered against the plan's budget (`wrapLanguageModel` middleware), for
 * `generateText` and `streamText` alike: before a call, the wall clock is checked and the price of its
 * estimate (the prompt's tokens, and `maxOutputTokens`) set aside; after it, what its usage cost is
 * spent — for a stream, from its finish part. A call that fails gives the estimate back; a stream
 * cancelled before its finish is charged the estimate. A call the wall clock or the budget does not
 * allow is not made: it throws a GuardrailViolationError carrying the check (the stop condition of
 * `guardStop` normally ends the loop before that happens).
 */
export function guardModel(model: GuardedLanguageModel, options: GuardModelOptions): GuardedLanguageModel {
  const o = guardOptions(options, ['modelId', 'maxOutputTokens', 'estimateInputTokens']);
  const guard = o['guard'] as RunGuard;
  const modelId = o['modelId'] ?? model?.modelId;
  if (typeof modelId !== 'string' || modelId.length === 0) invalid('modelId', 'a non-empty string', modelId);
  const maxOut = o['maxOutputTokens'] ?? DEFAULT_MAX_OUTPUT;
  if (!Number.isSafeInteger(maxOut) || (maxOut as number) < 0)
    invalid('maxOutputTokens', 'an integer >= 0', maxOut);
  const estimateInput = o['estimateInputTokens'] ?? promptTokens;
  if (typeof estimateInput !== 'function') invalid('estimateInputTokens', 'a function', estimateInput);
  const estimateOf = (params: CallOptions): TokenEstimate => ({
    inputTokens: (estimateInput as (p: CallOptions) => number)(params),
    maxOutputTokens: params.maxOutputTokens ?? (maxOut as number),
  });
  const middleware: LanguageModelMiddleware = {
    specificationVersion: 'v3',
    wrapGenerate: async ({ params, model: inner }) => {
      const estimate = estimateOf(params);
      const done = await guard.modelCall({
        modelId,
        estimate,
        run: async (ctx) => {
          const result = await inner.doGenerate({ ...params, abortSignal: merged(params, ctx.signal) });
          return { output: result, usage: usageOf(result.usage, estimate) };
        },
      });
      if (!done.allowed) throw new GuardrailViolationError(done.check);
      return done.output;
    },
    wrapStream: async ({ params, model: inner }) => {
      const estimate = estimateOf(params);
      const opened = await guard.openModelCall({ modelId, estimate });
      if (!opened.allowed) throw new GuardrailViolationError(opened.check);
      const handle = opened.handle;
      let result: Awaited<ReturnType<GuardedLanguageModel['doStream']>>;
      try {
        result = await inner.doStream(params);
      } catch (error) {
        await handle.release({ error: errorTail(error) });
        throw error;
      }
      return { ...result, stream: result.stream.pipeThrough(metered(handle, estimate)) };
    },
  };
  return wrapLanguageModel({ model, middleware, modelId: model.modelId, providerId: model.provider });
}

/** Passes a stream's parts on, spending its usage at the finish part, or the estimate when cut short. */
function metered(handle: ModelCallHandle, estimate: TokenEstimate): TransformStream<StreamPart, StreamPart> {
  let finished = false;
  const cutShort = async (): Promise<void> => {
    if (!finished) await handle.abandon();
  };
  return new TransformStream<StreamPart, StreamPart>({
    async transform(part: StreamPart, controller: TransformStreamDefaultController<StreamPart>) {
      if (part.type === 'finish' && !finished) {
        finished = true;
        await handle.commit(usageOf(part.usage, estimate));
      }
      controller.enqueue(part);
    },
    flush: cutShort,
    // Called when the reader cancels (Node 20 streams support it, though the DOM types lack it).
    ...{ cancel: cutShort },
  });
}

function merged(params: CallOptions, signal: AbortSignal): AbortSignal {
  return params.abortSignal ? AbortSignal.any([params.abortSignal, signal]) : signal;
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
  return Math.ceil(bytes / 3) + extra;
}
