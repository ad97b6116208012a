import type { EventId, EventStore, StreamId } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { SESSION_EVENT_BYTES, SESSION_EVENTS } from './limits.js';

/**
 * The events of one session's SSE streams, for a client that reconnects with `Last-Event-ID`: the newest
 * `capacity` of the session, whatever their stream (the oldest dropped first), so a long session's memory
 * stays bounded. An event's id is `<stream id>:<n>`, n rising through the session.
 */
export class SessionEvents implements EventStore {
  readonly #events = new Map<
    number,
    { readonly streamId: StreamId; readonly message: JSONRPCMessage; readonly bytes: number }
  >();
  #last = 0;
  #bytes = 0;

  constructor(
    readonly capacity = SESSION_EVENTS,
    readonly maxBytes = SESSION_EVENT_BYTES,
  ) {}

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    const n = ++this.#last;
    const bytes = JSON.stringify(message).length;
    this.#events.set(n, { streamId, message, bytes });
    this.#bytes += bytes;
    // The oldest go first, the newest stays whatever its size.
    for (const [oldest, event] of this.#events) {
      if (oldest === n || (this.#events.size <= this.capacity && this.#bytes <= this.maxBytes)) break;
      this.#events.delete(oldest);
      this.#bytes -= event.bytes;
    }
    return `${streamId}:${n}`;
  }

  async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    return this.#parse(eventId)?.streamId;
  }

  async replayEventsAfter(
    lastEventId: EventId,
    { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> },
  ): Promise<StreamId> {
    const last = this.#parse(lastEventId);
    if (last === undefined) throw new Error(`no event ${JSON.stringify(lastEventId)} in this session`);
    // The map itself, not a copy: an event stored while the replay runs is replayed too, as the transport
    // sends it to the stream only once the replay registered it.
    for (const [n, event] of this.#events) {
      if (n > last.n && event.streamId === last.streamId) await send(`${event.streamId}:${n}`, event.message);
    }
    return last.streamId;
  }

  #parse(eventId: EventId): { streamId: StreamId; n: number } | undefined {
    const at = eventId.lastIndexOf(':');
    const n = Number(eventId.slice(at + 1));
    if (at <= 0 || !Number.isSafeInteger(n) || n < 1 || n > this.#last) return undefined;
    return { streamId: eventId.slice(0, at), n };
  }
}
