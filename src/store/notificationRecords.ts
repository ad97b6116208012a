import { GuardrailError, invalid } from '../errors.js';
import { objectWithKeys } from '../guardrails/validate.js';
import { formatIso, isSerializableTimestamp, parseIsoMs } from '../iso.js';
import { copyJsonObject, type JsonObject } from '../json.js';
import { oneOf, optional, storedInteger, storedName, storedNames, storedText, storedTime } from './fields.js';
import {
  NOTIFICATION_STATUSES,
  type Notification,
  type NotificationInput,
  type NotificationOutcome,
  type NotificationStatus,
} from './notifications.js';

// The notification outbox as every store checks it: what is queued, what a claim asks for, what a
// dispatcher reports, and a queued notification as it is read back.

/** Largest payload a store queues, as JSON text in UTF-8. */
export const MAX_NOTIFICATION_PAYLOAD_BYTES = 1024 * 1024;
/** Longest lease a claim may take. */
export const MAX_LEASE_MS = 24 * 60 * 60 * 1000;
/** Most notifications one claim or one listing returns. */
export const MAX_NOTIFICATION_LIMIT = 10_000;
/** How many notifications a listing returns when its filter does not say. */
export const DEFAULT_LIST_LIMIT = 100;

/** A notification to queue, checked, with its payload copied (frozen) and as the JSON text kept. */
export interface CheckedInput extends NotificationInput {
  readonly payloadText: string;
}

/** The notifications to queue, each checked; none is queued unless all pass. */
export function checkedInputs(items: unknown): CheckedInput[] {
  if (!Array.isArray(items)) invalid('notifications', 'an array of notifications', items);
  return items.map((item: unknown, i) => {
    const field = `notifications[${i}]`;
    if (item === undefined) invalid(field, 'an object', item);
    const n = objectWithKeys(item, field, ['id', 'target', 'event', 'payload', 'createdAt']);
    const { value: payload, bytes } = copyJsonObject(n['payload'], `${field}.payload`);
    if (bytes > MAX_NOTIFICATION_PAYLOAD_BYTES) {
      invalid(
        `${field}.payload`,
        `at most ${MAX_NOTIFICATION_PAYLOAD_BYTES} bytes of JSON`,
        `${bytes} bytes`,
      );
    }
    return {
      id: storedName(n['id'], `${field}.id`),
      target: storedName(n['target'], `${field}.target`),
      event: storedName(n['event'], `${field}.event`),
      payload,
      createdAt: storedTime(n['createdAt'], `${field}.createdAt`),
      payloadText: JSON.stringify(payload),
    };
  });
}

/** A claim as checked: the times as canonical text, `leaseUntil` the end of the lease it takes. */
export interface CheckedClaim {
  readonly targets: readonly string[];
  readonly now: string;
  readonly leaseUntil: string;
  readonly limit: number;
}

export function checkedClaim(claim: unknown): CheckedClaim {
  const c = objectWithKeys(claim ?? null, 'claim', ['targets', 'now', 'leaseMs', 'limit']);
  const now = storedTime(c['now'], 'claim.now');
  const leaseMs = storedInteger(c['leaseMs'], 'claim.leaseMs', 1, MAX_LEASE_MS);
  const end = parseIsoMs(now) + leaseMs;
  if (!isSerializableTimestamp(end)) invalid('claim.now', 'a time a lease can end after', c['now']);
  return {
    targets: [...new Set(storedNames(c['targets'], 'claim.targets'))],
    now,
    leaseUntil: formatIso(end),
    limit: storedInteger(c['limit'], 'claim.limit', 1, MAX_NOTIFICATION_LIMIT),
  };
}

/** A dispatcher's report, checked, its times canonical. */
export function checkedOutcome(id: unknown, outcome: unknown): NotificationOutcome {
  storedName(id, 'id');
  const kind = oneOf((outcome as { kind?: unknown } | null)?.kind, 'outcome.kind', [
    'delivered',
    'retry',
    'failed',
  ] as const);
  if (kind === 'delivered') {
    const o = objectWithKeys(outcome, 'outcome', ['kind', 'at']);
    return { kind, at: storedTime(o['at'], 'outcome.at') };
  }
  if (kind === 'failed') {
    const o = objectWithKeys(outcome, 'outcome', ['kind', 'at', 'error']);
    return { kind, at: storedTime(o['at'], 'outcome.at'), error: storedText(o['error'], 'outcome.error') };
  }
  const o = objectWithKeys(outcome, 'outcome', ['kind', 'at', 'error', 'nextAttemptAt']);
  return {
    kind,
    at: storedTime(o['at'], 'outcome.at'),
    error: storedText(o['error'], 'outcome.error'),
    nextAttemptAt: storedTime(o['nextAttemptAt'], 'outcome.nextAttemptAt'),
  };
}

/** The error of an outcome reported for no stored notification. */
export function notificationNotFound(id: string): GuardrailError {
  return new GuardrailError('NOTIFICATION_NOT_FOUND', `no notification has id "${id}"`);
}

/** What a listing asks for, checked. */
export function checkedListing(filter: unknown): { status: NotificationStatus | undefined; limit: number } {
  const f = objectWithKeys(filter, 'filter', ['status', 'limit']);
  const status = f['status'];
  const limit = f['limit'];
  return {
    status: status === undefined ? undefined : oneOf(status, 'filter.status', NOTIFICATION_STATUSES),
    limit:
      limit === undefined
        ? DEFAULT_LIST_LIMIT
        : storedInteger(limit, 'filter.limit', 1, MAX_NOTIFICATION_LIMIT),
  };
}

/** A notification's fields as a store holds them, its optional ones absent or undefined. */
export interface NotificationFields {
  readonly id: string;
  readonly target: string;
  readonly event: string;
  readonly payload: unknown;
  readonly createdAt: string;
  readonly seq: number;
  readonly status: string;
  readonly attempts: number;
  readonly nextAttemptAt: string;
  readonly leaseUntil?: string | undefined;
  readonly lastError?: string | undefined;
  readonly deliveredAt?: string | undefined;
}

/**
 * A notification as read back, frozen, its fields in one order; checked as its writer checked them, so
 * that one no writer could have written throws.
 */
export function notificationOf(f: NotificationFields): Notification {
  const at = `notification "${f.id}"`;
  return Object.freeze({
    id: storedName(f.id, `${at}.id`),
    target: storedName(f.target, `${at}.target`),
    event: storedName(f.event, `${at}.event`),
    payload: copyJsonObject(f.payload, `${at}.payload`).value as JsonObject,
    createdAt: storedTime(f.createdAt, `${at}.createdAt`),
    seq: storedInteger(f.seq, `${at}.seq`, 1, Number.MAX_SAFE_INTEGER),
    status: oneOf(f.status, `${at}.status`, NOTIFICATION_STATUSES),
    attempts: storedInteger(f.attempts, `${at}.attempts`, 0, Number.MAX_SAFE_INTEGER),
    nextAttemptAt: storedTime(f.nextAttemptAt, `${at}.nextAttemptAt`),
    ...optional('leaseUntil', f.leaseUntil, (v) => storedTime(v, `${at}.leaseUntil`)),
    ...optional('lastError', f.lastError, (v) => storedText(v, `${at}.lastError`)),
    ...optional('deliveredAt', f.deliveredAt, (v) => storedTime(v, `${at}.deliveredAt`)),
  });
}
