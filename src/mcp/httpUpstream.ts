import {
  Agent as HttpAgent,
  request as httpRequest,
  type ClientRequest,
  type IncomingMessage,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { SseParser } from './sse.js';
import { StreamEndedError, type Id } from './upstreamErrors.js';

// The client side of Streamable HTTP to a `--upstream-url` server, on node:http with connections kept
// alive. It does what the SDK's StreamableHTTPClientTransport does for a proxy (session id, protocol
// version header, JSON and SSE answers, the standalone GET stream once initialized, resuming a stream
// with Last-Event-ID after its `retry`, DELETE on terminate) without fetch and web streams, which cost
// a call about a millisecond of CPU, and leave an abort listener per request on the session's signal.
// No OAuth: leash does none with its upstream.

/** As the SDK's transport: a dropped stream is resumed at most twice, 1 s then 1.5 s later unless told. */
const RECONNECT = { initialMs: 1000, maxMs: 30_000, grow: 1.5, maxRetries: 2 } as const;

/** How long a connection of no known keep-alive timeout is kept idle: fetch's (undici's) default. */
const IDLE_MS = 4000;

type Message = JSONRPCMessage & { id?: unknown; method?: unknown };

/** A JSON-RPC message by its shape; anything else from the server is an error, not a message. */
function isMessage(value: unknown): value is Message {
  return typeof value === 'object' && value !== null && (value as Message).jsonrpc === '2.0';
}

const isRequest = (m: Message): boolean => typeof m.method === 'string' && m.id !== undefined;
const isResponse = (m: Message): boolean => m.method === undefined && ('result' in m || 'error' in m);

function mediaType(header: string | undefined): string {
  return header?.split(';')[0]?.trim().toLowerCase() ?? '';
}

/** Reads an answer's body to its end; a broken body reads as what came. */
function text(res: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => (body += chunk));
    res.once('end', () => resolve(body));
    res.once('error', () => resolve(body));
  });
}

/** What one stream is read for: whether it resumes once dropped, and what it reported so far. */
interface StreamState {
  /** The requests whose answers it carries (a POST's): reported when it ends before they came. */
  readonly ids?: readonly Id[];
  reconnectable: boolean;
  lastEventId: string | undefined;
  primed: boolean;
  answered: boolean;
}

/**
 * A Streamable HTTP client transport to one server URL (http or https), for `leash mcp --upstream-url`.
 * Failures carry what the relay reads: an HTTP status as the error's `code` (the SDK's
 * StreamableHTTPError), a network error's own `code` (ECONNREFUSED).
 */
