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

/** Builds a frozen check; guard name and result follow from the event type, so they cannot disagree. */
export function makeCheck(
  eventType: GuardrailEventType,
  reason: string,
  limit: number | null,
  observed?: number,
): GuardCheck {
  const info = EVENT_INFO[eventType];
  const check: GuardCheck =
    observed === undefined
      ? {
          allowed: info.result === 'allowed',
          result: info.result,
          eventType,
          guardName: info.guardName,
          reason,
          limit,
        }
      : {
          allowed: info.result === 'allowed',
          result: info.result,
          eventType,
          guardName: info.guardName,
          reason,
          limit,
          observed,
        };
  return Object.freeze(check);
}
