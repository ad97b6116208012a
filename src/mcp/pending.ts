import { errorTail } from '../errors.js';
import type { Id } from './upstreamErrors.js';

// The requests one side of the relay waits on an answer to: each settled once, by its answer, by its
// cancellation, or as lost when the other side goes away.

type Params = Record<string, unknown>;

/** A JSON-RPC error as the side that answered wrote it. */
export interface RpcError {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

/**
 * What became of a request: its result, the error it was answered with, or no answer (`lost`) with why
 * and whether it reached the other side at all (`sent`).
 */
export type Reply =
  | { readonly result: Params }
  | { readonly error: RpcError }
  | { readonly lost: string; readonly sent: boolean };

/** How a request goes out, and how the other side is told it was cancelled. */
export interface Sending {
  readonly send: (settled: (reply: Reply) => void) => void;
  readonly cancel: (reason: string) => void;
}

/** The requests waiting for an answer, by id. */
export class Pending {
  readonly #settles = new Map<Id, (reply: Reply) => void>();

  has(id: Id): boolean {
    return this.#settles.has(id);
  }

  /** Waits on `id`, settled by `settle` once, with nothing else done (a request sent otherwise). */
  wait(id: Id, settle: (reply: Reply) => void): void {
    this.#settles.set(id, settle);
  }

  /**
   * Waits on `id` and sends it; when `signal` aborts first, cancels it and settles it as lost (it may have
   * been acted on).
   */
  send(id: Id, signal: AbortSignal | undefined, settle: (reply: Reply) => void, how: Sending): void {
    const onAbort = (): void => {
      if (!this.#settles.delete(id)) return;
      const reason = errorTail(signal?.reason ?? 'cancelled');
      how.cancel(reason);
      settle({ lost: `cancelled (${reason})`, sent: true });
    };
    const settled = (reply: Reply): void => {
      signal?.removeEventListener('abort', onAbort);
      settle(reply);
    };
    this.#settles.set(id, settled);
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    how.send(settled);
  }

  /** Settles `id` with `reply` if it still waits; whether it did. */
  settle(id: Id, reply: Reply): boolean {
    const settle = this.#settles.get(id);
    if (settle === undefined) return false;
    this.#settles.delete(id);
    settle(reply);
    return true;
  }

  /** Stops waiting on `id`, unsettled; whether it waited. */
  forget(id: Id): boolean {
    return this.#settles.delete(id);
  }

  /** Settles every request still waiting as lost. */
  settleAll(lost: string, sent: boolean): void {
    const settles = [...this.#settles.values()];
    this.#settles.clear();
    for (const settle of settles) settle({ lost, sent });
  }
}
