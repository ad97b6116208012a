// Delivering the store's outbox: claim what is due for the targets this process knows, post each, record
// what came of it. Deliveries to one target go one at a time, in the order they were queued (the store
// hands out a target's oldest only); targets do not wait for each other, so a slow receiver holds up
// its own queue and nothing else.
import { z } from 'zod';
import { clockOption, systemClock, wait, type Clock } from '../clock.js';
import { formatIso } from '../iso.js';
import type { GuardrailStore } from '../store/GuardrailStore.js';
import type { Notification, NotificationOutcome } from '../store/notifications.js';
import { handle, integer, parseOptions } from '../validation.js';
import { wants } from './events.js';
import { attempt, type AttemptResult, type Fetch } from './send.js';
import { checkTargets, isHttpUrl, type DeliveryTarget } from './targets.js';

/** What a dispatcher needs of a store: the outbox. */
export type OutboxStore = Required<Pick<GuardrailStore, 'claimNotifications' | 'finishNotification'>>;

export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_ATTEMPTS = 8;
export const DEFAULT_BACKOFF_MS = 1_000;
export const DEFAULT_MAX_BACKOFF_MS = 600_000;
export const DEFAULT_POLL_MS = 2_000;

export interface NotificationDispatcherOptions {
  /** The store whose outbox it delivers. */
  store: GuardrailStore;
  /** The targets it delivers to; notifications queued for others are left for another dispatcher. */
  targets: readonly DeliveryTarget[];
  /** Where the dashboard is reached, for the links of Slack messages. */
  publicUrl?: string;
  clock?: Clock;
  /** Posts a delivery; default `globalThis.fetch`. */
  fetch?: Fetch;
  /** How long a receiver has to answer; default 10 s. */
  timeoutMs?: number;
  /** Attempts before a notification is failed for good; default 8. */
  maxAttempts?: number;
  /** The wait after a first failed attempt, doubled after each next; default 1 s. */
  backoffMs?: number;
  /** The longest wait between attempts; default 10 minutes. */
  maxBackoffMs?: number;
  /** A number in [0, 1): each wait is cut by up to half of it at random, so retries spread. */
  random?: () => number;
  /** How long a claim holds a notification from other dispatchers; default the timeout and a minute. */
  leaseMs?: number;
  /** Told of what went wrong outside a delivery (a store that failed); never of a secret. */
  onError?: (error: unknown) => void;
}

/** One attempt a dispatcher made, and what it recorded of it. */
export interface DeliveryReport {
  readonly id: string;
  readonly target: string;
  readonly event: string;
  /** Which attempt of the notification it was, from 1. */
  readonly attempt: number;
  readonly outcome: NotificationOutcome;
}

const fn = <F>() => handle<F>('a function', (v) => typeof v === 'function');

const dispatcherOptions = z.object({
  store: handle<OutboxStore>(
    'a GuardrailStore with the notification outbox (claimNotifications and finishNotification)',
    (v) =>
      typeof (v as OutboxStore | null)?.claimNotifications === 'function' &&
      typeof (v as OutboxStore | null)?.finishNotification === 'function',
  ),
  targets: handle<readonly DeliveryTarget[]>('an array of targets', Array.isArray),
  publicUrl: z
    .string({ error: 'an http: or https: URL' })
    .refine(isHttpUrl, { error: 'an http: or https: URL' })
    .optional(),
  clock: clockOption.default(() => systemClock),
  fetch: fn<Fetch>().optional(),
  timeoutMs: integer(1).default(DEFAULT_TIMEOUT_MS),
  maxAttempts: integer(1).default(DEFAULT_MAX_ATTEMPTS),
  backoffMs: integer(0).default(DEFAULT_BACKOFF_MS),
  maxBackoffMs: integer(0).default(DEFAULT_MAX_BACKOFF_MS),
  random: fn<() => number>().default(() => Math.random),
  leaseMs: integer(1).optional(),
  onError: fn<(error: unknown) => void>().optional(),
});

/**
 * Delivers the notifications a store queued: `runOnce()` for one pass (a test, a cron job), `start()` to
 * keep delivering in the background. A delivery that a receiver answers with 2xx is delivered; any other
 * answer, a timeout or a network error is tried again after a wait that doubles (1 s, 2 s, 4 s … at most
 * 10 minutes, spread at random), and failed for good after `maxAttempts` attempts or at once on 410 Gone.
 * Nothing it does throws into its caller: what goes wrong outside a delivery goes to `onError`.
 *
 * @example
 * const dispatcher = new NotificationDispatcher({ store, targets: policyNotifyTargets(policy, process.env).targets });
 * dispatcher.start();
 * // … on shutdown:
 * await dispatcher.stop({ flushMs: 2000 });
 */
