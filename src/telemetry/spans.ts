import { SPAN_KIND_INTERNAL, SPAN_STATUS_ERROR, type OtelAttributes, type OtelSpan } from './otel.js';
import type { Telemetry } from './Telemetry.js';

// The spans of guarded calls, per the OpenTelemetry GenAI semantic conventions (v1.41 names): a tool
// call's `execute_tool {tool}` span and a model call's `chat {model}` span, each the active span while
// the call's checks run, so the decisions they record land on it. When a framework made the span of the
// call already (the AI SDK's telemetry), leash adds to that span rather than making a second one.

const OPERATION = 'gen_ai.operation.name';
const TOOL_NAME = 'gen_ai.tool.name';
const TOOL_CALL_ID = 'gen_ai.tool.call.id';
const TOOL_TYPE = 'gen_ai.tool.type';
const TOOL_ARGUMENTS = 'gen_ai.tool.call.arguments';
const TOOL_RESULT = 'gen_ai.tool.call.result';
const REQUEST_MODEL = 'gen_ai.request.model';
const INPUT_TOKENS = 'gen_ai.usage.input_tokens';
const OUTPUT_TOKENS = 'gen_ai.usage.output_tokens';
const CACHE_READ_TOKENS = 'gen_ai.usage.cache_read.input_tokens';
const ERROR_TYPE = 'error.type';
const PLAN_ID = 'leash.plan.id';
const COST = 'leash.cost';

const EXECUTE_TOOL = 'execute_tool';
const CHAT = 'chat';

/** `SpanKind.CLIENT` of the API: a model call goes to a provider. */
const SPAN_KIND_CLIENT = 2;

/** The most characters of a tool's input or output recorded on its span. */
export const MAX_CONTENT_CHARS = 8 * 1024;

/** The AI SDK's span of a tool's execute, and the attribute naming its call. */
const AI_SDK_TOOL_SPAN = 'ai.toolCall';
const AI_SDK_TOOL_CALL_ID = 'ai.toolCall.id';

/** A guarded tool call, as its span tells of it. */
export interface TracedToolCall {
  readonly toolName: string;
  /** Absent for a call refused before it had one. */
  readonly toolCallId?: string;
  readonly input?: unknown;
}

/** What a guarded call came to, as its span tells of it. */
export interface TracedOutcome {
  readonly allowed: boolean;
  readonly check?: { readonly eventType: string; readonly reason: string };
  readonly output?: unknown;
}

/** What a metered model call used and cost. */
export interface TracedUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedInputTokens?: number;
}

/** What a metered model call came to: its usage and cost when it ran. */
export interface TracedModelOutcome extends TracedOutcome {
  readonly usage?: TracedUsage;
  readonly cost?: number;
}

/** A span as the SDK makes it: its name and attributes readable (the API does not promise them). */
interface ReadableSpan {
  readonly name?: unknown;
  readonly attributes?: Readonly<Record<string, unknown>>;
}

/** The name and attributes of `span`, when its implementation exposes them. */
function readable(span: OtelSpan): { name: string; attributes: Readonly<Record<string, unknown>> } | null {
  const { name, attributes } = span as ReadableSpan;
  return typeof name === 'string' && typeof attributes === 'object' && attributes !== null
    ? { name, attributes }
    : null;
}

/** Whether `span` is a framework's span of the tool call `id`: the AI SDK's, or an `execute_tool` one. */
function isSpanOfToolCall(span: OtelSpan, id: string): boolean {
  const s = readable(span);
  if (s === null) return false;
  if (s.name === AI_SDK_TOOL_SPAN) return s.attributes[AI_SDK_TOOL_CALL_ID] === id;
  return s.name.startsWith(EXECUTE_TOOL) && s.attributes[TOOL_CALL_ID] === id;
}

/**
 * Whether `span` is a framework's span of one model call: the AI SDK's `ai.<fn>.doGenerate` or
 * `ai.<fn>.doStream`, or a GenAI inference span (`chat …`, `text_completion …`, `generate_content …`).
 */
function isModelCallSpan(span: OtelSpan): boolean {
  const s = readable(span);
  if (s === null) return false;
  const { name } = s;
  if (name.startsWith('ai.')) return name.endsWith('.doGenerate') || name.endsWith('.doStream');
  return (
    name.startsWith(`${CHAT} `) || name.startsWith('text_completion ') || name.startsWith('generate_content ')
  );
}

/** `value` as JSON text cut to {@link MAX_CONTENT_CHARS}, or undefined when it has none. */
export function contentText(value: unknown): string | undefined {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    return undefined; // a cycle or a bigint: nothing recorded rather than a failed call
  }
  if (text === undefined) return undefined;
  return text.length > MAX_CONTENT_CHARS ? `${text.slice(0, MAX_CONTENT_CHARS - 1)}…` : text;
}

