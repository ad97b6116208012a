import { intField, missing, objectWithKeys } from './validate.js';

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
const WIRE_KEYS = ['max_tool_calls_per_invocation', 'max_retries_per_failure'] as const;

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

  /**
   * @internal validates untrusted input; `prefix` is the path of the enclosing object in error messages.
   * The `wire` (snake_case) form must carry every key: a missing limit is an error, not "unlimited".
   */
  static parse(init: unknown, prefix: string, wire = false): ActorLimits {
    const names = wire ? WIRE_KEYS : KEYS;
    const o = objectWithKeys(init, prefix.replace(/\.$/, '') || 'actorLimits', names, prefix);
    const read = (i: number, min: number): number | null => {
      const value = o[names[i] as string];
      const field = `${prefix}${WIRE_KEYS[i]}`;
      if (value !== undefined) return intField(value, field, min, true);
      return wire ? missing(field) : null;
    };
    return new ActorLimits(read(0, 1), read(1, 0));
  }

  static readonly UNLIMITED = new ActorLimits(null, null);

  toJSON(): ActorLimitsJson {
    return {
      max_tool_calls_per_invocation: this.maxToolCallsPerInvocation,
      max_retries_per_failure: this.maxRetriesPerFailure,
    };
  }
}
