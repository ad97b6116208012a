import type Database from 'better-sqlite3';
import type { AuditEntry } from '../../audit/AuditEntry.js';
import { AuditTrail } from '../../audit/AuditTrail.js';
import { GuardrailError } from '../../errors.js';
import { AutonomyGuardrails } from '../../guardrails/AutonomyGuardrails.js';
import {
  type PlanChange,
  type PlanChangeFn,
  type PlanDocument,
  type PlanListing,
  type PlanRecord,
  type UpdateOptions,
} from '../GuardrailStore.js';
import { approvalRowValues, type ApprovalRowValues } from '../sql/approvalRows.js';
import { unanchoredPrune, type CheckpointPolicy } from '../checkpoints.js';
import { chainEntries, decideWrite, type ChainedRecord } from '../decide.js';
import { mergeListings, nextRevision, type CheckedDocument } from '../planDocuments.js';
import { PlanCache, type CachedPlan } from '../planCache.js';
import { guardrailsFromRow } from '../sql/rows.js';
import { capTransactionsOf, type CapsInTransaction, type CapTransactions } from './caps.js';
import type { SqliteOutbox } from './notifications.js';
import type { SqlitePeople } from './people.js';
import {
  approvalOf,
  documentOf,
  readEntry,
  type AuditRow,
  type ChainedRow,
  type Head,
  type Statements,
} from './statements.js';

// The transactions of the SQLite store: updates (several to one commit), puts, reads, deletions.

/** What the connection has seen: when it changes between two updates, another writer was at work. */
export interface Seen {
  /** `PRAGMA data_version`: changes when another connection commits. */
  readonly version: number;
  /** `total_changes()`: rows this connection has changed, through the store or not. */
  readonly changes: number;
}

/** True when the connection has seen nothing new since `last`: no other writer, no change of its own. */
function sameAs(last: Seen | null, now: Seen): boolean {
  return last !== null && last.version === now.version && last.changes === now.changes;
}

