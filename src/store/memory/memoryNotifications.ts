import type { JsonObject } from '../../json.js';
import {
  checkedClaim,
  checkedInputs,
  checkedListing,
  checkedOutcome,
  notificationNotFound,
  notificationOf,
} from '../notificationRecords.js';
import type {
  Notification,
  NotificationInput,
  NotificationOutcome,
  NotificationStatus,
} from '../notifications.js';

// The notification outbox of a MemoryStore, in this process's memory. Each call runs from its read to
// its write without yielding to the event loop, so two claims never take the same notification.

/** A queued notification as kept: its delivery fields change as it is claimed and finished. */
interface Row {
  readonly id: string;
  readonly target: string;
  readonly event: string;
  readonly payload: JsonObject;
  readonly createdAt: string;
  readonly seq: number;
  status: NotificationStatus;
  attempts: number;
  nextAttemptAt: string;
  leaseUntil: string | undefined;
  lastError: string | undefined;
  deliveredAt: string | undefined;
}

export class MemoryOutbox {
  /** By id, in seq order (a Map keeps the order of insertion). */
  readonly #rows = new Map<string, Row>();
  #seq = 0;

  enqueue(items: readonly NotificationInput[]): void {
    for (const n of checkedInputs(items)) {
      if (this.#rows.has(n.id)) continue;
      this.#rows.set(n.id, {
        id: n.id,
        target: n.target,
        event: n.event,
        payload: n.payload,
        createdAt: n.createdAt,
        seq: ++this.#seq,
        status: 'queued',
        attempts: 0,
        nextAttemptAt: n.createdAt,
        leaseUntil: undefined,
        lastError: undefined,
        deliveredAt: undefined,
      });
    }
  }

  claim(claim: Parameters<typeof checkedClaim>[0]): Notification[] {
    const { targets, now, leaseUntil, limit } = checkedClaim(claim);
    const wanted = new Set(targets);
    // The oldest queued notification of each target: later ones wait for it.
    const heads = new Map<string, Row>();
    for (const row of this.#rows.values()) {
      if (row.status === 'queued' && wanted.has(row.target) && !heads.has(row.target)) {
        heads.set(row.target, row);
      }
    }
    const claimed = [...heads.values()]
      .filter((r) => r.nextAttemptAt <= now && (r.leaseUntil === undefined || r.leaseUntil <= now))
      .sort((a, b) => a.seq - b.seq)
      .slice(0, limit);
    for (const row of claimed) {
      row.leaseUntil = leaseUntil;
      row.attempts += 1;
    }
    return claimed.map(notificationOf);
  }

  finish(id: string, outcome: NotificationOutcome): void {
    const o = checkedOutcome(id, outcome);
    const row = this.#rows.get(id);
    if (row === undefined) throw notificationNotFound(id);
    // A delivery is never taken back, by a dispatcher whose lease had lapsed say.
    if (row.status === 'delivered') return;
    row.leaseUntil = undefined;
    if (o.kind === 'delivered') {
      row.status = 'delivered';
      row.deliveredAt = o.at;
    } else if (o.kind === 'retry') {
      row.nextAttemptAt = o.nextAttemptAt;
      row.lastError = o.error;
    } else {
      row.status = 'failed';
      row.lastError = o.error;
    }
  }

  list(filter: unknown): Notification[] {
    const { status, limit } = checkedListing(filter);
    const out: Notification[] = [];
    const rows = [...this.#rows.values()];
    for (let i = rows.length - 1; i >= 0 && out.length < limit; i--) {
      const row = rows[i] as Row;
      if (status === undefined || row.status === status) out.push(notificationOf(row));
    }
    return out;
  }

  clear(): void {
    this.#rows.clear();
  }
}
