import { notificationOf } from '../notificationRecords.js';
import type { Notification } from '../notifications.js';
import { readRecord } from './rows.js';

// How the SQL stores keep the notification outbox: a row a notification, its payload as JSON text, its
// times as canonical ISO-8601 text, which compares as the times do.

/** The columns of a notification's row, as read. */
export const NOTIFICATION_COLUMNS =
  'seq, id, target, event, payload, created_at, status, attempts, next_attempt_at, lease_until, ' +
  'last_error, delivered_at';

export interface NotificationRow {
  /** A driver may return a big integer as text. */
  seq: number | string;
  id: string;
  target: string;
  event: string;
  payload: string;
  created_at: string;
  status: string;
  attempts: number | string;
  next_attempt_at: string;
  lease_until: string | null;
  last_error: string | null;
  delivered_at: string | null;
}

/** The notification a row holds; one no writer could have written makes the store refuse (`STORE_CORRUPT`). */
export function notificationFromRow(row: NotificationRow, store: string): Notification {
  return readRecord(store, `notification "${row.id}"`, () =>
    notificationOf({
      id: row.id,
      target: row.target,
      event: row.event,
      payload: JSON.parse(row.payload) as unknown,
      createdAt: row.created_at,
      seq: Number(row.seq),
      status: row.status,
      attempts: Number(row.attempts),
      nextAttemptAt: row.next_attempt_at,
      leaseUntil: row.lease_until ?? undefined,
      lastError: row.last_error ?? undefined,
      deliveredAt: row.delivered_at ?? undefined,
    }),
  );
}

/** Notifications claimed, oldest first (a statement's RETURNING gives them in no set order). */
export function claimedFromRows(rows: readonly NotificationRow[], store: string): Notification[] {
  return rows.map((r) => notificationFromRow(r, store)).sort((a, b) => a.seq - b.seq);
}
