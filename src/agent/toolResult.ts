import { toMicros } from '../money.js';

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

/** What a call produced: its output, what it cost, and whether its reported cost was refused. */
export interface Outcome {
  readonly output: unknown;
  readonly actual: number;
  readonly problem?: unknown;
}

/** The output and actual cost of a tool's result; an invalid reported cost is charged at the estimate. */
export function unwrap(raw: unknown, estimate: number): Outcome {
  if (!isToolResult(raw)) return { output: raw, actual: estimate };
  try {
    toMicros(raw.cost, 'toolResult.cost', 'up');
  } catch (problem) {
    return { output: raw.output, actual: estimate, problem };
  }
  return { output: raw.output, actual: raw.cost };
}
