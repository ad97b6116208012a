import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { errorTail } from '../errors.js';
import type { Pending } from './pending.js';
import { codeOf, resumingFailed, StreamEndedError, unreachable, type Id } from './upstreamErrors.js';

// Whether the upstream can still answer. After a transport error a ping asks; an upstream that cannot
// be reached is gone, and every request still waiting on it is answered at once. A request whose stream
// ended before its answer is answered as lost, unless the stream is being resumed.

/** How long a ping asking whether the upstream lives may take to be sent. */
const PROBE_TIMEOUT_MS = 5_000;

export class UpstreamHealth {
  readonly #pending: Pending;
  readonly #log: ((line: string) => void) | undefined;
  #upstream: Transport | undefined;
  /** Why the upstream cannot answer any more; null while it can (or before it started). */
  #gone: string | null = null;
  /** Settles once the ping asking whether the upstream lives has its answer; requests wait for it. */
  #probing: Promise<void> | null = null;
  /** Requests whose stream the upstream's transport is resuming: lost if it cannot. */
  readonly #resuming = new Set<Id>();
  #ended = false;
  #pings = 0;

  /** `pending`: the requests waiting on the upstream, answered when it is found gone. */
  constructor(pending: Pending, log?: (line: string) => void) {
    this.#pending = pending;
    this.#log = log;
  }

  /** Why the upstream cannot be reached any more ("it exited"), or null. */
  get gone(): string | null {
    return this.#gone;
  }

  /** While a ping asks whether the upstream lives: settles with its answer. */
  get probing(): Promise<void> | null {
    return this.#probing;
  }

  watch(upstream: Transport): void {
    this.#upstream = upstream;
  }

  /** The session ends: nothing is found gone after. */
  end(): void {
    this.#ended = true;
  }

  /** The upstream never started: it is gone, with nothing waiting on it. */
  neverStarted(): void {
    this.#gone = 'it could not be started';
  }

  /** An answer came for `id`: a stream being resumed for it need not be. */
  answered(id: Id): void {
    this.#resuming.delete(id);
  }

  /**
   * A transport error of the upstream. Requests whose stream ended before their answer are answered as
   * lost (sent: they may have run), unless the stream is being resumed; then only if resuming fails.
   */
  error(error: unknown): void {
    if (error instanceof StreamEndedError) {
      const unanswered = error.ids.filter((id) => this.#pending.has(id));
      if (unanswered.length === 0) return;
      if (error.resumable) {
        for (const id of unanswered) this.#resuming.add(id);
        return;
      }
      this.#settleLost(unanswered, 'its stream ended before the answer');
    } else if (resumingFailed(error)) {
      this.#settleLost([...this.#resuming], 'its stream could not be resumed');
      this.#resuming.clear();
    }
    this.probe();
  }

  /** Settles these requests to the upstream as sent and never answered. */
  #settleLost(ids: readonly Id[], why: string): void {
    for (const id of ids) {
      this.#pending.settle(id, { lost: `the upstream server gave no answer: ${why}`, sent: true });
    }
  }

  /**
   * After a transport error: whether the upstream still takes messages. A ping it cannot be sent means
   * it is gone.
   */
  probe(): void {
    const upstream = this.#upstream;
    if (this.#probing !== null || this.#gone !== null || this.#ended || upstream === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    // An upstream that does not even take the ping within the bound is left to the next call.
    const bounded = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, PROBE_TIMEOUT_MS);
      timer.unref();
    });
    const ping = (again: boolean): Promise<void> => {
      const id = `leash-ping-${++this.#pings}`;
      this.#pending.wait(id, () => undefined);
      return upstream.send({ jsonrpc: '2.0', id, method: 'ping' }).then(
        () => undefined,
        (error: unknown) => {
          this.#pending.forget(id);
          if (unreachable(error)) return this.lose(`it cannot be reached: ${errorTail(error)}`);
          // A connection that broke (one the dead server had kept open) says nothing yet: once more, on a
          // new one. A refusal of the moment (503) leaves the session to the next call.
          if (again && typeof codeOf(error) !== 'number') return ping(false);
        },
      );
    };
    const sent = ping(true);
    this.#probing = Promise.race([sent, bounded]).finally(() => {
      clearTimeout(timer);
      this.#probing = null;
    });
  }

  /** The upstream is gone (`reason` says how): every request still waiting for it is answered at once. */
  lose(reason: string): void {
    if (this.#gone !== null || this.#ended) return;
    this.#gone = reason;
    this.#log?.(`leash mcp: the upstream server is gone (${reason}); every further call is an error result`);
    this.#pending.settleAll(`the upstream server is gone (${reason})`, true);
  }
}
