import type { JsonValue } from '../json.js';

/** What a tool is handed besides its input. */
export interface ToolContext {
  readonly planId: string;
  readonly decisionId: string;
}

/** A named capability a plan's decisions call. */
export interface Tool<I = JsonValue | undefined, O = unknown> {
  readonly name: string;
  readonly description: string;
  /** Operation name checked against `required_confirmations`. */
  readonly operation?: string;
  /** Estimated cost per call, or a function of the input. */
  readonly cost?: number | ((input: I) => number);
  run(input: I, ctx: ToolContext): O | Promise<O>;
}