/**
 * What `error.type` says of an error: a refusal's event type for a guard's violation, else the error's
 * name, or its class when its name is the generic `Error`; `_OTHER` for a value that is no Error.
 */
export function errorType(error: unknown): string {
  const check = (error as { readonly check?: { readonly eventType?: unknown } } | null)?.check;
  if (error instanceof Error && typeof check?.eventType === 'string') return check.eventType;
  if (!(error instanceof Error)) return '_OTHER';
  if (error.name !== '' && error.name !== 'Error') return error.name;
  const made = (error.constructor as { readonly name?: unknown } | undefined)?.name;
  return typeof made === 'string' && made !== '' ? made : 'Error';
}

/** Marks `span` as failed: a refusal by its check's event type, a thrown error by {@link errorType}. */
function failed(span: OtelSpan, type: string, message: string | undefined): void {
  span.setAttribute(ERROR_TYPE, type);
  span.setStatus(message === undefined ? { code: SPAN_STATUS_ERROR } : { code: SPAN_STATUS_ERROR, message });
}

function threw(span: OtelSpan, error: unknown): void {
  failed(span, errorType(error), error instanceof Error ? error.message : undefined);
}

function refused(span: OtelSpan, outcome: TracedOutcome): void {
  const check = outcome.check;
  failed(span, check?.eventType ?? '_OTHER', check?.reason);
}

/** The span `run` is traced on: a framework's (`adopted`, left to it to end), or one leash started. */
interface Traced {
  readonly span: OtelSpan;
  readonly adopted: boolean;
}

