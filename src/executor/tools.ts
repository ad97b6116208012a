import type { JsonValue } from '../json.js';
import type { ToolResult } from '../agent/toolResult.js';

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

export {
  isRetryable,
  isToolResult,
  NonRetryableError,
  toolResult,
  type ToolResult,
  type ToolRule,
} from '../agent/toolResult.js';
