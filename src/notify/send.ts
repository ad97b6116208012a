// One attempt to deliver one notification to one target: the request its kind calls for, bounded by a
// timeout, and what came of it. The target's URL is never put in what it reports (a Slack webhook's URL
// is its secret).
import { errorText } from '../errors.js';
import type { Notification } from '../store/notifications.js';
import { slackMessage } from './slack.js';
import type { DeliveryTarget } from './targets.js';

/** The `fetch` a dispatcher posts with: the global one, or a test's. */
export type Fetch = (url: string, init: RequestInit) => Promise<Response>;

/** What an attempt came to. */
export type AttemptResult =
  | { readonly ok: true; readonly status: number }
  | {
      readonly ok: false;
      readonly error: string;
      /** The receiver answered 410 Gone: it wants no more deliveries. */
      readonly gone: boolean;
      /** How long the receiver asked to be left alone (`Retry-After`), when it did. */
      readonly retryAfterMs?: number;
      /** The dispatcher stopped before an answer: nothing is known of the attempt. */
      readonly stopped?: boolean;
    };

export interface AttemptOptions {
  readonly fetch: Fetch;
  readonly timeoutMs: number;
  /** When the attempt is made, epoch ms: the signature's timestamp. */
  readonly nowMs: number;
  readonly publicUrl?: string;
  /** Ends the attempt at once, unanswered (the dispatcher stopping). */
  readonly signal?: AbortSignal;
}

/** Most characters of a refusing receiver's answer kept in the error. */
const ANSWER_CHARS = 200;

/** The body and headers of a notification as `target` takes it. */
export function requestOf(
  target: DeliveryTarget,
  n: Notification,
  nowMs: number,
  publicUrl: string | undefined,
): { body: string; headers: Record<string, string> } {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (target.kind === 'slack') {
    const message = slackMessage(n.event, n.payload, publicUrl === undefined ? {} : { publicUrl });
    return { body: JSON.stringify(message), headers };
  }
  const body = JSON.stringify(n.payload);
  const signed = target.secret?.sign(n.id, nowMs / 1000, body) ?? {};
  return { body, headers: { ...headers, ...signed } };
}

/**
 * Posts `n` to `target` once. Resolves, never rejects: a 2xx answer is delivered; any other answer, a
 * timeout or a network error is not, with why. Redirects are not followed (a 3xx is not delivered).
 */
export async function attempt(
  target: DeliveryTarget,
  n: Notification,
  options: AttemptOptions,
): Promise<AttemptResult> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onStop: (() => void) | undefined;
  // Ends the attempt with `result` whether or not `fetch` heeds the abort.
  const unanswered = new Promise<AttemptResult>((resolve) => {
    const end = (result: AttemptResult): void => {
      controller.abort();
      resolve(result);
    };
    timer = setTimeout(
      () => end({ ok: false, error: `no answer within ${options.timeoutMs} ms`, gone: false }),
      options.timeoutMs,
    );
    onStop = () => end({ ok: false, error: 'stopped before an answer', gone: false, stopped: true });
    if (options.signal?.aborted) onStop();
    else options.signal?.addEventListener('abort', onStop, { once: true });
  });
  const answered = (async (): Promise<AttemptResult> => {
    const { body, headers } = requestOf(target, n, options.nowMs, options.publicUrl);
    const response = await options.fetch(target.url, {
      method: 'POST',
      headers,
      body,
      redirect: 'manual',
      signal: controller.signal,
    });
    const answer = await response.text().catch(() => '');
    if (response.status >= 200 && response.status < 300) return { ok: true, status: response.status };
    const retryAfterMs = retryAfter(response.headers.get('retry-after'), options.nowMs);
    return {
      ok: false,
      error: `answered HTTP ${response.status}${shown(answer)}`,
      gone: response.status === 410,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  })().catch((error: unknown) => ({ ok: false as const, error: networkError(error), gone: false }));
  try {
    return await Promise.race([answered, unanswered]);
  } finally {
    clearTimeout(timer);
    if (onStop !== undefined) options.signal?.removeEventListener('abort', onStop);
  }
}

/** `: <the start of an answer>` on one line, or nothing for an empty one. */
function shown(answer: string): string {
  // eslint-disable-next-line no-control-regex -- a receiver's answer must not break the line it is shown on
  const line = answer.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').trim();
  if (line === '') return '';
  return `: ${line.length > ANSWER_CHARS ? `${line.slice(0, ANSWER_CHARS)}…` : line}`;
}

/** A failed fetch in words: its message and its cause's (`fetch failed: connect ECONNREFUSED …`). */
function networkError(error: unknown): string {
  const cause = (error as { cause?: unknown } | null)?.cause;
  const text = errorText(error);
  return cause === undefined ? text : `${text}: ${errorText(cause)}`;
}

/** A `Retry-After` header as ms from `nowMs`: delay seconds or an HTTP date; undefined without one. */
function retryAfter(header: string | null, nowMs: number): number | undefined {
  if (header === null) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}