/** Runs `run` with `traced` as the active span (a framework's span is active already), never throwing. */
function runOn<T>(telemetry: Telemetry, traced: Traced, run: () => Promise<T>): Promise<T> {
  try {
    return traced.adopted ? run() : telemetry.withSpan(traced.span, run);
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * Runs one guarded tool call, from its first check to its settled outcome, with its `execute_tool`
 * span active: the framework's span of the call when one is active (the AI SDK's `ai.toolCall`, or an
 * `execute_tool` span with the call's id), else a new one, a child of the active span. A refusal sets
 * the span's status to ERROR and `error.type` to the refusing check's event type; an error the call
 * rejects with, to the error's name. The input and output are recorded only with `recordContent`.
 */
export function traceToolCall<O extends TracedOutcome>(
  telemetry: Telemetry,
  planId: string,
  call: TracedToolCall,
  run: () => Promise<O>,
): Promise<O> {
  const { toolName, toolCallId } = call;
  const attributes: OtelAttributes = {
    [OPERATION]: EXECUTE_TOOL,
    [TOOL_NAME]: toolName,
    [TOOL_CALL_ID]: toolCallId,
    [TOOL_TYPE]: 'function',
    [PLAN_ID]: planId,
  };
  const active = telemetry.activeSpan();
  const traced: Traced =
    active !== undefined && toolCallId !== undefined && isSpanOfToolCall(active, toolCallId)
      ? { span: active, adopted: true }
      : {
          span: telemetry.tracer.startSpan(
            `${EXECUTE_TOOL} ${toolName}`,
            { kind: SPAN_KIND_INTERNAL, attributes },
            telemetry.api.context.active(),
          ),
          adopted: false,
        };
  const { span, adopted } = traced;
  const recording = span.isRecording();
  if (adopted) span.setAttributes(attributes);
  if (recording && telemetry.recordContent && call.input !== undefined) {
    const text = contentText(call.input);
    if (text !== undefined) span.setAttribute(TOOL_ARGUMENTS, text);
  }
  return runOn(telemetry, traced, run).then(
    (outcome) => {
      if (!outcome.allowed) refused(span, outcome);
      else if (recording && telemetry.recordContent) {
        const text = contentText(outcome.output);
        if (text !== undefined) span.setAttribute(TOOL_RESULT, text);
      }
      if (!adopted) span.end();
      return outcome;
    },
    (error: unknown) => {
      threw(span, error);
      if (!adopted) span.end();
      throw error;
    },
  );
}

/**
 * The span of one metered model call: the framework's model span when one is active (the AI SDK's
 * `ai.generateText.doGenerate`, whose `doGenerate` leash's model wrapper runs in), else a new
 * `chat {model}` span, a child of the active span. Settled once: its usage and cost, a refusal, or an
 * error; a span leash started is ended then.
 */
export class ModelCallSpan {
  readonly #telemetry: Telemetry;
  readonly #traced: Traced;
  #settled = false;

  /** Adopts or starts the span of a model call of `modelId` (unknown when undefined) under `planId`. */
  static start(telemetry: Telemetry, planId: string, modelId: string | undefined): ModelCallSpan {
    const active = telemetry.activeSpan();
    if (active !== undefined && isModelCallSpan(active)) {
      const attributes = readable(active)?.attributes ?? {};
      const more: OtelAttributes = { [PLAN_ID]: planId };
      // The framework's own names of the call are kept: leash's model id is its price table's key.
      if (attributes[OPERATION] === undefined) more[OPERATION] = CHAT;
      if (attributes[REQUEST_MODEL] === undefined && modelId !== undefined) more[REQUEST_MODEL] = modelId;
      active.setAttributes(more);
      return new ModelCallSpan(telemetry, { span: active, adopted: true });
    }
    const span = telemetry.tracer.startSpan(
      modelId === undefined ? CHAT : `${CHAT} ${modelId}`,
      {
        kind: SPAN_KIND_CLIENT,
        attributes: { [OPERATION]: CHAT, [REQUEST_MODEL]: modelId, [PLAN_ID]: planId },
      },
      telemetry.api.context.active(),
    );
    return new ModelCallSpan(telemetry, { span, adopted: false });
  }

  private constructor(telemetry: Telemetry, traced: Traced) {
    this.#telemetry = telemetry;
    this.#traced = traced;
  }

  /** Runs `run` with this span active. */
  run<T>(run: () => Promise<T>): Promise<T> {
    return runOn(this.#telemetry, this.#traced, run);
  }

  /**
   * The call was settled: what it used (when known) and what it cost; `error`, the failure of a call
   * released for one (its class unknown: `_OTHER`).
   */
  settled(usage: TracedUsage | undefined, cost: number, error?: string): void {
    if (!this.#settle()) return;
    const { span } = this.#traced;
    const attributes: OtelAttributes = { [COST]: cost };
    if (usage !== undefined) {
      attributes[INPUT_TOKENS] = usage.inputTokens;
      attributes[OUTPUT_TOKENS] = usage.outputTokens;
      if ((usage.cachedInputTokens ?? 0) > 0) attributes[CACHE_READ_TOKENS] = usage.cachedInputTokens;
    }
    span.setAttributes(attributes);
    if (error !== undefined) failed(span, '_OTHER', error);
    this.#end();
  }

  /** A guard refused the call. */
  refused(outcome: TracedOutcome): void {
    if (!this.#settle()) return;
    refused(this.#traced.span, outcome);
    this.#end();
  }

  /** The call, or its settling, failed with `error`. */
  threw(error: unknown): void {
    if (!this.#settle()) return;
    threw(this.#traced.span, error);
    this.#end();
  }

  /** Whether this is the first settling. */
  #settle(): boolean {
    if (this.#settled) return false;
    this.#settled = true;
    return true;
  }

  #end(): void {
    if (!this.#traced.adopted) this.#traced.span.end();
  }
}

/**
 * Runs one metered model call, from its first check to its settling, with its model span active
 * (see {@link ModelCallSpan}): its usage and cost recorded, or its refusal or error.
 */
export function traceModelCall<O extends TracedModelOutcome>(
  telemetry: Telemetry,
  planId: string,
  modelId: string | undefined,
  run: () => Promise<O>,
): Promise<O> {
  const span = ModelCallSpan.start(telemetry, planId, modelId);
  return span.run(run).then(
    (outcome) => {
      if (outcome.allowed) span.settled(outcome.usage, outcome.cost ?? 0);
      else span.refused(outcome);
      return outcome;
    },
    (error: unknown) => {
      span.threw(error);
      throw error;
    },
  );
}

/**
 * Opens a model call its caller settles later (a stream) with its model span active (see
 * {@link ModelCallSpan}): a refusal or error recorded at once; once opened, the span is handed to the
 * call's handle, which records how it was settled (and ends a span leash started then).
 */
export function traceOpenedModelCall<
  O extends TracedOutcome & { readonly handle?: { trace(span: ModelCallSpan): void } },
>(telemetry: Telemetry, planId: string, modelId: string | undefined, open: () => Promise<O>): Promise<O> {
  const span = ModelCallSpan.start(telemetry, planId, modelId);
  return span.run(open).then(
    (opened) => {
      if (!opened.allowed) span.refused(opened);
      else opened.handle?.trace(span);
      return opened;
    },
    (error: unknown) => {
      span.threw(error);
      throw error;
    },
  );
}

/** The model id of a model call's request, for its span: undefined while it is not known to be one. */
export function modelIdOf(request: unknown): string | undefined {
  const modelId =
    typeof request === 'object' && request !== null ? (request as { modelId?: unknown }).modelId : undefined;
  return typeof modelId === 'string' ? modelId : undefined;
}
