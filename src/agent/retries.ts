import { z } from 'zod';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import { integer, strict } from '../validation.js';

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

const nonNegative = z.number({ error: 'a finite number >= 0' }).min(0, { error: 'a finite number >= 0' });

/** The `retry` option: its defaults (100 ms, doubling, at most 30 s, 3 retries) filled in. */
export const retryOption = strict({
  baseMs: nonNegative.default(100),
  factor: nonNegative.default(2),
  maxMs: nonNegative.default(30_000),
  maxRetries: integer(0).default(3),
}).transform((policy): RetryPolicy => Object.freeze(policy));

/** The retry policy when the options give none. */
export const DEFAULT_RETRY: RetryPolicy = retryOption.parse({});

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
