import { errorText } from '../../errors.js';
import { NonRetryableError, type Tool, type ToolContext } from '../../executor/tools.js';
import { toWellFormed, type JsonValue } from '../../json.js';
import { eitherAborts } from '../../signals.js';
import { validateToolInput } from '../planFile.js';
import { DEFAULT_HTTP_TIMEOUT_SECONDS, type HttpSettings } from '../planSchema.js';

/** Bytes of a response body an http step keeps: the first ones. */
export const MAX_HTTP_BODY_BYTES = 1024 * 1024;

/** Options of {@link httpTool}. */
export interface HttpToolOptions {
  /** Default `globalThis.fetch`. */
  readonly fetch?: typeof fetch;
}

/** What an http step returns. */
export interface HttpOutput {
  readonly status: number;
  /** Header names in lower case; repeated headers joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  /** The body as text, at most {@link MAX_HTTP_BODY_BYTES} bytes of it. */
  readonly body: string;
  /** Present, and true, when the body was longer than it. */
  readonly body_truncated?: true;
}

/**
 * A request that may succeed if sent again: no answer, a time-out, a 5xx, 408 or 429 answer. Retryable:
 * the guardrails' retry limit decides.
 */
export class HttpRequestFailed extends Error {
  /** The answer's status, or null when there was none. */
  readonly status: number | null;

  constructor(message: string, status: number | null, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'HttpRequestFailed';
    this.status = status;
  }
}

/** Answers that say "try again later" although they are 4xx. */
const RETRYABLE_4XX = new Set([408, 429]);

/**
 * The `http` tool: sends one request with `fetch` and returns `{ status, headers, body }`. Only http: and
 * https: URLs. The request, answer included, is aborted when `tools.http.timeout_seconds` (default 30)
 * passes or the run's signal aborts. A 5xx answer (and 408, 429) throws a retryable
 * {@link HttpRequestFailed}; another 4xx, and a redirect, a NonRetryableError: redirects are not followed,
 * so a request goes to the URL it was approved for and nowhere else. Each call costs
 * `tools.http.cost_per_call`.
 */
export function httpTool(settings: HttpSettings | undefined, options: HttpToolOptions = {}): Tool {
  const timeoutMs = Math.round((settings?.timeout_seconds ?? DEFAULT_HTTP_TIMEOUT_SECONDS) * 1000);
  return Object.freeze({
    name: 'http',
    description: 'Sends an HTTP request and returns its status, headers and body.',
    cost: settings?.cost_per_call ?? 0,
    async run(raw: JsonValue | undefined, ctx: ToolContext): Promise<HttpOutput> {
      const input = validateToolInput('http', raw);
      ctx.signal.throwIfAborted();
      const send = options.fetch ?? globalThis.fetch;
      const method = input.method ?? 'GET';
      // Query strings and user names carry secrets: messages name the origin and path only.
      const target = `${method} ${redacted(input.url)}`;
      const headers = new Headers(input.headers ?? {});
      let body: string | undefined;
      if (typeof input.body === 'string') body = input.body;
      else if (input.body !== undefined) {
        body = JSON.stringify(input.body);
        if (!headers.has('content-type')) headers.set('content-type', 'application/json');
      }
      const timeout = new AbortController();
      const timer = setTimeout(
        () => timeout.abort(new HttpRequestFailed(`${target} timed out after ${timeoutMs / 1000} s`, null)),
        timeoutMs,
      );
      // The run's signal can live as long as the process: listened to only while the request runs.
      const [signal, stopListening] = eitherAborts(ctx.signal, timeout.signal);
      try {
        let response: Response;
        try {
          response = await send(input.url, {
            method,
            headers,
            ...(body === undefined ? {} : { body }),
            // A redirect would take the request, its headers (an X-Api-Key …) and body with it to another
            // host, or from https to http, than the one approved.
            redirect: 'manual',
            signal,
          });
        } catch (e) {
          throw failure(e, signal, target);
        }
        const status = response.status;
        if (isRedirect(status)) {
          // Not read: it is not the answer asked for.
          await response.body?.cancel().catch(() => undefined);
          throw new NonRetryableError(
            `${target} answered ${statusText(response)}, ${redirectTarget(response, input.url)}, which is not followed`,
          );
        }
        let text: { body: string; truncated: boolean };
        try {
          text = await readCapped(response, MAX_HTTP_BODY_BYTES);
        } catch (e) {
          throw failure(e, signal, target);
        }
        if (status >= 500 || RETRYABLE_4XX.has(status)) {
          throw new HttpRequestFailed(
            `${target} answered ${statusText(response)}${excerpt(text.body)}`,
            status,
          );
        }
        if (status >= 400) {
          throw new NonRetryableError(`${target} answered ${statusText(response)}${excerpt(text.body)}`);
        }
        return Object.freeze({
          status,
          headers: Object.freeze(headersObject(response.headers)),
          body: text.body,
          ...(text.truncated ? { body_truncated: true as const } : {}),
        });
      } finally {
        clearTimeout(timer);
        stopListening();
      }
    },
  });
}

