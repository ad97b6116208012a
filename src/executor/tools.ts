import type { JsonValue } from '../json.js';
import { toMicros } from '../money.js';

/** What a tool is handed besides its input. */
export interface ToolContext {
  readonly planId: string;
  readonly decisionId: string;
  /** 1 for the first try of a decision, 2 for its first retry, … */
  readonly attempt: number;
  /** Aborts when the plan's wall-clock limit runs out while the tool runs. */
  readonly signal: AbortSignal;
  /**
   * Calls another registered tool from inside this one. Each call counts against
   * `max_tool_calls_per_invocation` for this invocation and reserves the called tool's cost, so parallel
   * calls (`Promise.all`) can exceed neither. Rejects with a GuardrailViolationError when a guard says no.
   */
  callTool(name: string, input?: JsonValue): Promise<unknown>;
}

/** A named capability a plan's decisions call. */
export interface Tool<I = JsonValue | undefined, O = unknown> {
  readonly name: string;
  readonly description: string;
  /** Operation name checked against `required_confirmations`; defaults to the tool's name. */
  readonly operation?: string;
  /** Estimated cost per call, or a function of the input. Reserved before the tool runs. */
  readonly cost?: number | ((input: I) => number);
  /** Returns the output, or {@link toolResult} to report the actual cost. */
  run(input: I, ctx: ToolContext): O | ToolResult<O> | Promise<O | ToolResult<O>>;
}

/** Per-tool rules, usually from a policy file. */
export interface ToolRule {
  /** Calls of the tool allowed over the plan's life; null = unlimited. */
  readonly maxCallsPerPlan: number | null;
  /** Cost charged per call (the estimate, unless the tool reports an actual cost); null = the tool's own. */
  readonly costPerCall: number | null;
  /** Whether a person must confirm each call (applied through the guardrails' required confirmations). */
  readonly requiresConfirmation: boolean;
}

const TOOL_RESULT = Symbol.for('leash.ToolResult');

/** An output together with what producing it actually cost (for example, tokens used times price). */
export interface ToolResult<O = unknown> {
  readonly [TOOL_RESULT]: true;
  readonly output: O;
  readonly cost: number;
}

/**
 * Wraps a tool's output with its actual cost, which replaces the estimate reserved before the call.
 * @example return toolResult(answer, { cost: usage.totalTokens * PRICE_PER_TOKEN });
 */
export function toolResult<O>(output: O, actual: { cost: number }): ToolResult<O> {
  toMicros(actual.cost, 'cost', 'up'); // refused where it is made, not after the call was paid for
  return Object.freeze({ [TOOL_RESULT]: true as const, output, cost: actual.cost });
}

export function isToolResult(value: unknown): value is ToolResult {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { [TOOL_RESULT]?: unknown })[TOOL_RESULT] === true
  );
}

/** An error a tool throws when trying again cannot help (bad input, permission denied): no retries. */
export class NonRetryableError extends Error {
  readonly retryable = false as const;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NonRetryableError';
  }
}

/** True unless the error says it is not worth retrying (`retryable: false`). */
export function isRetryable(error: unknown): boolean {
  return !(
    typeof error === 'object' &&
    error !== null &&
    (error as { retryable?: unknown }).retryable === false
  );
}