/** An update waiting for the store's next transaction. */
export interface Pending {
  readonly planId: string;
  readonly change: PlanChangeFn<unknown>;
  readonly approvalId: string | undefined;
  /** Reads the spend caps as of this time (see `UpdateOptions.capsAt`). */
  readonly capsAt: number | undefined;
  /** Told the entries the update appended, once they are committed (see `UpdateOptions.onCommit`). */
  readonly onCommit: UpdateOptions['onCommit'];
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * How one update of a transaction came out: its result (with the entries it appended, for an update
 * with `onCommit`), or why it was refused before it wrote.
 */
export type Outcome =
  | { readonly ok: true; readonly result: unknown; readonly records: readonly ChainedRecord[] | undefined }
  | { readonly ok: false; readonly error: unknown };

/** What an update transaction hands back once it has committed. */
export interface Updated {
  readonly outcomes: readonly Outcome[];
  readonly seen: Seen;
}

/** An update decided, before anything of it is written. */
export interface Decided {
  readonly result: unknown;
  /** The plan after the update, to decide the next one from; null when there is no plan. */
  readonly state: CachedPlan | null;
  /** The rows to write; none for an update that changes nothing. */
  readonly write?: {
    readonly approval: ApprovalRowValues | undefined;
    readonly newApproval: ApprovalRowValues | undefined;
    /** New guardrails, when the update changes them. */
    readonly guardrails: AutonomyGuardrails | undefined;
    /** The entries to record, chained after the plan's last entry, in order. */
    readonly entries: readonly ChainedRecord[];
  };
}

/** An update failed after it may have written part of its change: its transaction must not commit. */
export class PartlyWritten {
  constructor(readonly cause: unknown) {}
}

export interface Transactions {
  /**
   * Runs updates one after the other in one transaction. Throws, having written nothing, when the
   * transaction fails or when an update failed while writing ({@link PartlyWritten}).
   */
  update: (updates: readonly Pending[]) => Updated;
  put: (planId: string, guardrails: string, entries: readonly AuditEntry[] | undefined) => void;
  get: (planId: string) => PlanRecord | null;
  getGuardrails: (planId: string) => AutonomyGuardrails | null;
  readLog: (planId: string) => ChainedRow[];
  delete: (planId: string) => boolean;
  saveDocument: (doc: CheckedDocument) => PlanDocument;
  prune: (planId: string, throughSeq: number) => number;
  listPlans: () => PlanListing[];
  /** Installing, removing and listing spend caps. */
  caps: CapTransactions;
  /** Principals and personal tokens. */
  people: SqlitePeople;
  /** The notification outbox. */
  outbox: SqliteOutbox;
}

/** What the transactions need of the store. */
export interface TransactionsOf {
  readonly cache: PlanCache;
  readonly checkpoints: CheckpointPolicy | null;
  readonly auditCapacity: number;
  /** The spend caps and windows update transactions read and write. */
  readonly caps: CapsInTransaction;
  readonly people: SqlitePeople;
  readonly outbox: SqliteOutbox;
  /** What the connection had seen after the store's last update, or null when that is not known. */
  lastSeen(): Seen | null;
}

/**
 * The store's transactions over `db` and its statements `s`: an update transaction decides each update
 * from `cache` (the plans as last committed, when nobody else wrote since) or the row, and keeps there
 * what it commits.
 */
export function transactionsOf(db: Database.Database, s: Statements, store: TransactionsOf): Transactions {
  const lastEntry = (planId: string): Head | null => s.selectHead.get(planId) ?? null;
  /** Stores an entry chained by chainEntry, and the checkpoint that covers it when one is due. */
  const record = (planId: string, { audit, chained: c, checkpoint: cp }: ChainedRecord): void => {
    s.insertEntry.run(
      planId,
      c.seq,
      audit.eventType,
      audit.timestamp,
      JSON.stringify(audit.details),
      c.prev,
      c.hash,
    );
    if (cp !== null) s.insertCheckpoint.run(planId, cp.size, cp.head, cp.ts, cp.signature ?? null);
  };
  const seen = (): Seen => ({
    version: s.dataVersion.get() as number,
    changes: s.totalChanges.get() as number,
  });
  /**
   * Decides one update, writing nothing: reads the plan (unless cached), runs the change and works out
   * every row to write. May change the cached guardrails in place, after everything that can fail.
   */
  const decide = (
    { planId, change, approvalId, capsAt }: Pending,
    inTransaction: ReadonlyMap<string, CachedPlan>,
  ): Decided => {
    // A plan this transaction already changed is taken from there: its row is written only at the end.
    const cached = inTransaction.get(planId) ?? store.cache.get(planId);
    let stored: AutonomyGuardrails | null;
    let head: Head | null | undefined;
    if (cached !== undefined) {
      stored = cached.guardrails;
      head = cached.head;
    } else {
      const json = s.selectPlan.get(planId);
      stored = json === undefined ? null : guardrailsFromRow(planId, json, 'SqliteStore');
    }
    const row = approvalId === undefined ? undefined : s.selectApproval.get(approvalId);
    const wanted = row === undefined || row.plan_id !== planId ? null : approvalOf(row);
    const capView = capsAt === undefined ? null : store.caps.view(stored, capsAt);
    const out: PlanChange<unknown> = change(stored, wanted, capView);
    const before = head ?? (stored === null ? null : lastEntry(planId));
    // The approvals' rows are made (and checked) before anything of the plan changes.
    let approval: ApprovalRowValues | undefined;
    let newApproval: ApprovalRowValues | undefined;
    const w = decideWrite(planId, stored, out, {
      claim: (a, n) => {
        approval = a === undefined ? undefined : approvalRowValues(a);
        newApproval = n === undefined ? undefined : approvalRowValues(n);
      },
      record: (entries) => chainEntries(planId, before, entries, store.checkpoints),
      capView,
    });
    if (w === null) {
      return {
        result: out.result,
        state: stored === null ? null : { guardrails: stored, head: before, version: '' },
      };
    }
    store.caps.keep(w.caps);
    const last = w.entries.at(-1)?.chained;
    const g = w.guardrails ?? (stored as AutonomyGuardrails);
    return {
      result: out.result,
      state: {
        guardrails: g,
        head: last === undefined ? before : { seq: last.seq, hash: last.hash },
        version: '',
      },
      write: {
        approval,
        newApproval,
        guardrails: w.guardrails,
        entries: w.entries,
      },
    };
  };
  /**
   * Writes what {@link decide} worked out, but for the plan's row, which the transaction writes once at
   * its end; throws {@link PartlyWritten} when any of it fails.
   */
  const write = (planId: string, w: NonNullable<Decided['write']>): void => {
    try {
      if (w.approval !== undefined && s.upsertApproval.run(...w.approval).changes === 0) {
        throw new GuardrailError('STORE_CONTRACT', `approval "${w.approval[0]}" belongs to another plan`);
      }
      if (w.newApproval !== undefined && s.insertApproval.run(...w.newApproval).changes === 0) {
        throw new GuardrailError('APPROVAL_ID_TAKEN', `approval id "${w.newApproval[0]}" is already used`);
      }
      for (const e of w.entries) record(planId, e);
    } catch (error) {
      throw new PartlyWritten(error);
    }
  };
  const update = db.transaction((updates: readonly Pending[]): Updated => {
    // With the write lock held, the data version counts every commit of another connection, and the
    // change count every row this connection changed: both as they were after the last update means
    // the cached plans are what the database holds.
    if (!sameAs(store.lastSeen(), seen())) {
      store.cache.clear();
      store.caps.forget();
    }
    store.caps.begin();
    const outcomes: Outcome[] = [];
    // The plans as this transaction leaves them, and those whose row it writes at its end (once, for
    // any number of updates of the plan).
    const plans = new Map<string, CachedPlan>();
    const rows = new Set<string>();
    for (const u of updates) {
      let decided: Decided;
      try {
        decided = decide(u, plans);
      } catch (error) {
        // Nothing written. The plan is read again, in case it was changed in place; one whose row is
        // not written yet cannot be, so the updates run again each in a transaction of its own.
        if (rows.has(u.planId)) throw new PartlyWritten(error);
        plans.delete(u.planId);
        store.cache.delete(u.planId);
        outcomes.push({ ok: false, error });
        continue;
      }
      const w = decided.write;
      if (w !== undefined) {
        write(u.planId, w);
        if (w.guardrails !== undefined) rows.add(u.planId);
        // Its audit window, when kept, goes on with the plan: a failed transaction drops both.
        const trail = store.cache.trail(u.planId);
        if (trail !== undefined) for (const e of w.entries) trail.add(e.audit);
      }
      if (decided.state === null) {
        plans.delete(u.planId);
        store.cache.delete(u.planId);
      } else {
        plans.set(u.planId, decided.state);
        store.cache.set(u.planId, decided.state);
      }
      const records = u.onCommit === undefined ? undefined : w?.entries;
      outcomes.push({ ok: true, result: decided.result, records });
    }
    try {
      for (const planId of rows) {
        const g = (plans.get(planId) as CachedPlan).guardrails;
        s.updatePlan.run(JSON.stringify(g.toJSON()), planId);
      }
      store.caps.write();
    } catch (error) {
      throw new PartlyWritten(error);
    }
    return { outcomes, seen: seen() };
  });
  const put = db.transaction(
    (planId: string, guardrails: string, entries: readonly AuditEntry[] | undefined): void => {
      s.upsertPlan.run(planId, guardrails);
      if (entries === undefined) return;
      const head = s.selectHead.get(planId) ?? null;
      s.setWindow.run((head?.seq ?? 0) + 1, planId);
      for (const e of chainEntries(planId, head, entries, store.checkpoints)) record(planId, e);
    },
  );
  // A deferred transaction, so the guardrails and the entries come from one snapshot. `keep`: the
  // entries may be kept as the window of the plan cached, if the snapshot is what this store committed.
  const get = db.transaction((planId: string, keep: boolean): PlanRecord | null => {
    const json = s.selectPlan.get(planId);
    if (json === undefined) return null;
    const guardrails = guardrailsFromRow(planId, json, 'SqliteStore');
    const rows = s.selectEntries.all(planId, store.auditCapacity);
    const audit = new AuditTrail({ maxEntries: store.auditCapacity });
    for (let i = rows.length - 1; i >= 0; i--) audit.add(readEntry(planId, rows[i] as AuditRow));
    if (keep && sameAs(store.lastSeen(), seen())) store.cache.keepTrail(planId, audit.clone());
    return { guardrails, audit };
  });
  const readLog = db.transaction((planId: string): ChainedRow[] => s.selectLog.all(planId));
  const remove = db.transaction((planId: string): boolean => {
    s.deleteEntries.run(planId);
    s.deleteCheckpoints.run(planId);
    s.deleteApprovals.run(planId);
    const hadDocument = s.deleteDocument.run(planId).changes > 0;
    return s.deletePlan.run(planId).changes > 0 || hadDocument;
  });
  const saveDocument = db.transaction((doc: CheckedDocument): PlanDocument => {
    const revision = nextRevision(doc, s.selectRevision.get(doc.planId) ?? null);
    s.upsertDocument.run(doc.planId, doc.phase, doc.body, doc.updatedAt, revision);
    return documentOf({
      plan_id: doc.planId,
      phase: doc.phase,
      body: doc.body,
      updated_at: doc.updatedAt,
      revision,
    });
  });
  const prune = db.transaction((planId: string, throughSeq: number): number => {
    if (s.hasCheckpoint.get(planId, throughSeq) === undefined) throw unanchoredPrune(planId, throughSeq);
    return s.pruneEntries.run(planId, throughSeq).changes;
  });
  const listPlans = db.transaction((): PlanListing[] =>
    mergeListings(
      s.listPlanIds.all(),
      s.listDocuments
        .all()
        .map((r) => ({ planId: r.plan_id, phase: r.phase, updatedAt: r.updated_at, revision: r.revision })),
    ),
  );
  return {
    update: (updates) => update.immediate(updates),
    put: (planId, guardrails, entries) => put.immediate(planId, guardrails, entries),
    get: (planId) => {
      // The window kept for a plan this store last committed, while nothing else wrote since; not inside
      // a transaction (a read from a change function), where the cache may hold what is not committed yet.
      if (db.inTransaction) return get.deferred(planId, false);
      const cached = store.cache.get(planId);
      const trail = cached === undefined ? undefined : store.cache.trail(planId);
      if (trail === undefined || !sameAs(store.lastSeen(), seen())) return get.deferred(planId, true);
      return { guardrails: (cached as CachedPlan).guardrails.clone(), audit: trail.clone() };
    },
    getGuardrails: (planId) => {
      // What this store last committed, while nothing else wrote since: a copy, without reading the row.
      // Not inside a transaction (a read from a change function): the cache may hold what it has not
      // committed yet, and may still roll back.
      const cached = db.inTransaction ? undefined : store.cache.get(planId);
      if (cached !== undefined && sameAs(store.lastSeen(), seen())) return cached.guardrails.clone();
      const json = s.selectPlan.get(planId);
      return json === undefined ? null : guardrailsFromRow(planId, json, 'SqliteStore');
    },
    readLog: (planId) => readLog.deferred(planId),
    delete: (planId) => remove.immediate(planId),
    saveDocument: (doc) => saveDocument.immediate(doc),
    prune: (planId, throughSeq) => prune.immediate(planId, throughSeq),
    listPlans: () => listPlans.deferred(),
    caps: capTransactionsOf(db, store.caps.statements),
    people: store.people,
    outbox: store.outbox,
  };
}