export class NotificationDispatcher {
  readonly #store: OutboxStore;
  readonly #targets: ReadonlyMap<string, DeliveryTarget>;
  readonly #o: z.output<typeof dispatcherOptions>;
  readonly #fetch: Fetch;
  readonly #leaseMs: number;
  /** Targets with a claim or a delivery under way: not claimed for again until it ends. */
  readonly #busy = new Set<string>();
  /** Claims and deliveries under way, started by polling or by a pass. */
  readonly #running = new Set<Promise<unknown>>();
  #stopping = new AbortController();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #intervalMs = DEFAULT_POLL_MS;
  #polling = false;

  /** @throws GuardrailValidationError naming the option that is wrong */
  constructor(options: NotificationDispatcherOptions) {
    const o = parseOptions(dispatcherOptions, options);
    this.#o = o;
    this.#store = o.store;
    this.#targets = new Map(checkTargets(o.targets).map((t) => [t.name, t]));
    this.#fetch = o.fetch ?? ((url, init) => globalThis.fetch(url, init));
    this.#leaseMs = o.leaseMs ?? o.timeoutMs + 60_000;
  }

  /** The names of the targets it delivers to. */
  get targets(): readonly string[] {
    return [...this.#targets.keys()];
  }

  /**
   * One pass: claims the next due notification of each target that has none under way, delivers them
   * (targets side by side) and records each outcome. Resolves with what it did; never rejects.
   */
  async runOnce(): Promise<DeliveryReport[]> {
    const started = await this.#claimAndSend();
    return (await Promise.all(started)).flat();
  }

  /**
   * Passes until one finds nothing due: what is queued now is delivered, or waits for a retry later.
   * At most `maxPasses` (default 1000) passes.
   */
  async drain(options: { readonly maxPasses?: number } = {}): Promise<DeliveryReport[]> {
    const reports: DeliveryReport[] = [];
    for (let pass = 0; pass < (options.maxPasses ?? 1000); pass++) {
      if (this.#stopping.signal.aborted) break;
      const done = await this.runOnce();
      if (done.length === 0) break;
      reports.push(...done);
    }
    return reports;
  }

  /**
   * Delivers in the background: a pass every `intervalMs` (default 2 s), and at once after a target's
   * delivery, for its next. The timer does not keep the process alive.
   */
  start(options: { readonly intervalMs?: number } = {}): void {
    const interval = options.intervalMs ?? DEFAULT_POLL_MS;
    this.#intervalMs = Number.isFinite(interval) && interval > 0 ? interval : DEFAULT_POLL_MS;
    if (this.#stopping.signal.aborted) this.#stopping = new AbortController();
    this.#polling = true;
    this.#schedule(0);
  }

  /**
   * Stops polling. With `flushMs`, first delivers what is due for up to that long (`drain`); then ends
   * the attempts still under way unanswered (their claims lapse, so they are tried again later) and
   * resolves once nothing is left running, with what the flush did. A stopped dispatcher delivers
   * nothing more, `runOnce()` included, until it is started again.
   */
  async stop(options: { readonly flushMs?: number } = {}): Promise<DeliveryReport[]> {
    this.#polling = false;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const flushMs = options.flushMs ?? 0;
    const flushing = flushMs > 0 ? this.drain() : Promise.resolve([]);
    if (flushMs > 0) {
      const timeUp = new AbortController();
      await Promise.race([Promise.all([flushing, ...this.#running]), wait(flushMs, timeUp.signal)]);
      timeUp.abort();
    }
    this.#stopping.abort();
    // What is still under way ends soon: its attempts end unanswered.
    const flushed = await flushing;
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
    return flushed;
  }

  #schedule(delayMs: number): void {
    if (!this.#polling) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#poll(), delayMs);
    this.#timer.unref?.();
  }

  async #poll(): Promise<void> {
    this.#timer = undefined;
    const started = await this.#claimAndSend();
    for (const sending of started) {
      void sending.then((reports) => {
        // A target whose delivery went through may have its next one due now.
        if (reports.some((r) => r.outcome.kind === 'delivered')) this.#schedule(0);
      });
    }
    if (this.#timer === undefined) this.#schedule(this.#intervalMs);
  }

  /** Claims for the idle targets and starts their deliveries; resolves once they are started. */
  #claimAndSend(): Promise<Promise<DeliveryReport[]>[]> {
    return this.#track(this.#claimAndStart());
  }

  async #claimAndStart(): Promise<Promise<DeliveryReport[]>[]> {
    if (this.#stopping.signal.aborted) return [];
    const idle = [...this.#targets.keys()].filter((name) => !this.#busy.has(name));
    if (idle.length === 0) return [];
    for (const name of idle) this.#busy.add(name);
    let claimed: Notification[] = [];
    try {
      claimed = await this.#store.claimNotifications({
        targets: idle,
        now: formatIso(this.#o.clock.now()),
        leaseMs: this.#leaseMs,
        limit: idle.length,
      });
    } catch (error) {
      this.#report(error);
    }
    const byTarget = new Map<string, Notification[]>();
    for (const n of claimed) byTarget.set(n.target, [...(byTarget.get(n.target) ?? []), n]);
    for (const name of idle) if (!byTarget.has(name)) this.#busy.delete(name);
    return [...byTarget].map(([name, list]) => this.#track(this.#sendInOrder(name, list)));
  }

  /** Keeps `work` among what `stop()` waits for until it settles (it never rejects). */
  #track<T>(work: Promise<T>): Promise<T> {
    this.#running.add(work);
    void work.finally(() => this.#running.delete(work));
    return work;
  }

  /** Delivers a target's claimed notifications one after the other; then the target is idle again. */
  async #sendInOrder(name: string, list: readonly Notification[]): Promise<DeliveryReport[]> {
    const reports: DeliveryReport[] = [];
    try {
      for (const n of list) {
        const report = await this.#deliver(n);
        if (report === null) break;
        reports.push(report);
        // The next of the target waits until this one is delivered or given up.
        if (report.outcome.kind === 'retry') break;
      }
    } catch (error) {
      this.#report(error);
    } finally {
      this.#busy.delete(name);
    }
    return reports;
  }

  /** One attempt and its outcome recorded; null when the dispatcher stopped before an answer. */
  async #deliver(n: Notification): Promise<DeliveryReport | null> {
    const target = this.#targets.get(n.target);
    if (target === undefined) return null;
    const result: AttemptResult = wants(target.events, n.event)
      ? await attempt(target, n, {
          fetch: this.#fetch,
          timeoutMs: this.#o.timeoutMs,
          nowMs: this.#o.clock.now(),
          signal: this.#stopping.signal,
          ...(this.#o.publicUrl === undefined ? {} : { publicUrl: this.#o.publicUrl }),
        })
      : { ok: false, error: `target "${target.name}" does not take ${n.event} events`, gone: true };
    if (!result.ok && result.stopped === true) return null;
    const outcome = this.#outcomeOf(n, result);
    try {
      await this.#store.finishNotification(n.id, outcome);
    } catch (error) {
      // Its claim lapses and it is tried again: a receiver may see it twice, under the same webhook-id.
      this.#report(error);
    }
    return { id: n.id, target: n.target, event: n.event, attempt: n.attempts, outcome };
  }

  #outcomeOf(n: Notification, result: AttemptResult): NotificationOutcome {
    const nowMs = this.#o.clock.now();
    const at = formatIso(nowMs);
    if (result.ok) return { kind: 'delivered', at };
    if (result.gone || n.attempts >= this.#o.maxAttempts) {
      const why = result.gone ? '' : ` (after ${n.attempts} attempts)`;
      return { kind: 'failed', at, error: `${result.error}${why}` };
    }
    const delay = Math.max(
      this.#backoff(n.attempts),
      Math.min(result.retryAfterMs ?? 0, this.#o.maxBackoffMs),
    );
    return { kind: 'retry', at, error: result.error, nextAttemptAt: formatIso(nowMs + delay) };
  }

  /** The wait after failed attempt `attempts`: doubling from `backoffMs`, capped, cut by up to half at random. */
  #backoff(attempts: number): number {
    const full = Math.min(this.#o.backoffMs * 2 ** Math.min(attempts - 1, 52), this.#o.maxBackoffMs);
    const r = this.#o.random();
    const spread = Number.isFinite(r) ? Math.min(Math.max(r, 0), 1) : 0;
    return Math.round(full * (1 - spread / 2));
  }

  #report(error: unknown): void {
    try {
      this.#o.onError?.(error);
    } catch {
      // A failing error hook must not take the dispatcher down.
    }
  }

  /** For a person reading logs: `NotificationDispatcher(ops, team-slack)`. */
  toString(): string {
    return `NotificationDispatcher(${this.targets.join(', ')})`;
  }
}
