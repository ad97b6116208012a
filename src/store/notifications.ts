import type { JsonObject } from '../json.js';

// The outbox of notifications: events queued in the store with the decision's process, delivered later
// by whichever process runs a dispatcher (see `notify/`), with retries, in order per target.

/** Where a queued notification stands. */
export const NOTIFICATION_STATUSES = Object.freeze(['queued', 'delivered', 'failed'] as const);
export type NotificationStatus = (typeof NOTIFICATION_STATUSES)[number];

/** A notification to queue: one event for one target. */
export interface NotificationInput {
  /** Unique; the idempotency id a receiver sees (`webhook-id`), the same on every attempt. */
  readonly id: string;
  /** The target's name as the policy's `notify:` block names it; deliveries to one target go in order. */
  readonly target: string;
  /** `approval.requested`, `approval.decided`, `approval.expired`, `budget.alert`, … */
  readonly event: string;
  /** The event's JSON body, as sent (before a target's formatting). */
  readonly payload: JsonObject;
  readonly createdAt: string;
}

/** A queued notification and where its delivery stands. */
export interface Notification extends NotificationInput {
  /** Order of queuing across the store: deliveries to a target follow it. */
  readonly seq: number;
  readonly status: NotificationStatus;
  /** Attempts made (claims taken). */
  readonly attempts: number;
  /** When it may next be tried. */
  readonly nextAttemptAt: string;
  /** Until when the claim of a dispatcher holds it (another may claim it after). */
  readonly leaseUntil?: string;
  readonly lastError?: string;
  readonly deliveredAt?: string;
}

/** What a dispatcher reports of an attempt. */
export type NotificationOutcome =
  | { readonly kind: 'delivered'; readonly at: string }
  | { readonly kind: 'retry'; readonly at: string; readonly error: string; readonly nextAttemptAt: string }
  | { readonly kind: 'failed'; readonly at: string; readonly error: string };

/** What a dispatcher claims: see `GuardrailStore.claimNotifications`. */
export interface NotificationClaim {
  /** Only notifications to these targets: those the dispatcher knows how to reach. */
  readonly targets: readonly string[];
  readonly now: string;
  readonly leaseMs: number;
  readonly limit: number;
}

/** Which notifications a listing returns: in one status (else all), at most `limit` (default 100). */
export interface NotificationFilter {
  readonly status?: NotificationStatus;
  readonly limit?: number;
}
