import { MODEL_OPTIONS } from '../modelOptions.js';
import { parseOptions } from '../../validation.js';
import { AIMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { interrupt, isGraphBubbleUp } from '@langchain/langgraph';
import { createMiddleware, StructuredOutputParsingError } from 'langchain';
import { type GuardOption } from '../../agent/guardOption.js';
import { bytesToTokens, type TokenUsage } from '../../agent/prices.js';
import { deniedText, endedText } from '../../agent/denied.js';
import { outputCap } from './cap.js';
import { invalid } from '../../errors.js';
import { parseIsoMs } from '../../iso.js';
import { isPlainObject } from '../../json.js';
import { inputHash } from '../../service/hash.js';
import type { Approval } from '../../store/GuardrailStore.js';

export interface LeashMiddlewareOptions extends GuardOption {
  /**
   * The price key of the agent's model: the model name the app configured. Default the model's own
   * `model` or `modelName`; give it when the provider reports a dated snapshot, or the model names none.
   */
  readonly modelId?: string;
  /** Output tokens a model call is set aside for when the model sets no `maxTokens`. Default 4096. */
  readonly maxOutputTokens?: number;
}

/** What leash asks a person through LangGraph's `interrupt()`: the approval to decide in leash. */
export interface LeashInterrupt {
  readonly type: 'leash-approval';
  readonly approvalId: string;
  readonly toolName: string;
  readonly args: unknown;
  readonly expiresAt: string;
}

/** Tokens a tool offered to the model costs beyond its name and description: its parameters' schema. */
const TOOL_TOKENS = 100;
/** Tokens a message costs beyond its text: its role and framing. */
const MESSAGE_TOKENS = 4;

/** The prompt's tokens, estimated from its bytes (a token per 3): content, and tool calls asked for. */
function messagesTokens(messages: readonly BaseMessage[]): number {
  let bytes = 0;
  for (const m of messages) {
    bytes += Buffer.byteLength(typeof m.content === 'string' ? m.content : JSON.stringify(m.content));
    const calls = (m as { tool_calls?: unknown }).tool_calls;
    if (Array.isArray(calls) && calls.length > 0) bytes += Buffer.byteLength(JSON.stringify(calls));
  }
  return bytesToTokens(bytes) + MESSAGE_TOKENS * messages.length;
}

/** The messages since the model last answered: what the next call's prompt adds. */
function sinceLastAnswer(messages: readonly BaseMessage[]): BaseMessage[] {
  let i = messages.length;
  while (i > 0 && !AIMessage.isInstance(messages[i - 1])) i--;
  return messages.slice(i);
}

/**
 * What a model's answer says it used, or undefined when it says nothing: the message's `usage_metadata`
 * (a structured answer's is on the model's message among those it holds). `input_tokens` include cache reads, priced at the
 * cached rate.
 */
function usageOf(output: unknown): TokenUsage | undefined {
  // A structured answer holds the model's message, then the messages LangChain made of it.
  const messages = (output as { messages?: unknown } | null)?.messages;
  const list: unknown[] = Array.isArray(messages) ? messages : [output];
  let u: Record<string, unknown> | undefined;
  for (let i = list.length - 1; i >= 0 && u === undefined; i--) {
    u = (list[i] as { usage_metadata?: Record<string, unknown> } | null)?.usage_metadata ?? undefined;
  }
  if (u === undefined) return undefined;
  const n = (v: unknown): number => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0);
  const details = u['input_token_details'] as Record<string, unknown> | undefined;
  const input = n(u['input_tokens']);
  return {
    inputTokens: input,
    outputTokens: n(u['output_tokens']),
    cachedInputTokens: Math.min(input, n(details?.['cache_read'])),
  };
}

/** A model call's prompt: its system message, its messages, and the tools it is offered. */
function promptTokens(request: { systemMessage?: unknown; messages: unknown; tools?: unknown }): number {
  const system = request.systemMessage as BaseMessage | undefined;
  const messages = request.messages as BaseMessage[];
  let tokens = messagesTokens(system === undefined ? messages : [system, ...messages]);
  const tools = Array.isArray(request.tools)
    ? (request.tools as { name?: unknown; description?: unknown }[])
    : [];
  for (const t of tools) {
    tokens +=
      TOOL_TOKENS + bytesToTokens(Buffer.byteLength(`${String(t.name)} ${String(t.description ?? '')}`));
  }
  return tokens;
}

/** The model's own name for itself (`model`, else `modelName`), or undefined. */
function modelNameOf(model: unknown): string | undefined {
  const m = model as { model?: unknown; modelName?: unknown } | null;
  const name = typeof m?.model === 'string' ? m.model : m?.modelName;
  return typeof name === 'string' && name.length > 0 ? name : undefined;
}

/** The arguments a resume value `{ type: 'edit', args }` gives the call instead, or undefined. */
function editOf(resume: unknown): Record<string, unknown> | undefined {
  if (!isPlainObject(resume) || resume['type'] !== 'edit') return undefined;
  const args = resume['args'];
  if (!isPlainObject(args)) invalid('resume.args', 'the edited arguments, an object', args);
  return args;
}

/** Whether a person may still decide the approval: pending and not expired. */
function awaiting(approval: Approval | null, now: number): approval is Approval {
  return approval !== null && approval.status === 'pending' && parseIsoMs(approval.expiresAt) >= now;
}

