import { EVENT_INFO, type GuardName, type GuardrailEventType, type GuardrailResult } from './events.js';

/**
 * The answer of one guard to one question. Denials are values, not exceptions: branch on `allowed`.
 * `limit` is the configured limit (null when unlimited); `observed` is the value the guard compared to it.
 */
export interface GuardCheck {
  readonly allowed: boolean;
  readonly result: GuardrailResult;
  readonly eventType: GuardrailEventType;
  readonly guardName: GuardName;
  readonly reason: string;
  readonly limit?: number | null;
  readonly observed?: number;
}

/**
 * A reason, or a function that writes it from the check when first asked: most checks' reasons are never
 * read, and formatting numbers costs more than the check. Module-level functions keep checks closure-free;
 * `extra` carries the one value a reason may need beyond `limit` and `observed`.
 */
export type Reason = string | ((check: GuardCheck, extra: number | string) => string);

/** Fields are readonly to TypeScript but not frozen: freezing every check would double its cost. */
class Check implements GuardCheck {
  readonly allowed: boolean;
  readonly result: GuardrailResult;
  readonly eventType: GuardrailEventType;
  readonly guardName: GuardName;
  readonly limit: number | null;
  declare readonly observed?: number;
  #reason: Reason;
  readonly #extra: number | string;

  constructor(
    eventType: GuardrailEventType,
    reason: Reason,
    limit: number | null,
    observed: number | undefined,
    extra: number | string,
  ) {
    const info = EVENT_INFO[eventType];
    this.allowed = info.result === 'allowed';
    this.result = info.result;
    this.eventType = eventType;
    this.guardName = info.guardName;
    this.limit = limit;
    if (observed !== undefined) (this as { observed?: number }).observed = observed;
    this.#reason = reason;
    this.#extra = extra;
  }

  get reason(): string {
    const reason = this.#reason;
    if (typeof reason === 'string') return reason;
    return (this.#reason = reason(this, this.#extra));
  }

  toJSON(): GuardCheck {
    const { allowed, result, eventType, guardName, reason, limit, observed } = this;
    return observed === undefined
      ? { allowed, result, eventType, guardName, reason, limit }
      : { allowed, result, eventType, guardName, reason, limit, observed };
  }
}

/** Builds a check; guard name and result follow from the event type, so they cannot disagree. */
export function makeCheck(
  eventType: GuardrailEventType,
  reason: Reason,
  limit: number | null,
  observed?: number,
  extra: number | string = '',
): GuardCheck {
  return new Check(eventType, reason, limit, observed, extra);
}
