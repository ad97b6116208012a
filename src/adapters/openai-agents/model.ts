import {
  getDefaultModel,
  Usage,
  type Model,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type StreamEvent,
} from '@openai/agents';
import { endedText } from '../../agent/denied.js';
import { guardOptions, type GuardOption } from '../../agent/guardOption.js';
import type { ModelCallHandle } from '../../agent/modelCalls.js';
import { bytesToTokens, type TokenEstimate, type TokenUsage } from '../../agent/prices.js';
import type { RunGuard } from '../../agent/RunGuard.js';
import { errorTail, invalid, isGuardrailViolationError } from '../../errors.js';
import type { GuardCheck } from '../../guardrails/GuardCheck.js';
import { eitherAborts } from '../../signals.js';

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

const DEFAULT_MAX_OUTPUT = 4096;
/** Tokens an input item costs beyond its text: its role and framing. */
const ITEM_TOKENS = 4;

/**
 * The model with each call metered against the plan's budget, for `run` and `run(…, { stream: true })`
 * alike: before a call, the run ends (a last message saying which limit, so the run's output and state
 * are kept) when the wall clock, the steps or the budget leave nothing to do; otherwise the price of its
 * estimate (the request's tokens, and its `maxTokens`) is set aside, and what its usage cost is spent —
 * for a stream, from its `response_done` event. A call that fails gives the estimate back; a stream cut
 * short is charged the estimate. Give it to an `Agent` as its `model` (a Model instance an agent holds
 * bypasses the run's model provider: see {@link guardModelProvider}).
 */
export function guardModel(model: Model, options: GuardModelOptions): Model {
  const o = checked(options);
  if (typeof model?.getResponse !== 'function' || typeof model.getStreamedResponse !== 'function')
    invalid('model', 'a Model with getResponse and getStreamedResponse', model);
  const own = (model as { model?: unknown }).model;
  const modelId = o.modelId ?? (typeof own === 'string' && own.length > 0 ? own : undefined);
  if (modelId === undefined) invalid('modelId', 'the price key of the model, a non-empty string', modelId);
  return metered(model, o.guard, modelId, o.maxOut);
}

/**
 * The provider with every model it gives metered as {@link guardModel} meters it, priced under the name
 * the agent asked for (the default model under `modelId`, else the SDK's default name). Give it to a
 * `Runner` as its `modelProvider`: agents that name their model by a string then need nothing else.
 */
export function guardModelProvider(provider: ModelProvider, options: GuardModelOptions): ModelProvider {
  const o = checked(options);
  if (typeof provider?.getModel !== 'function') invalid('provider', 'a ModelProvider', provider);
  return {
    async getModel(name?: string): Promise<Model> {
      const inner = await provider.getModel(name);
      const modelId = name !== undefined && name.length > 0 ? name : (o.modelId ?? getDefaultModel());
      return metered(inner, o.guard, modelId, o.maxOut);
    },
  };
}

/** The options, checked. */
function checked(options: GuardModelOptions): {
  guard: RunGuard;
  modelId: string | undefined;
  maxOut: number;
} {
  const o = guardOptions(options, ['modelId', 'maxOutputTokens']);
  const modelId = o['modelId'];
  if (modelId !== undefined && (typeof modelId !== 'string' || modelId.length === 0))
    invalid('modelId', 'the price key of the model, a non-empty string', modelId);
  const maxOut = o['maxOutputTokens'] ?? DEFAULT_MAX_OUTPUT;
  if (typeof maxOut !== 'number' || !Number.isSafeInteger(maxOut) || maxOut < 1)
    invalid('maxOutputTokens', 'an integer >= 1', maxOut);
  return { guard: o['guard'] as RunGuard, modelId: modelId as string | undefined, maxOut };
}

function metered(inner: Model, guard: RunGuard, modelId: string, maxOut: number): Model {
  const estimateOf = (request: ModelRequest): TokenEstimate => ({
    inputTokens: requestTokens(request),
    maxOutputTokens: request.modelSettings?.maxTokens ?? maxOut,
  });
  const wrapped: Model = {
    async getResponse(request: ModelRequest): Promise<ModelResponse> {
      const estimate = estimateOf(request);
      const limit = await guard.limitReached();
      if (limit !== null) return ended(limit);
      try {
        const done = await guard.modelCall({
          modelId,
          estimate,
          run: async (ctx) => {
            const [signal, stop] = eitherAborts(request.signal, ctx.signal);
            try {
              const response = await inner.getResponse({ ...request, signal });
              return { output: response, usage: usageOf(response.usage, estimate) };
            } finally {
              stop();
            }
          },
        });
        return done.allowed ? done.output : ended(done.check);
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
        for await (const event of inner.getStreamedResponse({ ...request, signal })) {
          if (wallClock.aborted) break;
          meter.started = true;
          if (event.type === 'response_done') await meter.commit(event.response.usage);
          yield event;
        }
      } catch (error) {
        if (!wallClock.aborted) {
          await meter.failed(error);
          throw error;
        }
      } finally {
        // Ended without its response_done, or its reader stopped reading: charged the estimate.
        await meter.abandon();
        stop();
      }
      if (wallClock.aborted) {
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
  #settled = false;

  constructor(
    readonly handle: ModelCallHandle,
    readonly estimate: TokenEstimate,
  ) {}

  async commit(usage: UsageLike | undefined): Promise<void> {
    if (this.#settled) return;
    this.#settled = true;
    await this.handle.commit(usageOf(usage, this.estimate));
  }

  /** A stream that failed before its first event billed nothing: the estimate is given back. */
  async failed(error: unknown): Promise<void> {
    if (this.#settled || this.started) return;
    this.#settled = true;
    await this.handle.release({ error: errorTail(error) });
  }

  async abandon(): Promise<void> {
    if (this.#settled) return;
    this.#settled = true;
    await this.handle.abandon();
  }
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
  if (input === 0) return { inputTokens: estimate.inputTokens, outputTokens: estimate.maxOutputTokens };
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
 * input items, tools, handoffs and output schema as JSON, and {@link ITEM_TOKENS} for each input item.
 */
export function requestTokens(request: ModelRequest): number {
  const items = typeof request.input === 'string' ? 1 : request.input.length;
  const bytes =
    Buffer.byteLength(request.systemInstructions ?? '') +
    Buffer.byteLength(typeof request.input === 'string' ? request.input : JSON.stringify(request.input)) +
    Buffer.byteLength(JSON.stringify(request.tools ?? [])) +
    Buffer.byteLength(JSON.stringify(request.handoffs ?? [])) +
    (typeof request.outputType === 'string' ? 0 : Buffer.byteLength(JSON.stringify(request.outputType)));
  return bytesToTokens(bytes) + ITEM_TOKENS * items;
}

/** The message a run a limit ended reads last: its final output. */
function endedMessage(check: GuardCheck) {
  return {
    type: 'message' as const,
    role: 'assistant' as const,
    status: 'completed' as const,
    content: [{ type: 'output_text' as const, text: endedText(check) }],
  };
}

/** The answer of a call the limits did not let happen: the message saying why, nothing used. */
function ended(check: GuardCheck): ModelResponse {
  return { usage: new Usage(), output: [endedMessage(check)] };
}

/** {@link ended} as a stream's events: the text, then the response. */
async function* endedEvents(check: GuardCheck): AsyncIterable<StreamEvent> {
  const message = endedMessage(check);
  yield { type: 'output_text_delta', delta: endedText(check) };
  yield {
    type: 'response_done',
    response: {
      id: 'leash-ended',
      usage: { requests: 0, inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      output: [message],
    },
  };
}
