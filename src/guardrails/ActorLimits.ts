import { intField, objectWithKeys } from './validate.js';

/** Limits that apply to one actor invocation rather than to the whole plan. */
export interface ActorLimitsInit {
  /** Tool calls one invocation may make; null = unlimited. Integer >= 1. */
  maxToolCallsPerInvocation?: number | null;
  /** Retries allowed for one failure; null = unlimited. Integer >= 0. */
  maxRetriesPerFailure?: number | null;
}

/** Wire form of {@link ActorLimits}. */
export interface ActorLimitsJson {
  max_tool_calls_per_invocation: number | null;
  max_retries_per_failure: number | null;
}

const KEYS = ['maxToolCallsPerInvocation', 'maxRetriesPerFailure'] as const;

/** Per-invocation limits: tool calls per invocation and retries per failure. Immutable. */
export class ActorLimits {
  readonly maxToolCallsPerInvocation: number | null;
  readonly maxRetriesPerFailure: number | null;

  private constructor(maxToolCalls: number | null, maxRetries: number | null) {
    this.maxToolCallsPerInvocation = maxToolCalls;
    this.maxRetriesPerFailure = maxRetries;
    Object.freeze(this);
  }

  /**
   * @throws GuardrailValidationError naming the field, e.g.
   * `max_tool_calls_per_invocation must be an integer >= 1, got 0`.
   */
  static create(init?: ActorLimitsInit): ActorLimits {
    return ActorLimits.parse(init, '');
  }

  /** @internal validates untrusted input; `prefix` is the path of the enclosing object in error messages. */
  static parse(init: unknown, prefix: string, snakeKeys = false): ActorLimits {
    const keys = snakeKeys ? ['max_tool_calls_per_invocation', 'max_retries_per_failure'] : KEYS;
    const o = objectWithKeys(init, prefix.replace(/\.$/, '') || 'actorLimits', keys, prefix);
    const calls = snakeKeys ? o['max_tool_calls_per_invocation'] : o['maxToolCallsPerInvocation'];
    const retries = snakeKeys ? o['max_retries_per_failure'] : o['maxRetriesPerFailure'];
    return new ActorLimits(
      calls === undefined ? null : intField(calls, `${prefix}max_tool_calls_per_invocation`, 1, true),
      retries === undefined ? null : intField(retries, `${prefix}max_retries_per_failure`, 0, true),
    );
  }

  static readonly UNLIMITED = new ActorLimits(null, null);

  toJSON(): ActorLimitsJson {
    return {
      max_tool_calls_per_invocation: this.maxToolCallsPerInvocation,
      max_retries_per_failure: this.maxRetriesPerFailure,
    };
  }
}
