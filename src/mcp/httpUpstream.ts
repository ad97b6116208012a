import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

// An upstream reached over Streamable HTTP: the MCP SDK's client transport, told of one thing it does not
// report itself. A request's answer comes on the SSE stream of its POST; when that stream ends (or
// breaks) before the answer, the transport says nothing unless it can resume the stream, and the request
// would wait forever. Here each such end is reported through `onerror`, with the ids left unanswered.

type Id = string | number;

/**
 * The SSE stream of a POST ended with these requests unanswered. `resumable` when the server gave its
 * events ids: the transport then resumes the stream (`Last-Event-ID`) and the answers may still come.
 */
export class StreamEndedError extends Error {
  constructor(
    readonly ids: readonly Id[],
    readonly resumable: boolean,
  ) {
    super(`the upstream's stream of request ${ids.join(', ')} ended before its answer`);
    this.name = 'StreamEndedError';
  }
}

/** Whether an error says the transport gave up resuming a stream: answers still due will not come. */
export function resumingFailed(error: unknown): boolean {
  const message = error instanceof Error ? error.message : '';
  return message.startsWith('Maximum reconnection attempts') || message.startsWith('Failed to reconnect');
}

/** The ids of the requests in a POST's JSON-RPC body (one message or a batch). */
function requestIds(body: unknown): Id[] {
  if (typeof body !== 'string') return [];
  try {
    const parsed: unknown = JSON.parse(body);
    const messages: unknown[] = Array.isArray(parsed) ? parsed : [parsed];
    return messages.flatMap((m) => {
      const { id, method } = (m ?? {}) as { id?: unknown; method?: unknown };
      return typeof method === 'string' && (typeof id === 'string' || typeof id === 'number') ? [id] : [];
    });
  } catch {
    return [];
  }
}

/** An event-id line of an SSE stream, in any chunk. */
const EVENT_ID = /(?:^|[\r\n])id:/;

/** The transport to `url`; its `onerror` is also told of a POST stream that ended unanswered. */
export function httpUpstream(url: URL): StreamableHTTPClientTransport {
  const watched = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init);
    const ids = init?.method === 'POST' ? requestIds(init.body) : [];
    const sse = response.headers.get('content-type')?.includes('text/event-stream') === true;
    if (ids.length === 0 || !sse || response.body === null) return response;
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let resumable = false;
    // Told once the SDK had its turn at what came last: an answer in the final chunk is delivered first.
    const ended = (): void =>
      void setTimeout(() => transport.onerror?.(new StreamEndedError(ids, resumable)), 10);
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            controller.close();
            return ended();
          }
          resumable ||= EVENT_ID.test(decoder.decode(value, { stream: true }));
          controller.enqueue(value);
        } catch (error) {
          controller.error(error);
          ended();
        }
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
  const transport = new StreamableHTTPClientTransport(url, { fetch: watched });
  return transport;
}
