import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { errorTail } from '../errors.js';
import { Pending, type Reply, type RpcError } from './pending.js';
import { body, ToClient } from './toClient.js';
import { neverDelivered, type Id } from './upstreamErrors.js';
import { UpstreamHealth } from './upstreamHealth.js';

// A relay of JSON-RPC messages between an MCP client and its server, as they are: every request, answer
// and notification goes on in the order it came, with its params, results and errors untouched. Only the
// ids of requests change on the way (each side numbers its own), and what a hook answers or rewrites.
// The upstream is opened once the client sent `initialize`, and initialized with that very request: its
// protocol version, capabilities and name.

export type { Reply, RpcError } from './pending.js';
export { UPSTREAM_GONE_CODE } from './toClient.js';

type Params = Record<string, unknown>;

/** A client request in flight, as the hooks see it. */
export interface ClientRequest {
  readonly id: Id;
  readonly method: string;
  readonly params: Params | undefined;
  /** Aborts when the client cancels the request, or the session ends. */
  readonly signal: AbortSignal;
}

export interface RelayHooks {
  /** Answers a client request in leash's place; undefined forwards it. Called once the session is up. */
  readonly answer?: (request: ClientRequest) => Promise<Reply> | undefined;
  /** Rewrites the upstream's result of a forwarded request before the client sees it. */
  readonly result?: (method: string, result: Params) => Params;
  /** Told of each notification of the upstream before the client is. */
  readonly notified?: (method: string, params: Params | undefined) => void;
}

export interface RelayOptions {
  /** Opens the upstream's transport, not started: called once, when the client sent `initialize`. */
  readonly upstream: () => Transport | Promise<Transport>;
  readonly hooks?: RelayHooks;
  /** Told what a person should know: the upstream's end. */
  readonly log?: (line: string) => void;
  /**
   * The protocol versions the client's transport can carry, when it checks them (the HTTP front does):
   * an upstream that settles on another is refused at initialize, not at every request after.
   */
  readonly protocolVersions?: readonly string[];
}

/** How long a session that ends waits for the guarded calls it aborted to be charged and recorded. */
const DRAIN_TIMEOUT_MS = 5_000;

const INTERNAL_ERROR = -32603;

const isResponse = (m: Msg): boolean => !('method' in m);

/** What an answer says: its result, or its error as written. */
function replyOf(m: Msg): Reply {
  return 'error' in m ? { error: m.error as RpcError } : { result: (m as { result: Params }).result };
}

type Msg = JSONRPCMessage & { id?: Id; method?: string; params?: Params };

/**
 * One session of a client and its upstream. {@link Relay.connect} starts on the client's transport;
 * `closed` resolves once the client went away or {@link Relay.close} ended the session, the upstream
 * stopped.
 */
export class Relay {
  readonly #options: RelayOptions;
  #client: Transport | undefined;
  /** What goes to the client, in order; set once connected (no message comes before). */
  #toClient!: ToClient;
  #upstream: Transport | undefined;
  #up = false;
  /** Client messages that came while the upstream was being opened: handled once it is. */
  #held: Msg[] | null = [];
  #clientInit: Params | undefined;
  #nextUpId = 0;
  #nextClientId = 0;
  readonly #upPending = new Pending();
  readonly #health: UpstreamHealth;
  readonly #clientPending = new Pending();
  /** The upstream's requests relayed to the client: the client's id of each, by the upstream's. */
  readonly #relayed = new Map<Id, number>();
  /** Which client request a progress token belongs to, for the HTTP front's stream of that request. */
  readonly #progressOf = new Map<unknown, Id>();
  #closed = false;
  /** leash's own answers being made (guarded calls): a session that ends waits for them. */
  readonly #answering = new Set<Promise<Reply>>();
  #resolveClosed!: () => void;
  readonly closed = new Promise<void>((resolve) => {
    this.#resolveClosed = resolve;
  });