/** The error for a request that got no (whole) answer. */
function failure(e: unknown, signal: AbortSignal, target: string): unknown {
  // The run's own abort (a wall-clock violation) or the time-out: the signal says which.
  if (signal.aborted) return signal.reason;
  return new HttpRequestFailed(`${target} failed: ${describeCause(e)}`, null, { cause: e });
}

async function readCapped(response: Response, limit: number): Promise<{ body: string; truncated: boolean }> {
  if (response.body === null) return { body: '', truncated: false };
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let body = '';
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { body: body + decoder.decode(), truncated: false };
    const room = limit - size;
    if (value.length > room) {
      body += decoder.decode(value.subarray(0, room));
      // The rest is not wanted: stop the download rather than read it to throw it away.
      await reader.cancel().catch(() => undefined);
      return { body, truncated: true };
    }
    size += value.length;
    body += decoder.decode(value, { stream: true });
  }
}

function headersObject(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    // defineProperty: a header named __proto__ stays a header.
    const previous = Object.hasOwn(out, name) ? out[name] : undefined;
    Object.defineProperty(out, name, {
      value: previous === undefined ? value : `${previous}, ${value}`,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  });
  return out;
}

function statusText(response: Response): string {
  return response.statusText === '' ? String(response.status) : `${response.status} ${response.statusText}`;
}

/** Characters of an answer's body an error message quotes. */
const EXCERPT_CHARS = 200;

/**
 * `: <the start of the body>` on one line, at most {@link EXCERPT_CHARS} characters, or nothing when the
 * body is empty: an error page's HTML is not for a terminal.
 */
function excerpt(body: string): string {
  // The start is enough: collapsing a megabyte of whitespace to quote 200 characters is not. The cut
  // may fall inside a pair, whose first half survives when whitespace shrinks the rest below 200.
  const text = toWellFormed(body.trimStart().slice(0, EXCERPT_CHARS * 4))
    .replace(/\s+/g, ' ')
    .trimEnd();
  const chars = Array.from(text); // code points: an emoji is not cut in half
  if (chars.length === 0) return '';
  return `: ${chars.length > EXCERPT_CHARS ? `${chars.slice(0, EXCERPT_CHARS).join('')}…` : text}`;
}

/** 3xx but 304 Not Modified: that one is the answer to a conditional request, and leads nowhere. */
function isRedirect(status: number): boolean {
  return status >= 300 && status < 400 && status !== 304;
}

/** `a redirect to <where, redacted>`; a relative Location is resolved against the request's URL. */
function redirectTarget(response: Response, requestUrl: string): string {
  const location = response.headers.get('location');
  if (location === null) return 'a redirect without a Location';
  let url: string;
  try {
    url = new URL(location, requestUrl).href;
  } catch {
    return 'a redirect to an invalid Location';
  }
  return `a redirect to ${redacted(url)}`;
}

function redacted(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(an invalid URL)';
  }
}

function describeCause(e: unknown): string {
  if (!(e instanceof Error)) return errorText(e);
  // undici says only "fetch failed" and keeps the reason (ECONNREFUSED, ENOTFOUND …) in its cause.
  const cause = (e as { cause?: unknown }).cause;
  return cause instanceof Error ? `${e.message} (${cause.message})` : e.message;
}
