import type { Clock } from '../clock.js';
import type { AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';
import { gauges, outputBlock, safe } from './format.js';

/** Where progress goes: the terminal's stderr, or a test's. */
export interface ProgressOut {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

// Moves to the start of the line and erases it, so the live line is redrawn in place.
const REDRAW = '\r\x1b[2K';

/**
 * A run's progress for a person: a line per decision done, with steps, budget and elapsed time against
 * their limits, and under it what it printed. On a terminal it also keeps a live line for the step running, redrawn every `tickMs` so
 * the elapsed time moves while a long step runs; elsewhere (a pipe, a log file) only the lines of
 * decisions done are written.
 */
export class Progress {
  readonly #out: ProgressOut;
  readonly #clock: Clock;
  readonly #tickMs: number;
  #running: string | null = null;
  #guardrails: AutonomyGuardrails | null = null;
  #timer: ReturnType<typeof setInterval> | undefined;
  #drawn = false;

  constructor(out: ProgressOut, clock: Clock, tickMs = 1000) {
    this.#out = out;
    this.#clock = clock;
    this.#tickMs = tickMs;
  }

  /** A decision's tool starts (again, for attempt > 1), with the plan's guardrails as they stand. */
  started(decisionId: string, attempt: number, g: AutonomyGuardrails | null): void {
    this.#running = attempt > 1 ? `${safe(decisionId)} (try ${attempt})` : safe(decisionId);
    if (g !== null) this.#guardrails = g;
    if (this.#out.isTTY !== true) return;
    this.redraw();
    // Never keeps the process alive on its own.
    this.#timer ??= setInterval(() => this.redraw(), this.#tickMs).unref();
  }

  /** A decision ran to completion; `output` is what to show of its output, a line each, under it. */
  done(decisionId: string, g: AutonomyGuardrails | null, output: readonly string[] = []): void {
    if (g !== null) this.#guardrails = g;
    this.#running = null;
    this.#erase();
    const state = this.#guardrails === null ? '' : `  ${gauges(this.#guardrails, this.#clock.now())}`;
    const shown = outputBlock(output)
      .map((line) => `${line}\n`)
      .join('');
    this.#out.write(`  ✓ ${safe(decisionId)}${state}\n${shown}`);
  }

  /** The run ended: the live line goes, so the summary starts on a clean line. */
  close(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#running = null;
    this.#erase();
  }

  /** Draws the live line again, with the time elapsed now (the timer calls it every `tickMs`). */
  redraw(): void {
    if (this.#running === null) return;
    const state = this.#guardrails === null ? '' : `  ${gauges(this.#guardrails, this.#clock.now())}`;
    this.#out.write(`${REDRAW}  … ${this.#running}${state}`);
    this.#drawn = true;
  }

  #erase(): void {
    if (!this.#drawn) return;
    this.#out.write(REDRAW);
    this.#drawn = false;
  }
}
