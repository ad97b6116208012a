import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  DEFAULT_MAX_REQUEST_BODY_SIZE,
  requestBodyTooLargeMessage,
} from '@modelcontextprotocol/sdk/server/requestBody.js';
import {
  ErrorCode,
  isInitializeRequest,
  isJSONRPCRequest,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { accessToken, allowedHostsFor, bracketed } from '../dashboard/security.js';
import { errorTail, invalid } from '../errors.js';
import { callerOf, checkListenerLabels, isRefusal, sessionLabels, type Caller } from './callers.js';
import { DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_SESSIONS } from './limits.js';
import { SessionEvents } from './sessionEvents.js';
import { runMcpSession, type McpSessionOptions } from './session.js';
import { validateLabels } from '../guardrails/labels.js';

// `leash mcp --listen`: the guard proxy over Streamable HTTP. Each client session (`Mcp-Session-Id`) is a
// `runMcpSession` of its own: its own plan, and its own upstream (a process, or a session of an HTTP
// server), stopped when the session ends. An MCP session is stateful on both sides (the client's
// capabilities, subscriptions, the log level), so one upstream is never shared between two clients.

/** The path of the endpoint. */
export const MCP_PATH = '/mcp';

/** Largest initialize request read; the transport bounds the requests of a session itself. */
const MAX_INITIALIZE_BYTES = 1024 * 1024;

/** The codes the SDK's transport answers its HTTP errors with: a server error, and an unknown session. */
const SERVER_ERROR = -32000;
const SESSION_NOT_FOUND = -32001;

export interface McpListenerOptions extends Omit<
  McpSessionOptions,
  'planId' | 'clientTransport' | 'signal' | 'ready' | 'protocolVersions'
> {
  /** Address to bind; keep a loopback one (the CLI's default is 127.0.0.1) unless you know why. */
  readonly host: string;
  /** Port to listen on; 0 picks a free one (see the returned `url`). */
  readonly port: number;
  /**
   * Bearer token every request must carry while the store knows no people, at least 32 characters; 32
   * random bytes when not given. Once it knows people, each request carries a personal token instead.
   */
  readonly token?: string;
  /** Sessions open at once (starting ones included); default {@link DEFAULT_MAX_SESSIONS}. */
  readonly maxSessions?: number;
  /**
   * How long a session may have no request and no stream open before it ends (by the service's clock);
   * default {@link DEFAULT_IDLE_TIMEOUT_MS}.
   */
  readonly idleTimeoutMs?: number;
}

export interface RunningMcpListener {
  /** The endpoint, with the actual port: `http://127.0.0.1:4590/mcp`. */
  readonly url: string;
  readonly token: string;
  /** Stops listening, ends every session and waits until their upstreams are stopped. */
  close(): Promise<void>;
  /**
   * Ends the sessions idle for the timeout or longer and resolves with how many, once their upstreams
   * are stopped. The listener does this every minute (or every timeout, when shorter) on its own.
   */
  expireIdle(): Promise<number>;
}

/** When a session was last busy: the requests and streams it has open, and since when it has none. */
interface Activity {
  /** The principal whose personal token started the session: only theirs may use it. */
  readonly principal: string | undefined;
  open: number;
  idleSince: number;
  readonly ended: AbortController;
  readonly run: Promise<unknown>;
}

/** Answers with a JSON-RPC error, unless an answer is already on its way. */
function refuse(
  res: ServerResponse,
  status: number,
  message: string,
  options: { code?: number; id?: RequestId | null; headers?: Record<string, string> } = {},
): void {
  if (res.headersSent || res.writableEnded) return;
  const body = JSON.stringify({
    jsonrpc: '2.0',
    error: { code: options.code ?? SERVER_ERROR, message },
    id: options.id ?? null,
  });
  res.writeHead(status, { 'Content-Type': 'application/json', ...options.headers }).end(body);
}

/** The body of a request, or null past `limit` bytes. */
async function bodyOf(req: IncomingMessage, limit: number): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * A request's body as JSON, or null once the request was refused: 413 (`tooLarge`) past `limit` bytes,
 * declared or read, and 400 when it is not JSON.
 */
async function jsonBody(
  req: IncomingMessage,
  res: ServerResponse,
  limit: number,
  tooLarge: string,
): Promise<{ value: unknown } | null> {
  const text = Number(req.headers['content-length']) > limit ? null : await bodyOf(req, limit);
  if (text === null) {
    refuse(res, 413, tooLarge, { headers: { Connection: 'close' } });
    return null;
  }
  try {
    return { value: JSON.parse(text) };
  } catch {
    refuse(res, 400, 'Parse error: Invalid JSON', { code: ErrorCode.ParseError });
    return null;
  }
}

function isJson(contentType: string | undefined): boolean {
  return contentType?.split(';')[0]?.trim().toLowerCase() === 'application/json';
}

/** Whether a POST accepts both answers the transport may give, and says it sends JSON. */
function acceptable(req: IncomingMessage): boolean {
  const accept = req.headers.accept ?? '';
  return accept.includes('application/json') && accept.includes('text/event-stream');
}

/**
 * A session's POST, its body read and parsed here rather than by the transport: the transport would read
 * it through a web Request's stream, some 150 µs a message. Refused as the transport refuses it: a body
 * over its limit, or not JSON. Any other request goes to the transport as it is.
 */
async function handlePost(
  transport: StreamableHTTPServerTransport,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (!isJson(req.headers['content-type'])) return transport.handleRequest(req, res);
  const limit = DEFAULT_MAX_REQUEST_BODY_SIZE;
  const body = await jsonBody(req, res, limit, requestBodyTooLargeMessage(limit));
  if (body !== null) return transport.handleRequest(req, res, body.value);
}

/**
 * Starts `leash mcp`'s Streamable HTTP endpoint on `host:port`, path `/mcp`. Every request needs
 * `Authorization: Bearer <token>` (a personal token once the store knows people: see `callers.ts`), a
 * Host header naming the address it listens on, and an `Origin`, when it has one, of that address (DNS
 * rebinding). An `initialize` without a session id starts a session:
 * its plan (`mcp-<policyName>-<n>`), its upstream, and its id (`Mcp-Session-Id`) in the answer; a
 * `DELETE` with its id ends it, answered once its upstream is stopped.
 * @example
 * const { url, token, close } = await startMcpListener({ service, policy: null, policyName: 'session',
 *   upstream: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'] },
 *   host: '127.0.0.1', port: 0 });
 */
export async function startMcpListener(options: McpListenerOptions): Promise<RunningMcpListener> {
  const {
    host,
    port: wanted,
    token: given,
    maxSessions = DEFAULT_MAX_SESSIONS,
    idleTimeoutMs = DEFAULT_IDLE_TIMEOUT_MS,
    ...session
  } = options;
  // Checked before listening, so a refused option leaves no port open.
  const token = accessToken(given, '`leash mcp --listen`');
  validateLabels(session.labels);
  if (!Number.isSafeInteger(maxSessions) || maxSessions < 1) {
    invalid('maxSessions', 'a positive integer', maxSessions);
  }
  if (!Number.isSafeInteger(idleTimeoutMs) || idleTimeoutMs < 1) {
    invalid('idleTimeoutMs', 'a positive integer of milliseconds', idleTimeoutMs);
  }
  const { service } = options;
  await checkListenerLabels(service, session.labels);
  const { clock } = service;
  const log = options.log ?? (() => undefined);

  /** The sessions a client can reach, by id. */
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const activity = new Map<StreamableHTTPServerTransport, Activity>();

  /** Counts `res` as the session busy until it closes. */
  function busy(state: Activity | undefined, res: ServerResponse): void {
    if (state === undefined) return;
    state.open++;
    res.once('close', () => {
      state.open--;
      if (state.open === 0) state.idleSince = clock.now();
    });
  }
  /** Every session from its start to the end of its `runMcpSession`, with what ends it. */
  const running = new Map<Promise<unknown>, AbortController>();
  let closing = false;
  // Known once listening (the Host names carry the port); no request is read before.
  let hosts = new Set<string>();
  let origins = new Set<string>();

  /** Starts a session for the client's `initialize`, and hands the request to it once it takes messages. */
  function start(
    req: IncomingMessage,
    res: ServerResponse,
    initialize: JSONRPCMessage & { id: RequestId },
    caller: Caller,
  ) {
    const ended = new AbortController();
    let handed = false;
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      eventStore: new SessionEvents(),
      onsessioninitialized: (id) => void sessions.set(id, transport),
      // DELETE is answered once the upstream is stopped.
      onsessionclosed: async () => {
        ended.abort();
        await run.catch(() => undefined);
      },
    });
    // A client gone before the session took its request cannot learn the session's id: nobody could use it.
    const gone = (): void => {
      if (!handed) ended.abort();
    };
    res.once('close', gone);
    const run = runMcpSession({
      ...session,
      ...sessionLabels(session.labels, caller),
      protocolVersions: SUPPORTED_PROTOCOL_VERSIONS,
      clientTransport: transport,
      signal: ended.signal,
      ready: () => {
        res.off('close', gone);
        if (ended.signal.aborted) return refuse(res, 503, 'leash mcp is stopping', { id: initialize.id });
        handed = true;
        transport.handleRequest(req, res, initialize).then(
          // Refused by the transport (a bad header): the session has no id, and no client.
          () => void (transport.sessionId === undefined && ended.abort()),
          (error: unknown) => {
            log(`leash mcp: the initialize request failed: ${errorTail(error)}`);
            ended.abort();
          },
        );
      },
    });
    running.set(run, ended);
    const state: Activity = { principal: caller.principal, open: 0, idleSince: clock.now(), ended, run };
    activity.set(transport, state);
    busy(state, res);
    run.then(
      ({ planId }) => log(`leash mcp: session plan "${planId}" ended`),
      (error: unknown) => {
        log(`leash mcp: a session ${handed ? 'failed' : 'could not start'}: ${errorTail(error)}`);
        if (!handed) {
          refuse(res, 500, `leash mcp could not start the session: ${errorTail(error)}`, {
            code: ErrorCode.InternalError,
            id: initialize.id,
          });
        }
      },
    );
    void run
      .catch(() => undefined)
      .finally(() => {
        running.delete(run);
        activity.delete(transport);
        if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
      });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = req.url ?? '/';
    // Both names a request gives for the server must be allowed: the Host header, and the target's host
    // when the target is absolute (`POST http://127.0.0.1:4590/mcp`).
    const absolute = /^https?:\/\//i.test(target) ? new URL(target).host : undefined;
    const named = [req.headers.host, absolute];
    if (req.headers.host === undefined || named.some((h) => h !== undefined && !hosts.has(h.toLowerCase()))) {
      return refuse(res, 421, 'Misdirected Request: this server answers only on the address it printed');
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !origins.has(origin.toLowerCase())) {
      return refuse(res, 403, `Forbidden: requests from the origin ${origin} are refused`);
    }
    const caller = await callerOf(service, token, req.headers.authorization, log);
    if (isRefusal(caller)) {
      const headers = caller.challenge === undefined ? {} : { 'WWW-Authenticate': caller.challenge };
      return refuse(res, caller.status, caller.message, { headers });
    }
    if (new URL(target, 'http://leash').pathname !== MCP_PATH) {
      return refuse(res, 404, `Not Found: the MCP endpoint is ${MCP_PATH}`);
    }
    const id = req.headers['mcp-session-id'];
    if (id !== undefined) {
      const transport = sessions.get(String(id));
      if (transport === undefined) return refuse(res, 404, 'Session not found', { code: SESSION_NOT_FOUND });
      const state = activity.get(transport);
      if (state?.principal !== caller.principal) {
        return refuse(res, 403, 'Forbidden: this session belongs to another user');
      }
      busy(state, res);
      if (req.method !== 'POST' || !acceptable(req)) return transport.handleRequest(req, res);
      return handlePost(transport, req, res);
    }
    if (req.method !== 'POST') {
      if (req.method === 'GET' || req.method === 'DELETE') {
        return refuse(res, 400, 'Bad Request: Mcp-Session-Id header is required');
      }
      return refuse(res, 405, 'Method Not Allowed', { headers: { Allow: 'GET, POST, DELETE' } });
    }
    // Only an initialize starts a session: it is read here, before anything starts.
    if (!isJson(req.headers['content-type'])) {
      return refuse(res, 415, 'Unsupported Media Type: Content-Type must be application/json');
    }
    if (!acceptable(req)) {
      const accepted = 'Not Acceptable: Client must accept both application/json and text/event-stream';
      return refuse(res, 406, accepted);
    }
    const tooLarge = `Payload Too Large: an initialize request is at most ${MAX_INITIALIZE_BYTES} bytes`;
    const body = await jsonBody(req, res, MAX_INITIALIZE_BYTES, tooLarge);
    if (body === null) return;
    const message = body.value;
    if (!isJSONRPCRequest(message) || !isInitializeRequest(message)) {
      return refuse(res, 400, 'Bad Request: Mcp-Session-Id header is required');
    }
    if (closing) return refuse(res, 503, 'leash mcp is stopping', { id: message.id });
    if (running.size >= maxSessions) {
      return refuse(
        res,
        503,
        `sessions open: ${running.size} of at most ${maxSessions} (--max-sessions); end one (DELETE) or raise --max-sessions`,
        { id: message.id },
      );
    }
    start(req, res, message, caller);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      log(`leash mcp: a request failed: ${errorTail(error)}`);
      refuse(res, 500, 'Internal Server Error');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(wanted, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (error) => log(`leash mcp: ${error.message}`));
  const { port } = server.address() as AddressInfo;
  hosts = new Set(allowedHostsFor(host, port).map((h) => h.toLowerCase()));
  origins = new Set([...hosts].map((h) => `http://${h}`));

  async function expireIdle(): Promise<number> {
    const now = clock.now();
    const idle = [...activity.values()].filter((a) => a.open === 0 && now - a.idleSince >= idleTimeoutMs);
    for (const a of idle) a.ended.abort();
    if (idle.length > 0) log(`leash mcp: ${idle.length} idle session(s) ended (--idle-timeout)`);
    await Promise.allSettled(idle.map((a) => a.run));
    return idle.length;
  }
  const sweeper = setInterval(() => void expireIdle(), Math.min(60_000, idleTimeoutMs));
  sweeper.unref();

  return {
    url: `http://${bracketed(host)}:${port}${MCP_PATH}`,
    token,
    expireIdle,
    async close() {
      clearInterval(sweeper);
      closing = true;
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const ended of running.values()) ended.abort();
      await Promise.allSettled([...running.keys()]);
      // What is left are connections of no session (idle keep-alives, a request being read).
      server.closeAllConnections();
      await stopped;
    },
  };
}