  constructor(options: RelayOptions) {
    this.#options = options;
    this.#health = new UpstreamHealth(this.#upPending, options.log);
  }

  /** The client's `initialize` params (capabilities, clientInfo); undefined before it came. */
  get clientInit(): Params | undefined {
    return this.#clientInit;
  }

  /** Why the upstream cannot be reached any more ("it exited"), or null. */
  get gone(): string | null {
    return this.#health.gone;
  }

  async connect(client: Transport): Promise<void> {
    this.#client = client;
    this.#toClient = new ToClient(client);
    client.onmessage = (m) => this.#fromClient(m as Msg);
    client.onclose = () => void this.close();
    client.onerror = () => undefined;
    await client.start();
  }

  /** Ends the session: the client's transport closed, the upstream stopped, every call in flight aborted. */
  /**
   * Ends what is in flight: every client request aborted, every request to either side answered as lost,
   * and resolves once leash's own answers (guarded calls, charged and recorded) are made, or after
   * {@link DRAIN_TIMEOUT_MS}. {@link close} drains first.
   */
  async drain(): Promise<void> {
    this.#health.end();
    this.#toClient?.abortAll(new Error('the session ended'));
    this.#upPending.settleAll('the session ended', true);
    this.#clientPending.settleAll('the session ended', true);
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, DRAIN_TIMEOUT_MS);
      timer.unref();
    });
    await Promise.race([Promise.allSettled(this.#answering), bound]);
    clearTimeout(timer);
  }

  async close(): Promise<void> {
    if (this.#closed) return this.closed;
    this.#closed = true;
    await this.drain();
    await this.#client?.close().catch(() => undefined);
    const up = this.#upstream as (Transport & { terminateSession?: () => Promise<void> }) | undefined;
    if (up !== undefined && this.#health.gone === null) await up.terminateSession?.().catch(() => undefined);
    await up?.close().catch(() => undefined);
    this.#resolveClosed();
    return this.closed;
  }

  /**
   * Sends a request to the upstream; resolves with what became of it. When `signal` aborts first, the
   * upstream is told the request is cancelled, and it resolves as lost.
   */
  requestUpstream(
    method: string,
    params: Params | undefined,
    signal?: AbortSignal,
    answering?: Id,
  ): Promise<Reply> {
    return new Promise((resolve) =>
      this.#toUpstream(method, params, signal, (reply) => {
        // The answer of the client request this serves takes its place for the client now, in the turn
        // the upstream's reply came: what the upstream sends after it stays after it.
        if (answering !== undefined && !('lost' in reply)) this.#toClient.reserve(answering);
        resolve(reply);
      }),
    );
  }

  /** {@link requestUpstream}, `settle` called with the reply in the turn it came (nothing overtakes it). */
  #toUpstream(
    method: string,
    params: Params | undefined,
    signal: AbortSignal | undefined,
    settle: (reply: Reply) => void,
  ): void {
    const gone = this.#health.gone;
    if (gone !== null) return settle({ lost: `the upstream server is gone (${gone})`, sent: false });
    // While a ping asks whether the upstream lives, a request waits: sent to a dead one, it would fail
    // as if it may have run.
    const probing = this.#health.probing;
    if (probing !== null) {
      void probing.then(() => this.#toUpstream(method, params, signal, settle));
      return;
    }
    const upstream = this.#upstream;
    if (upstream === undefined) return settle({ lost: 'the upstream server is not started', sent: false });
    const id = this.#nextUpId++;
    this.#upPending.send(id, signal, settle, {
      send: (settled) => {
        upstream
          .send({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) })
          .catch((error: unknown) => {
            if (!this.#upPending.forget(id)) return;
            // Only a request that provably never got there is uncharged: one the upstream may have taken
            // before its answer failed may have run.
            const sent = !neverDelivered(error);
            const why = sent ? 'its answer failed' : 'it could not be reached';
            settled({ lost: `the upstream server took no answer back: ${why} (${errorTail(error)})`, sent });
            this.#health.probe();
          });
      },
      cancel: (reason) => {
        void upstream
          .send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason } })
          .catch(() => undefined);
      },
    });
  }

  /** Sends a request of leash's own to the client, on the stream of `related` when the front has streams. */
  requestClient(
    method: string,
    params: Params,
    related: Id | undefined,
    signal?: AbortSignal,
  ): Promise<Reply> {
    const id = this.#nextClientId++;
    return new Promise((resolve) =>
      this.#clientPending.send(id, signal, resolve, {
        send: () =>
          this.#toClient.send(
            () => ({ jsonrpc: '2.0', id, method, params }),
            () => this.#toClient.open(related),
          ),
        cancel: (reason) =>
          this.#toClient.send(() => ({
            jsonrpc: '2.0',
            method: 'notifications/cancelled',
            params: { requestId: id, reason },
          })),
      }),
    );
  }

  #sendUpstream(message: JSONRPCMessage): void {
    if (this.#health.gone !== null) return;
    this.#upstream?.send(message).catch(() => this.#health.probe());
  }

  #fromClient(m: Msg): void {
    if (isResponse(m)) {
      this.#clientPending.settle(m.id as Id, replyOf(m));
      return;
    }
    if (!this.#up) {
      if (m.method === 'initialize' && m.id !== undefined && this.#clientInit === undefined) {
        void this.#initialize(m.id, m.params ?? {});
      } else this.#held?.push(m);
      return;
    }
    if (m.id === undefined) return this.#clientNotification(m);
    this.#clientRequest(m.id, m.method as string, m.params);
  }

  #clientNotification(m: Msg): void {
    if (m.method === 'notifications/initialized') {
      // Sent before anything that follows it, as a client does: an HTTP upstream opens its stream for
      // the server's own requests once this is delivered, before the first call can need it.
      this.#up = false;
      this.#held = [];
      const delivered = this.#upstream?.send(m) ?? Promise.resolve();
      void delivered.catch(() => this.#health.probe()).finally(() => this.#release());
      return;
    }
    if (m.method === 'notifications/cancelled') {
      const reason = new Error(String(m.params?.['reason'] ?? 'cancelled by the client'));
      this.#toClient.abort(m.params?.['requestId'] as Id, reason);
      return;
    }
    this.#sendUpstream(m);
  }

  #clientRequest(id: Id, method: string, params: Params | undefined): void {
    const signal = this.#toClient.begin(id);
    const token = (params?.['_meta'] as Params | undefined)?.['progressToken'];
    if (token !== undefined) this.#progressOf.set(token, id);
    const done = (reply: Reply): void => {
      if (token !== undefined) this.#progressOf.delete(token);
      this.#toClient.answer(id, reply);
    };
    const answered = this.#options.hooks?.answer?.({ id, method, params, signal: signal });
    if (answered !== undefined) {
      const made = answered.then(done, (error: unknown) =>
        done({ error: { code: INTERNAL_ERROR, message: errorTail(error) } }),
      );
      this.#answering.add(answered);
      void made.finally(() => this.#answering.delete(answered));
      return;
    }
    // Answered in the turn the upstream's answer came, so what the upstream sends after it stays after
    // it; the client's cancellation goes upstream under the id the request went with.
    const rewrite = this.#options.hooks?.result;
    this.#toUpstream(method, params, signal, (reply) =>
      done('result' in reply && rewrite ? { result: rewrite(method, reply.result) } : reply),
    );
  }

  /**
   * Opens the upstream and initializes it with the client's very request. A session whose upstream
   * cannot start, or refuses to initialize, ends once the client has its answer: it could serve nothing.
   */
  async #initialize(id: Id, params: Params): Promise<void> {
    this.#clientInit = params;
    const end = (): void => {
      this.#release();
      void this.#toClient.sent.then(() => this.close());
    };
    let upstream: Transport;
    try {
      upstream = await this.#options.upstream();
      this.#upstream = upstream;
      this.#health.watch(upstream);
      upstream.onmessage = (m) => this.#fromUpstream(m as Msg);
      upstream.onclose = () => {
        this.#health.lose('it exited');
      };
      upstream.onerror = (error) => this.#health.error(error);
      await upstream.start();
    } catch (error) {
      this.#health.neverStarted();
      const message = `the upstream server could not be started: ${errorTail(error)}`;
      this.#options.log?.(`leash mcp: ${message}`);
      this.#toClient.send(() => ({ jsonrpc: '2.0', id, error: { code: INTERNAL_ERROR, message } }));
      return end();
    }
    // Answered in the turn the upstream's answer came: what the upstream sends after it stays after it.
    this.#toUpstream('initialize', params, undefined, (reply) => {
      if (!('result' in reply)) {
        this.#toClient.send(() => ({ jsonrpc: '2.0', id, ...body(reply) }) as JSONRPCMessage);
        return end();
      }
      const version = reply.result['protocolVersion'];
      const carried = this.#options.protocolVersions;
      if (carried !== undefined && !carried.includes(String(version))) {
        const message = `the upstream server settled on MCP protocol version ${String(version)}, which leash's HTTP front cannot carry (it carries ${carried.join(', ')})`;
        this.#options.log?.(`leash mcp: ${message}`);
        this.#toClient.send(() => ({ jsonrpc: '2.0', id, error: { code: INTERNAL_ERROR, message } }));
        return end();
      }
      if (typeof version === 'string') upstream.setProtocolVersion?.(version);
      const rewrite = this.#options.hooks?.result;
      const result = rewrite ? rewrite('initialize', reply.result) : reply.result;
      this.#toClient.send(() => ({ jsonrpc: '2.0', id, result }));
      this.#release();
    });
  }

  /** The session is up: the messages held meanwhile are handled, in the order they came. */
  #release(): void {
    this.#up = true;
    const held = this.#held ?? [];
    this.#held = null;
    for (const m of held) this.#fromClient(m);
  }

  #fromUpstream(m: Msg): void {
    if (isResponse(m)) {
      this.#health.answered(m.id as Id);
      this.#upPending.settle(m.id as Id, replyOf(m));
      return;
    }
    if (m.id !== undefined) return this.#relayRequest(m.id, m.method as string, m.params);
    const method = m.method as string;
    this.#options.hooks?.notified?.(method, m.params);
    if (method === 'notifications/cancelled') {
      const upId = m.params?.['requestId'] as Id;
      const clientId = this.#relayed.get(upId);
      if (clientId === undefined) return;
      this.#relayed.delete(upId);
      this.#clientPending.forget(clientId);
      this.#toClient.send(() => ({ ...m, params: { ...m.params, requestId: clientId } }) as JSONRPCMessage);
      return;
    }
    const token = (m.params as Params | undefined)?.['progressToken'];
    const related =
      method === 'notifications/progress'
        ? () => this.#toClient.open(this.#progressOf.get(token))
        : method.endsWith('/list_changed') || method === 'notifications/resources/updated'
          ? undefined
          : () => this.#toClient.latest();
    this.#toClient.send(() => m, related);
  }

  /** A request of the upstream's (sampling, elicitation, roots, ping) asked of the client; its answer sent back. */
  #relayRequest(upId: Id, method: string, params: Params | undefined): void {
    const clientId = this.#nextClientId++;
    this.#relayed.set(upId, clientId);
    this.#clientPending.wait(clientId, (reply) => {
      this.#relayed.delete(upId);
      if ('lost' in reply) return;
      this.#sendUpstream({ jsonrpc: '2.0', id: upId, ...reply } as JSONRPCMessage);
    });
    const related = this.#toClient.latest();
    this.#toClient.send(
      () => ({ jsonrpc: '2.0', id: clientId, method, ...(params ? { params } : {}) }) as JSONRPCMessage,
      () => this.#toClient.open(related) ?? this.#toClient.latest(),
    );
  }
}
