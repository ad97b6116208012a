import type { Pool } from 'pg';
import { describeValue } from '../../errors.js';
import {
  checkedClaim,
  checkedInputs,
  checkedListing,
  checkedOutcome,
  notificationNotFound,
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
import { query, transaction, write } from './connection.js';
import type { Tables } from './schema.js';

// The notification outbox of the PostgreSQL store. Queuing and claiming take one advisory lock of the
// outbox for their transaction: claims from any number of processes take turns, so two never claim one
// notification, and notifications become visible in the order of their seq, so none is claimed before
// an older one of its target that another transaction had yet to commit.

const STORE = 'PostgresStore';
/** First key of the outbox's advisory lock ("leob"); the second is the hash of its table's name. */
export const OUTBOX_LOCK = 0x6c656f62;

export class PostgresOutbox {
  readonly #pool: Pool;
  readonly #t: Tables;
  readonly #usable: () => Promise<void>;
  readonly #sql: ReturnType<typeof outboxStatements>;

  constructor(t: Tables, pool: Pool, usable: () => Promise<void>) {
    this.#t = t;
    this.#pool = pool;
    this.#usable = usable;
    this.#sql = outboxStatements(t);
  }

  async enqueue(items: readonly NotificationInput[]): Promise<void> {
    const checked = checkedInputs(items);
    await this.#usable();
    if (checked.length === 0) return;
    const doing = 'queue notifications';
    await transaction(this.#pool, doing, async (client) => {
      await query(client, doing, this.#sql.lock, [OUTBOX_LOCK, this.#t.notifications]);
      await query(client, doing, this.#sql.insert, [
        checked.map((n) => n.id),
        checked.map((n) => n.target),
        checked.map((n) => n.event),
        checked.map((n) => n.payloadText),
        checked.map((n) => n.createdAt),
      ]);
    });
  }

  async claim(given: NotificationClaim): Promise<Notification[]> {
    const c = checkedClaim(given);
    await this.#usable();
    if (c.targets.length === 0) return [];
    const doing = 'claim notifications';
    const rows = await transaction(this.#pool, doing, async (client) => {
      await query(client, doing, this.#sql.lock, [OUTBOX_LOCK, this.#t.notifications]);
      const values = [c.leaseUntil, c.targets, c.now, c.limit];
      return (await query<NotificationRow>(client, doing, this.#sql.claim, values)).rows;
    });
    return claimedFromRows(rows, STORE);
  }

  async finish(id: string, outcome: NotificationOutcome): Promise<void> {
    const o = checkedOutcome(id, outcome);
    await this.#usable();
    const doing = `record the outcome of notification ${describeValue(id)}`;
    const sql = this.#sql;
    const done =
      o.kind === 'delivered'
        ? await write(this.#pool, doing, sql.delivered, [id, o.at])
        : o.kind === 'retry'
          ? await write(this.#pool, doing, sql.retry, [id, o.nextAttemptAt, o.error])
          : await write(this.#pool, doing, sql.failed, [id, o.error]);
    if (done.rowCount !== 0) return;
    const found = await query(this.#pool, doing, sql.exists, [id]);
    if (found.rowCount === 0) throw notificationNotFound(id);
  }

  async list(filter: NotificationFilter | undefined): Promise<Notification[]> {
    const { status, limit } = checkedListing(filter);
    await this.#usable();
    const doing = 'list notifications';
    const found =
      status === undefined
        ? await query<NotificationRow>(this.#pool, doing, this.#sql.list, [limit])
        : await query<NotificationRow>(this.#pool, doing, this.#sql.listIn, [status, limit]);
    return found.rows.map((r) => notificationFromRow(r, STORE));
  }
}

function outboxStatements(t: Tables) {
  const n = t.notifications;
  const columns = `${NOTIFICATION_COLUMNS.replace('seq, ', 'seq::text AS seq, ')}`;
  // Every outcome but a delivery leaves a delivered notification as it is.
  const finishing = (set: string) => `UPDATE ${n} SET ${set}, lease_until = NULL
    WHERE id = $1 AND status <> 'delivered' RETURNING 1`;
  const due = (alias: string) =>
    `${alias}next_attempt_at COLLATE "C" <= $3
     AND (${alias}lease_until IS NULL OR ${alias}lease_until COLLATE "C" <= $3)`;
  return {
    lock: 'SELECT pg_advisory_xact_lock($1, hashtext($2))',
    insert: `INSERT INTO ${n} (id, target, event, payload, created_at, status, attempts, next_attempt_at)
      SELECT i.id, i.target, i.event, i.payload, i.created_at, 'queued', 0, i.created_at
        FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
          WITH ORDINALITY AS i(id, target, event, payload, created_at, n)
       ORDER BY i.n
      ON CONFLICT (id) DO NOTHING`,
    // The oldest queued notification of each target, when it is due and no lease holds it. The row's
    // own conditions are checked again as the update finds it.
    claim: `UPDATE ${n} SET lease_until = $1, attempts = attempts + 1
      WHERE seq IN (
        SELECT h.seq FROM (
          SELECT DISTINCT ON (target) seq, next_attempt_at, lease_until FROM ${n}
           WHERE status = 'queued' AND target = ANY($2::text[])
           ORDER BY target, seq) h
         WHERE ${due('h.')}
         ORDER BY h.seq LIMIT $4)
        AND status = 'queued' AND ${due('')}
      RETURNING ${columns}`,
    delivered: finishing(`status = 'delivered', delivered_at = $2`),
    retry: finishing('next_attempt_at = $2, last_error = $3'),
    failed: finishing(`status = 'failed', last_error = $2`),
    exists: `SELECT 1 FROM ${n} WHERE id = $1`,
    list: `SELECT ${columns} FROM ${n} ORDER BY seq DESC LIMIT $1`,
    listIn: `SELECT ${columns} FROM ${n} WHERE status = $1 ORDER BY seq DESC LIMIT $2`,
  };
}
