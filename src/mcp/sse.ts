// Server-sent events (text/event-stream) read as they arrive, for the HTTP upstream's streams.

/**
 * Server-sent events, parsed as eventsource-parser (the SDK's parser) does: an event is dispatched when
 * it has a data line; `id` and `event` belong to the event they are in; `retry` takes digits only.
 */
export class SseParser {
  #buffer = '';
  #first = true;
  #id: string | undefined;
  #event: string | undefined;
  #data = '';
  #lines = 0;

  constructor(
    private readonly onEvent: (e: {
      id: string | undefined;
      event: string | undefined;
      data: string;
    }) => void,
    private readonly onRetry: (ms: number) => void,
  ) {}

  push(chunk: string): void {
    let text = this.#buffer + chunk;
    if (this.#first && text.length > 0) {
      this.#first = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    let start = 0;
    for (;;) {
      let end = -1;
      let next = -1;
      for (let i = start; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c === 10) {
          end = i;
          next = i + 1;
          break;
        }
        if (c === 13) {
          // A CR at the chunk's end may be the first half of a CRLF: wait for what follows.
          if (i + 1 === text.length) break;
          end = i;
          next = text.charCodeAt(i + 1) === 10 ? i + 2 : i + 1;
          break;
        }
      }
      if (end < 0) break;
      this.#line(text.slice(start, end));
      start = next;
    }
    this.#buffer = text.slice(start);
  }

  #line(line: string): void {
    if (line === '') {
      if (this.#lines > 0) this.onEvent({ id: this.#id, event: this.#event, data: this.#data });
      this.#id = undefined;
      this.#event = undefined;
      this.#data = '';
      this.#lines = 0;
      return;
    }
    if (line.charCodeAt(0) === 58) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') {
      this.#data = this.#lines === 0 ? value : `${this.#data}\n${value}`;
      this.#lines++;
    } else if (field === 'id') {
      if (!value.includes('\0')) this.#id = value;
    } else if (field === 'event') {
      this.#event = value || undefined;
    } else if (field === 'retry' && /^\d+$/.test(value)) {
      this.onRetry(Number(value));
    }
  }
}
