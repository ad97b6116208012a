import { Usage, type ModelResponse, type StreamEvent } from '@openai/agents';
import { ENDED_PREFIX, endedText } from '../../agent/denied.js';
import type { GuardCheck } from '../../GuardCheck.js';

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
export function ended(check: GuardCheck): ModelResponse {
  return { usage: new Usage(), output: [endedMessage(check)] };
}

/** {@link ended} as a stream's events: the text, then the response. */
export async function* endedEvents(check: GuardCheck): AsyncIterable<StreamEvent> {
  const message = endedMessage(check);
  yield { type: 'output_text_delta', delta: endedText(check) };
  yield {
    type: 'response_done',
    response: {
      // No id: the SDK chains the next call on a response id, and this response never reached a provider.
      id: '',
      usage: { requests: 0, inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      output: [message],
    },
  };
}

/**
 * The text leash ended the run with, when the run's last output is leash's last message, else null. For
 * an agent with a structured `outputType`, where that message is not valid output and the SDK calls the
 * run's `errorHandlers.invalidFinalOutput`: a handler that finds it can end the run with a value of the
 * app's schema instead of an error.
 */
export function leashEnded(runData: { readonly output: readonly unknown[] }): string | null {
  const last = runData.output.at(-1) as { type?: unknown; role?: unknown; content?: unknown } | undefined;
  if (last?.role !== 'assistant' || !Array.isArray(last.content)) return null;
  const text = (last.content as { type?: unknown; text?: unknown }[])
    .map((part) => (part.type === 'output_text' && typeof part.text === 'string' ? part.text : ''))
    .join('');
  return text.startsWith(ENDED_PREFIX) ? text : null;
}
