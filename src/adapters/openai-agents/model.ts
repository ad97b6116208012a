import { MODEL_OPTIONS, priceKey } from '../modelOptions.js';
import { parseOptions } from '../../validation.js';
import {
  getDefaultModel,
  type Model,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type StreamEvent,
} from '@openai/agents';
import { type GuardOption } from '../../agent/guardOption.js';
import type { ModelCallHandle } from '../../agent/modelCalls.js';
import { bytesToTokens, type TokenEstimate, type TokenUsage } from '../../agent/prices.js';
import type { RunGuard } from '../../agent/RunGuard.js';
import { errorTail, invalid, isGuardrailViolationError } from '../../errors.js';
import { eitherAborts } from '../../signals.js';
import { ended, endedEvents } from './ended.js';

export interface GuardModelOptions extends GuardOption {
  /**
   * The price table's key for the model. For `guardModel`, default the model's own `model` name when it
   * has one (a Model instance need not); for `guardModelProvider`, the key of the model the agent asks
   * for by its default (an empty name), default the SDK's default model name.
   */
  readonly modelId?: string;
  /** Output tokens a call is set aside for when its settings give no `maxTokens`. Default 4096. */
  readonly maxOutputTokens?: number;
}

/** Tokens an input item costs beyond its text: its role and framing. */
const ITEM_TOKENS = 4;
/** An image or file part counts as this many tokens in the estimate. */
const FILE_TOKENS = 1500;

/**
 * The model with each call metered against the plan's budget, for `run` and `run(…, { stream: true })`
 * alike: before a call, the run ends (a last message saying which limit, so the run's output and state
 * are kept) when the wall clock, the steps or the budget leave nothing to do; otherwise the price of its
 * estimate (the request's tokens, and its `maxTokens`) is set aside, and what its usage cost is spent —
 * for a stream, from its `response_done` event. A call that failed before the provider answered gives
 * the estimate back; one that may have been billed (the provider had started answering, the run aborted
 * it, it timed out, a stream cut short) is charged the estimate. Give it to an `Agent` as its `model` (a
 * Model instance an agent holds bypasses the run's model provider: see {@link guardModelProvider}).
 */
export function guardModel(model: Model, options: GuardModelOptions): Model {
  const o = parseOptions(MODEL_OPTIONS, options);
  if (typeof model?.getResponse !== 'function' || typeof model.getStreamedResponse !== 'function')
    invalid('model', 'a Model with getResponse and getStreamedResponse', model);
  const own = (model as { model?: unknown }).model;
  const modelId = priceKey(o.modelId, typeof own === 'string' && own.length > 0 ? own : undefined);
  return metered(model, o.guard, modelId, o.maxOutputTokens);
}

/**
 * The provider with every model it gives metered as {@link guardModel} meters it, priced under the name
 * the agent asked for (the default model under `modelId`, else the SDK's default name). Give it to a
 * `Runner` as its `modelProvider`: agents that name their model by a string then need nothing else.
 */
export function guardModelProvider(provider: ModelProvider, options: GuardModelOptions): ModelProvider {
  const o = parseOptions(MODEL_OPTIONS, options);
  if (typeof provider?.getModel !== 'function') invalid('provider', 'a ModelProvider', provider);
  return {
    async getModel(name?: string): Promise<Model> {
      const inner = await provider.getModel(name);
      const modelId = name !== undefined && name.length > 0 ? name : (o.modelId ?? getDefaultModel());
      return metered(inner, o.guard, modelId, o.maxOutputTokens);
    },
  };
}

/**
 * The request as the provider gets it: capped at the output its estimate set aside (its own `maxTokens`,
 * else the guard's `maxOutputTokens`), so that its answer is no longer than the output reserved for.
 */
function capped(request: ModelRequest, estimate: TokenEstimate, signal: AbortSignal): ModelRequest {
  return {
    ...request,
    modelSettings: { ...request.modelSettings, maxTokens: estimate.maxOutputTokens },
    signal,
  };
}

