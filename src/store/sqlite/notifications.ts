import type Database from 'better-sqlite3';
import {
  checkedClaim,
  checkedInputs,
  checkedListing,
  checkedOutcome,
  notificationNotFound,
  type CheckedClaim,
} from '../notificationRecords.js';
import type {
  Notification,
  NotificationClaim,
  NotificationFilter,
  NotificationInput,
  NotificationOutcome,
} from '../notifications.js';
import {
  claimedFromRows,
  NOTIFICATION_COLUMNS,
  notificationFromRow,
  type NotificationRow,
} from '../sql/notificationRows.js';

// The notification outbox of the SQLite store. Each write runs in an immediate transaction: it holds
// the database's write lock from its read on, so two connections never claim the same notification.

const STORE = 'SqliteStore';

export type SqliteOutbox = ReturnType<typeof sqliteOutbox>;

/** The outbox in the tables of `db` named with prefix `p`. */
export function sqliteOutbox(db: Database.Database, p: string) {
  const t = `${p}notifications`;
  const insert = db.prepare<[string, string, string, string, string, string]>(
    `INSERT INTO ${t} (id, target, event, payload, created_at, status, attempts, next_attempt_at)
     VALUES (?, ?, ?, ?, ?, 'queued', 0, ?) ON CONFLICT (id) DO NOTHING`,
  );
  // The oldest queued notification of each target, when it is due and no lease holds it.
  const claim = db.prepare<[string, string, string, string, number], NotificationRow>(
    `UPDATE ${t} SET lease_until = ?, attempts = attempts + 1
      WHERE seq IN (
        SELECT seq FROM ${t}
         WHERE seq IN (SELECT min(seq) FROM ${t}
                        WHERE status = 'queued' AND target IN (SELECT value FROM json_each(?))
                        GROUP BY target)
           AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
         ORDER BY seq LIMIT ?)
      RETURNING ${NOTIFICATION_COLUMNS}`,
  );
  // Every outcome but a delivery leaves a delivered notification as it is.
  const finish = {
    delivered: db.prepare<[string, string]>(
      `UPDATE ${t} SET status = 'delivered', delivered_at = ?, lease_until = NULL
        WHERE id = ? AND status <> 'delivered'`,
    ),
    retry: db.prepare<[string, string, string]>(
      `UPDATE ${t} SET next_attempt_at = ?, last_error = ?, lease_until = NULL
        WHERE id = ? AND status <> 'delivered'`,
    ),
    failed: db.prepare<[string, string]>(
      `UPDATE ${t} SET status = 'failed', last_error = ?, lease_until = NULL
        WHERE id = ? AND status <> 'delivered'`,
    ),
  };
  const exists = db.prepare<[string], number>(`SELECT 1 FROM ${t} WHERE id = ?`).pluck();
  const list = db.prepare<[number], NotificationRow>(
    `SELECT ${NOTIFICATION_COLUMNS} FROM ${t} ORDER BY seq DESC LIMIT ?`,
  );
  const listIn = db.prepare<[string, number], NotificationRow>(
    `SELECT ${NOTIFICATION_COLUMNS} FROM ${t} WHERE status = ? ORDER BY seq DESC LIMIT ?`,
  );
  const enqueue = db.transaction((items: ReturnType<typeof checkedInputs>) => {
    for (const n of items) insert.run(n.id, n.target, n.event, n.payloadText, n.createdAt, n.createdAt);
  });
  const claimDue = db.transaction((c: CheckedClaim) =>
    claim.all(c.leaseUntil, JSON.stringify(c.targets), c.now, c.now, c.limit),
  );
  const record = db.transaction((id: string, o: NotificationOutcome) => {
    const done =
      o.kind === 'delivered'
        ? finish.delivered.run(o.at, id)
        : o.kind === 'retry'
          ? finish.retry.run(o.nextAttemptAt, o.error, id)
          : finish.failed.run(o.error, id);
    if (done.changes === 0 && exists.get(id) === undefined) throw notificationNotFound(id);
  });
  return {
    enqueue(items: readonly NotificationInput[]): void {
      enqueue.immediate(checkedInputs(items));
    },
    claim(given: NotificationClaim): Notification[] {
      const c = checkedClaim(given);
      return c.targets.length === 0 ? [] : claimedFromRows(claimDue.immediate(c), STORE);
    },
    finish(id: string, outcome: NotificationOutcome): void {
      record.immediate(id, checkedOutcome(id, outcome));
    },
    list(filter: NotificationFilter | undefined): Notification[] {
      const { status, limit } = checkedListing(filter);
      const rows = status === undefined ? list.all(limit) : listIn.all(status, limit);
      return rows.map((r) => notificationFromRow(r, STORE));
    },
  };
}
