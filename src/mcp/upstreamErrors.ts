// What a failure on the way to the upstream says: whether a request can have reached it, whether the
// upstream is gone, and which requests a stream that ended left unanswered.

/** A JSON-RPC request id. */
export type Id = string | number;

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

/** The network error under a failed fetch (`fetch failed`, its cause `ECONNREFUSED`), or the error's own code. */
export function codeOf(error: unknown): unknown {
  const e = error as { code?: unknown; cause?: { code?: unknown } } | null;
  return e?.cause?.code ?? e?.code;
}

/** Errors of a connection that never opened, or of a pipe the other end closed: nothing was taken. */
const UNOPENED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE']);

/**
 * Whether a send that failed provably never reached the upstream: no connection (or a closed pipe), or an
 * HTTP refusal of the request itself (a 4xx but 408) from the server's transport, before any handler.
 */
export function neverDelivered(error: unknown): boolean {
  if (error instanceof Error && error.message === 'Not connected') return true;
  const code = codeOf(error);
  if (typeof code === 'number') return code >= 400 && code < 500 && code !== 408;
  return typeof code === 'string' && UNOPENED.has(code);
}

/** Whether a failed ping says the upstream is gone: no connection, or its session unknown (404). */
export function unreachable(error: unknown): boolean {
  if (error instanceof Error && error.message === 'Not connected') return true;
  const code = codeOf(error);
  return code === 404 || (typeof code === 'string' && UNOPENED.has(code));
}