function metered(inner: Model, guard: RunGuard, modelId: string, maxOut: number): Model {
  const estimateOf = (request: ModelRequest): TokenEstimate => ({
    inputTokens: requestTokens(request),
    maxOutputTokens: request.modelSettings?.maxTokens ?? maxOut,
  });
  const wrapped: Model = {
    ...(inner.supportsPromptModelSelection === undefined
      ? {}
      : { supportsPromptModelSelection: inner.supportsPromptModelSelection }),
    async getResponse(request: ModelRequest): Promise<ModelResponse> {
      const estimate = estimateOf(request);
      const limit = await guard.limitReached();
      if (limit !== null) return ended(limit);
      // A call that failed once the provider may have billed it: charged its estimate, then thrown.
      let billed: { error: unknown } | undefined;
      try {
        const done = await guard.modelCall({
          modelId,
          estimate,
          run: async (ctx) => {
            const [signal, stop] = eitherAborts(request.signal, ctx.signal);
            try {
              const response = await inner.getResponse(capped(request, estimate, signal));
              return { output: response, usage: usageOf(response.usage, estimate) };
            } catch (error) {
              if (ctx.signal.aborted || !mayHaveBilled(error, request)) throw error;
              billed = { error };
              return { output: undefined, usage: wholeEstimate(estimate) };
            } finally {
              stop();
            }
          },
        });
        if (billed !== undefined) throw billed.error;
        return done.allowed ? (done.output as ModelResponse) : ended(done.check);
      } catch (error) {
        if (isGuardrailViolationError(error)) return ended(error.check);
        throw error;
      }
    },
    async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
      const estimate = estimateOf(request);
      const limit = await guard.limitReached();
      if (limit !== null) return yield* endedEvents(limit);
      const opened = await guard.openModelCall({ modelId, estimate });
      if (!opened.allowed) return yield* endedEvents(opened.check);
      const { handle, signal: wallClock } = opened;
      // Listened to for as long as the stream lives: a provider may read the signal at any point of it.
      const [signal, stop] = eitherAborts(request.signal, wallClock);
      const meter = new StreamMeter(handle, estimate);
      try {
        for await (const event of inner.getStreamedResponse(capped(request, estimate, signal))) {
          // Once its response_done is passed on, the call is over: the clock running out since changes nothing.
          if (wallClock.aborted && !meter.committed) break;
          meter.started = true;
          if (event.type === 'response_done') await meter.commit(event.response.usage);
          yield event;
        }
      } catch (error) {
        if (!wallClock.aborted || meter.committed) {
          await meter.failed(error, mayHaveBilled(error, request));
          throw error;
        }
      } finally {
        // Ended without its response_done, or its reader stopped reading: charged the estimate.
        await meter.abandon();
        stop();
      }
      if (wallClock.aborted && !meter.committed) {
        const reason: unknown = wallClock.reason;
        if (!isGuardrailViolationError(reason)) throw reason;
        yield* endedEvents(reason.check);
      }
    },
  };
  if (typeof inner.getRetryAdvice === 'function') wrapped.getRetryAdvice = inner.getRetryAdvice.bind(inner);
  return wrapped;
}

/** A stream's settlement: its usage at `response_done`, else the estimate (or nothing, failing at once). */
class StreamMeter {
  started = false;
  committed = false;
  #settled = false;

  constructor(
    readonly handle: ModelCallHandle,
    readonly estimate: TokenEstimate,
  ) {}