/**
 * A `createAgent` middleware that holds the agent to a leash run guard (one guard per invocation):
 * - before each model call, ends the run (`jumpTo: 'end'`, with a message saying why) when the wall
 *   clock, the steps or the budget leave nothing to do;
 * - around each model call, sets its estimated cost aside and charges what `usage_metadata` says it used
 *   (a call the budget or the clock does not allow is not made: the run ends with a message saying why);
 *   a model that keeps its output cap in `maxTokens` (or `maxOutputTokens`) and set none is called with
 *   the cap the estimate set aside for;
 * - around each tool call, the guard's checks, retries and audit; a call that needs a person pauses the
 *   graph with `interrupt()` behind a leash approval. Resuming (`Command({ resume })`, any value) runs the
 *   tool only with the unused leash grant for that tool call id and arguments, decided with
 *   `leash approve`, the dashboard or `service.approve`; resuming while nobody decided pauses again.
 *   Resuming with `{ type: 'edit', args }` asks for the call with those arguments instead: a new
 *   approval (its decision id the call's id with `#edit-<hash>`), and a new pause until it is decided.
 *   A denied call is a `ToolMessage` with `status: 'error'` saying why: the model reads it.
 * Opening an approval, taking a step and the call's checks are idempotent per tool call id, since
 * LangGraph runs an interrupted tool again from its start on resume.
 */
export function leashMiddleware(options: LeashMiddlewareOptions) {
  const { guard, modelId, maxOutputTokens: maxOut } = parseOptions(MODEL_OPTIONS, options);
  return createMiddleware({
    name: 'leash',
    beforeModel: {
      canJumpTo: ['end'],
      hook: async (state) => {
        const added = messagesTokens(sinceLastAnswer(state.messages as BaseMessage[]));
        const limit = await guard.limitReached({ moreInputTokens: added });
        if (limit === null) return undefined;
        return {
          jumpTo: 'end' as const,
          messages: [new AIMessage(endedText(limit))],
        };
      },
    },
    wrapModelCall: async (request, handler) => {
      const id = (modelId as string | undefined) ?? modelNameOf(request.model) ?? 'unnamed-model';
      // Capped at what is set aside, so that its answer is no longer than the output reserved for.
      const cap = outputCap(request.model, maxOut as number);
      const estimate = { inputTokens: promptTokens(request), maxOutputTokens: cap.tokens };
      // Used as much as it may have: a call whose answer says nothing of its usage, or whose answer
      // LangChain could not parse once the provider had answered (and billed).
      const all = { inputTokens: estimate.inputTokens, outputTokens: estimate.maxOutputTokens };
      let unparsed: unknown;
      const done = await guard.modelCall({
        modelId: id,
        estimate,
        run: async () => {
          try {
            const output = await handler({ ...request, model: cap.model as typeof request.model });
            return { output, usage: usageOf(output) ?? all };
          } catch (error) {
            if (!(error instanceof StructuredOutputParsingError)) throw error;
            unparsed = error;
            return { output: undefined, usage: all };
          }
        },
      });
      if (unparsed !== undefined) throw unparsed;
      if (done.allowed) return done.output as Awaited<ReturnType<typeof handler>>;
      return new AIMessage(endedText(done.check));
    },
    wrapToolCall: async (request, handler) => {
      const { id, name, args } = request.toolCall;
      const toolCallId = id ?? invalid('toolCall.id', 'the id the model gave the call', id);
      let call = { toolCallId, toolName: name, input: args as unknown };
      let approval = await guard.approvalFor(call);
      // A call a person must decide pauses once, and again for as long as nobody decided. A value
      // given to resume decides nothing, but an edit changes the call: the edited call is asked for on
      // its own, under its own id.
      // On a resume the pauses are passed again in order, so that the stored resume values (an edit)
      // are read whatever was decided meanwhile; only a call that ran already does not pause.
      let pause = approval !== null && approval.status !== 'used';
      while (approval !== null && (pause || awaiting(approval, guard.service.clock.now()))) {
        pause = false;
        const asked: LeashInterrupt = {
          type: 'leash-approval',
          approvalId: approval.id,
          toolName: name,
          args: call.input,
          expiresAt: approval.expiresAt,
        };
        const edited = editOf(interrupt(asked));
        if (edited !== undefined) {
          const hash = inputHash({ tool: name, input: edited });
          call = { toolCallId: `${toolCallId}#edit-${hash.slice(0, 16)}`, toolName: name, input: edited };
        }
        approval = await guard.approvalFor(call);
      }
      const outcome = await guard.toolCall({
        ...call,
        signal: request.runtime?.signal,
        run: async (ctx) => {
          try {
            return await handler({
              ...request,
              toolCall: { ...request.toolCall, args: ctx.input as typeof args },
            });
          } catch (error) {
            // LangGraph's own signals (a tool's interrupt, a command for the parent) are not failures:
            // never retried, passed on as they are.
            if (isGraphBubbleUp(error)) Object.defineProperty(error, 'retryable', { value: false });
            throw error;
          }
        },
      });
      if (outcome.allowed) return outcome.output;
      return new ToolMessage({
        content: deniedText(outcome.check),
        tool_call_id: toolCallId,
        name,
        status: 'error',
      });
    },
  });
}