export class HttpUpstreamTransport implements Transport {
  readonly #url: URL;
  readonly #agent: HttpAgent;
  readonly #request: typeof httpRequest;
  readonly #open = new Set<ClientRequest>();
  #started = false;
  #closed = false;
  #sessionId: string | undefined;
  #protocolVersion: string | undefined;
  #serverRetryMs: number | undefined;
  #reconnect: NodeJS.Timeout | undefined;
  /** The GET stream being opened once initialized; the messages sent meanwhile wait for its answer. */
  #opening: Promise<void> | undefined;

  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  constructor(url: URL) {
    this.#url = url;
    const https = url.protocol === 'https:';
    this.#agent = https ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
    // A server that says how long it keeps an idle connection has its word taken (Node's agent); one that
    // does not may close it as a request goes out on it: an idle connection is dropped after 4 s, as
    // fetch drops it. The timeout ends only a connection the agent holds free.
    this.#agent.on('free', (socket: Socket) => {
      if (!socket.timeout) socket.setTimeout(IDLE_MS);
    });
    this.#request = https ? httpsRequest : httpRequest;
  }

  get sessionId(): string | undefined {
    return this.#sessionId;
  }

  async start(): Promise<void> {
    if (this.#started) throw new Error('HttpUpstreamTransport already started');
    this.#started = true;
  }

  setProtocolVersion(version: string): void {
    this.#protocolVersion = version;
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    try {
      if (options?.resumptionToken !== undefined) {
        this.#openStream(options.resumptionToken).catch((error: unknown) => this.#error(error));
        return;
      }
      // The server sends what it has for the client on that stream once it is open: a request sent before
      // could make it send there before the stream is (server-everything's roots request), and lose it.
      if (this.#opening !== undefined) await this.#opening;
      const body = JSON.stringify(message);
      const res = await this.#fetch(
        'POST',
        {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'content-length': String(Buffer.byteLength(body)),
        },
        body,
      );
      const sessionId = res.headers['mcp-session-id'];
      if (typeof sessionId === 'string' && sessionId !== '') this.#sessionId = sessionId;
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) {
        const answer = await text(res);
        throw new StreamableHTTPError(status, `Error POSTing to endpoint: ${answer}`);
      }
      const sent = message as Message;
      if (status === 202) {
        res.resume();
        // Once initialized, the server may offer a stream of its own messages (405 when it does not).
        if (sent.method === 'notifications/initialized') {
          const opening = this.#openStream(undefined).then(
            () => undefined,
            (error: unknown) => this.#error(error),
          );
          this.#opening = opening;
          void opening.finally(() => {
            if (this.#opening === opening) this.#opening = undefined;
          });
        }
        return;
      }
      const type = mediaType(res.headers['content-type']);
      if (!isRequest(sent)) {
        res.resume();
      } else if (type === 'text/event-stream') {
        const ids = [sent.id as Id];
        this.#read(res, {
          ids,
          reconnectable: false,
          lastEventId: undefined,
          primed: false,
          answered: false,
        });
      } else if (type === 'application/json') {
        const data: unknown = JSON.parse(await text(res));
        for (const m of Array.isArray(data) ? data : [data]) this.#deliver(m);
      } else {
        res.resume();
        throw new StreamableHTTPError(-1, `Unexpected content type: ${res.headers['content-type']}`);
      }
    } catch (error) {
      this.#error(error);
      throw error;
    }
  }

  /** Ends the session on the server (DELETE); a server that does not let sessions end answers 405. */
  async terminateSession(): Promise<void> {
    if (this.#sessionId === undefined) return;
    try {
      const res = await this.#fetch('DELETE', {});
      res.resume();
      const status = res.statusCode ?? 0;
      if ((status < 200 || status >= 300) && status !== 405) {
        throw new StreamableHTTPError(status, `Failed to terminate session: ${res.statusMessage ?? ''}`);
      }
      this.#sessionId = undefined;
    } catch (error) {
      this.#error(error);
      throw error;
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#reconnect);
    for (const req of this.#open) req.destroy();
    this.#open.clear();
    this.#agent.destroy();
    this.onclose?.();
  }

  #error(error: unknown): void {
    this.onerror?.(error instanceof Error ? error : new Error(String(error)));
  }

  /** A request to the server with the session's headers; resolves once the answer's head came. */
  #fetch(method: string, headers: Record<string, string>, body?: string): Promise<IncomingMessage> {
    if (this.#closed) return Promise.reject(new Error('the transport is closed'));
    const all: Record<string, string> = { ...headers };
    if (this.#sessionId !== undefined) all['mcp-session-id'] = this.#sessionId;
    if (this.#protocolVersion !== undefined) all['mcp-protocol-version'] = this.#protocolVersion;
    return new Promise((resolve, reject) => {
      const req = this.#request(this.#url, { method, headers: all, agent: this.#agent });
      this.#open.add(req);
      req.once('close', () => this.#open.delete(req));
      req.once('error', reject);
      req.once('response', resolve);
      req.end(body);
    });
  }

  /** Opens a GET stream of the server's messages, from after `lastEventId` when resuming one. */
  async #openStream(lastEventId: string | undefined): Promise<void> {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    const res = await this.#fetch('GET', headers);
    const status = res.statusCode ?? 0;
    if (status < 200 || status >= 300) {
      res.resume();
      if (status === 405) return;
      throw new StreamableHTTPError(status, `Failed to open SSE stream: ${res.statusMessage ?? ''}`);
    }
    this.#read(res, { reconnectable: true, lastEventId, primed: false, answered: false });
  }

  /** Delivers a message of the server, or reports what is not one. */
  #deliver(value: unknown): boolean {
    if (!isMessage(value)) {
      this.#error(new Error(`not a JSON-RPC message: ${JSON.stringify(value)}`));
      return false;
    }
    this.onmessage?.(value);
    return true;
  }

  /**
   * Reads an SSE stream to its end. A stream that drops before its answer came is resumed from its last
   * event when it can be: a GET stream, or a POST stream whose server gave its events ids.
   */
  #read(res: IncomingMessage, state: StreamState): void {
    const parser = new SseParser(
      ({ id, event, data }) => {
        if (id !== undefined) {
          state.lastEventId = id;
          state.primed = true;
        }
        if (data === '' || (event !== undefined && event !== 'message')) return;
        let value: unknown;
        try {
          value = JSON.parse(data);
        } catch (error) {
          return this.#error(error);
        }
        if (isMessage(value) && isResponse(value)) state.answered = true;
        this.#deliver(value);
      },
      (ms) => (this.#serverRetryMs = ms),
    );
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => parser.push(chunk));
    let dropped = false;
    res.once('error', () => (dropped = true));
    res.once('close', () => {
      if (this.#closed) return;
      if (dropped || !res.complete) this.#error(new Error('SSE stream disconnected'));
      if (state.answered) return;
      const resumable = state.reconnectable || state.primed;
      // A request's stream that ended before its answer: said, or its answer would be waited for forever.
      if (state.ids !== undefined) this.#error(new StreamEndedError(state.ids, resumable));
      if (resumable) this.#resume(state.lastEventId, 0);
    });
  }

  #resume(lastEventId: string | undefined, attempt: number): void {
    if (attempt >= RECONNECT.maxRetries) {
      this.#error(new Error(`Maximum reconnection attempts (${RECONNECT.maxRetries}) exceeded.`));
      return;
    }
    const delay =
      this.#serverRetryMs ?? Math.min(RECONNECT.initialMs * RECONNECT.grow ** attempt, RECONNECT.maxMs);
    this.#reconnect = setTimeout(() => {
      this.#openStream(lastEventId).catch((error: unknown) => {
        this.#error(
          new Error(
            `Failed to reconnect SSE stream: ${error instanceof Error ? error.message : String(error)}`,
          ),
        );
        this.#resume(lastEventId, attempt + 1);
      });
    }, delay);
  }
}