  async commit(usage: UsageLike | undefined): Promise<void> {
    if (this.#settled) return;
    this.#settled = true;
    this.committed = true;
    await this.handle.commit(usageOf(usage, this.estimate));
  }

  /**
   * A stream that failed before its first event, in a way that billed nothing, gives the estimate back;
   * any other is charged it (when the stream ends).
   */
  async failed(error: unknown, billed: boolean): Promise<void> {
    if (this.#settled || this.started || billed) return;
    this.#settled = true;
    await this.handle.release({ error: errorTail(error) });
  }

  async abandon(): Promise<void> {
    if (this.#settled) return;
    this.#settled = true;
    await this.handle.abandon();
  }
}

/**
 * Whether a call that failed may have been billed: the provider had started its response or says it must
 * not be sent again (the SDK's OpenAI models mark an incomplete or failed response so), or the request
 * was aborted or timed out after it was sent. A call refused before it reached the provider (a
 * connection refused, a 4xx) was not.
 */
function mayHaveBilled(error: unknown, request: ModelRequest): boolean {
  if (request.signal?.aborted === true) return true;
  const e = error as { responseStarted?: unknown; unsafeToReplay?: unknown; name?: unknown } | null;
  if (typeof e !== 'object' || e === null) return false;
  return (
    e.responseStarted === true ||
    e.unsafeToReplay === true ||
    e.name === 'AbortError' ||
    e.name === 'TimeoutError' ||
    e.name === 'APIConnectionTimeoutError' ||
    e.name === 'APIUserAbortError'
  );
}

/** Usage as much as a call may have used: its estimate, whole. */
function wholeEstimate(estimate: TokenEstimate): TokenUsage {
  return { inputTokens: estimate.inputTokens, outputTokens: estimate.maxOutputTokens };
}

/** Usage as a response or its `response_done` event reports it. */
interface UsageLike {
  readonly inputTokens?: number | undefined;
  readonly outputTokens?: number | undefined;
  readonly inputTokensDetails?: Record<string, number> | readonly Record<string, number>[] | undefined;
}

/**
 * What a call used, as leash prices it: `inputTokens` (cache reads included, `cached_tokens` of the
 * details priced at the cached rate) and `outputTokens`. A usage with no input tokens was not reported
 * (every request has some): the call is charged its whole estimate.
 */
export function usageOf(usage: UsageLike | undefined, estimate: TokenEstimate): TokenUsage {
  const count = (v: unknown): number => (typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : 0);
  const input = count(usage?.inputTokens);
  if (input === 0) return wholeEstimate(estimate);
  const details = usage?.inputTokensDetails;
  const all = Array.isArray(details) ? details : details === undefined ? [] : [details];
  let cached = 0;
  for (const d of all as readonly Record<string, number>[]) cached += count(d?.['cached_tokens']);
  return {
    inputTokens: input,
    outputTokens: count(usage?.outputTokens),
    cachedInputTokens: Math.min(input, cached),
  };
}

/**
 * The request's input tokens, estimated from its size: a token for every 3 bytes of its instructions,
 * input items, tools, handoffs and output schema as JSON, {@link FILE_TOKENS} for each image or file
 * part (whatever its size: a picture's base64 bytes are not its tokens) and {@link ITEM_TOKENS} for each
 * input item. History the provider keeps (`previousResponseId`, `conversationId`) is not in the request
 * and not in the estimate.
 */
export function requestTokens(request: ModelRequest): number {
  let files = 0;
  const input =
    typeof request.input === 'string'
      ? request.input
      : JSON.stringify(request.input, (_key, value: unknown) => {
          const type = (value as { type?: unknown } | null)?.type;
          if (type !== 'input_image' && type !== 'input_file') return value;
          files++;
          return null;
        });
  const items = typeof request.input === 'string' ? 1 : request.input.length;
  const bytes =
    Buffer.byteLength(request.systemInstructions ?? '') +
    Buffer.byteLength(input) +
    Buffer.byteLength(JSON.stringify(request.tools ?? [])) +
    Buffer.byteLength(JSON.stringify(request.handoffs ?? [])) +
    (typeof request.outputType === 'string' ? 0 : Buffer.byteLength(JSON.stringify(request.outputType)));
  return bytesToTokens(bytes) + ITEM_TOKENS * items + FILE_TOKENS * files;
}
