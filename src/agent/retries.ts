import { invalid } from '../errors.js';
import { objectWithKeys } from '../guardrails/validate.js';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';

/** Waits `ms`; `signal`, when given, aborts to end the wait early. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/**
 * Exponential backoff between retries of one failure: base * factor^n, at most maxMs. `maxRetries`
 * caps retries per failure when the guardrails set no `max_retries_per_failure`.
 */
export interface RetryOptions {
  baseMs?: number;
  factor?: number;
  maxMs?: number;
  maxRetries?: number;
}

export type RetryPolicy = Readonly<Required<RetryOptions>>;

/** The retry options with their defaults (100 ms, doubling, at most 30 s, 3 retries), validated. */
export function retryPolicy(value: unknown): RetryPolicy {
  const retry = objectWithKeys(value, 'retry', ['baseMs', 'factor', 'maxMs', 'maxRetries']);
  const maxRetries = retry['maxRetries'] ?? 3;
  if (!Number.isSafeInteger(maxRetries) || (maxRetries as number) < 0) {
    invalid('retry.maxRetries', 'an integer >= 0', maxRetries);
  }
  return Object.freeze({
    baseMs: nonNegative(retry['baseMs'] ?? 100, 'retry.baseMs'),
    factor: nonNegative(retry['factor'] ?? 2, 'retry.factor'),
    maxMs: nonNegative(retry['maxMs'] ?? 30_000, 'retry.maxMs'),
    maxRetries: maxRetries as number,
  });
}

/** How long to wait before retry number `retries` + 1. */
export function backoffMs(policy: RetryPolicy, retries: number): number {
  return Math.min(policy.maxMs, policy.baseMs * policy.factor ** retries);
}

/** The name a failure is told apart by: the error's name, or its type for a thrown non-error. */
export function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

/**
 * Asks the guardrails whether a failure may be tried again, counted per `fingerprint` in `failures`.
 * Returns the retries made so far of it (for the backoff), counting this one, or null when it may not:
 * the retry guard refused (recorded in the audit log), or the guardrails set no limit and the policy's
 * `maxRetries` is reached.
 */
export async function nextRetry(
  service: AutonomyGuardrailService,
  planId: string,
  failures: Map<string, number>,
  fingerprint: string,
  error: string,
  policy: RetryPolicy,
): Promise<number | null> {
  const retries = failures.get(fingerprint) ?? 0;
  const check = await service.checkRetries(planId, retries, { error });
  if (!check.allowed) return null;
  // With no max_retries_per_failure the guardrails allow any number: the policy's cap stops it.
  if (check.limit === null && retries >= policy.maxRetries) return null;
  failures.set(fingerprint, retries + 1);
  return retries;
}

function nonNegative(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
    invalid(field, 'a finite number >= 0', value);
  return value;
}
