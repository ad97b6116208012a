import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Reply, RpcError } from './pending.js';
import type { Id } from './upstreamErrors.js';

// What goes to the client, in order: every message is sent in the order it was queued, and an answer
// still being made can keep its place. The client's requests in flight are known here: an answer ends
// one, and the HTTP front sends what belongs to one on that request's stream.

type Params = Record<string, unknown>;

/** The code of an answer given for an upstream that cannot answer (the SDK's ConnectionClosed). */
export const UPSTREAM_GONE_CODE = -32000;

/** What a request was answered with, as a message body. */
export function body(reply: Reply): { result: Params } | { error: RpcError } {
  if ('lost' in reply) return { error: { code: UPSTREAM_GONE_CODE, message: reply.lost } };
  return reply;
}

export class ToClient {
  readonly #client: Transport;
  /** The client's requests not yet answered, each with what aborts it, in the order they came. */
  readonly #inFlight = new Map<Id, AbortController>();
  /** Places kept in the queue for answers still being made, by request id. */
  readonly #reserved = new Map<Id, (reply: Reply) => void>();
  #queue: Promise<void> = Promise.resolve();

  constructor(client: Transport) {
    this.#client = client;
  }

  /** Settles once everything queued so far was sent. */
  get sent(): Promise<void> {
    return this.#queue;
  }

  /** Takes a client request in flight; its signal aborts when it is cancelled or the session ends. */
  begin(id: Id): AbortSignal {
    const abort = new AbortController();
    this.#inFlight.set(id, abort);
    return abort.signal;
  }

  /** Aborts the request `id` still in flight, if it is. */
  abort(id: Id, reason: Error): void {
    this.#inFlight.get(id)?.abort(reason);
  }

  abortAll(reason: Error): void {
    for (const abort of this.#inFlight.values()) abort.abort(reason);
  }

  /** `related` while it is a client request still in flight: the HTTP front answers on its stream. */
  open(related: Id | undefined): Id | undefined {
    return related !== undefined && this.#inFlight.has(related) ? related : undefined;
  }

  /** The client request most recently made and still in flight, if any. */
  latest(): Id | undefined {
    let last: Id | undefined;
    for (const id of this.#inFlight.keys()) last = id;
    return last;
  }

  /**
   * Queues a message: sent in the order queued, built when its turn comes (null: none). `related` names
   * the client request on whose stream it goes, for the HTTP front.
   */
  send(build: () => JSONRPCMessage | null, related?: () => Id | undefined): void {
    this.#queue = this.#queue.then(async () => {
      const message = build();
      if (message === null) return;
      const relatedRequestId = related?.();
      const options: TransportSendOptions | undefined =
        relatedRequestId === undefined ? undefined : { relatedRequestId };
      await this.#client.send(message, options).catch(() => undefined);
    });
  }

  /** Keeps the place in the queue of the answer to `id`, sent there once {@link answer} has it. */
  reserve(id: Id): void {
    if (!this.#inFlight.has(id) || this.#reserved.has(id)) return;
    let fill!: (reply: Reply) => void;
    const answer = new Promise<Reply>((resolve) => (fill = resolve));
    this.#reserved.set(id, fill);
    this.#queue = this.#queue.then(async () => {
      const message = this.#answerMessage(id, await answer);
      if (message !== null) await this.#client.send(message).catch(() => undefined);
    });
  }

  /** Answers a client request: it is no longer in flight once its answer is sent. */
  answer(id: Id, reply: Reply): void {
    const fill = this.#reserved.get(id);
    if (fill === undefined) return this.send(() => this.#answerMessage(id, reply));
    this.#reserved.delete(id);
    fill(reply);
  }

  /** The answer to a client request, once it is its turn to go; null for one the client cancelled. */
  #answerMessage(id: Id, reply: Reply): JSONRPCMessage | null {
    const abort = this.#inFlight.get(id);
    this.#inFlight.delete(id);
    // Cancelled by the client: no answer, as an MCP server gives none.
    if (abort?.signal.aborted) return null;
    return { jsonrpc: '2.0', id, ...body(reply) } as JSONRPCMessage;
  }
}
