import type Database from 'better-sqlite3';
import { AuditTrail } from '../../audit/AuditTrail.js';
import { type ChainedEntry, type Checkpoint, type MalformedEntry } from '../../audit/chain.js';
import { GuardrailError } from '../../errors.js';
import { AutonomyGuardrails } from '../../guardrails/AutonomyGuardrails.js';
import {
  type Approval,
  type ApprovalStatus,
  type CapWindowRecord,
  type UpdateOptions,
  type GuardrailStore,
  type Notification,
  type NotificationClaim,
  type NotificationFilter,
  type NotificationInput,
  type NotificationOutcome,
  type PersonalToken,
  type PlanChangeFn,
  type PlanDocument,
  type PlanDocumentInput,
  type PlanListing,
  type PlanRecord,
  type Principal,
} from '../GuardrailStore.js';
import { pruneTarget, type CheckpointPolicy } from '../checkpoints.js';
import { logEntryFromRow } from '../sql/auditRows.js';
import { checkDocument } from '../planDocuments.js';
import { reportCommit } from '../decide.js';
import { MAX_UPDATES_PER_WRITE, PlanCache } from '../planCache.js';
import { checkpointFromRow } from '../sql/rows.js';
import { sqliteFailure, sqliteSettings, type SqliteStoreOptions } from './connection.js';
import { migrateSchema } from './schema.js';
import { CapsInTransaction, prepareCapStatements } from './caps.js';
import { sqlitePeople } from './people.js';
import { sqliteOutbox } from './notifications.js';
import type { SpendCap } from '../../guardrails/caps.js';
import {
  chainedOf,
  documentOf,
  approvalOf,
  listedApprovals,
  prepareStatements,
  storedRow,
  type ChainedRow,
  type Statements,
} from './statements.js';
import {
  PartlyWritten,
  transactionsOf,
  type Outcome,
  type Seen,
  type Pending,
  type Transactions,
  type Updated,
} from './transactions.js';

export { SQLITE_SCHEMA_VERSION } from './schema.js';

export type { SqliteStoreOptions } from './connection.js';

/**
 * Keeps guardrails, audit entries and approvals in a SQLite database through better-sqlite3, so that
 * several processes can share one file. Every update runs in a `BEGIN IMMEDIATE` transaction: the
 * read, the decision and the writes of concurrent updates, from any process, never interleave. Updates
 * made before the store's next transaction starts share it (one commit for all), each still all or
 * nothing. An update is decided from the plan as this connection last committed it while no other
 * writer has committed since, otherwise from the row read again. The audit table keeps every entry;
 * `get` returns the newest `auditCapacity` of them, and keeps them for the plans it read last, read again
 * only once another writer has committed.
 *
 * Call {@link migrate} once before anything else. Statements run synchronously on the calling thread:
 * while another process holds the write lock, a call blocks for up to `busyTimeoutMs` and then rejects
 * with a `STORE_UNAVAILABLE` {@link GuardrailError}, which makes the service deny.
 *
 * @example
 * const store = new SqliteStore({ path: 'guardrails.db' });
 * await store.migrate();
 * const service = new AutonomyGuardrailService({ store });
 */
export class SqliteStore implements GuardrailStore {
  readonly auditCapacity: number;
  /** The prefix of every table and index name. */
  readonly tablePrefix: string;
  readonly busyTimeoutMs: number;
  readonly #checkpoints: CheckpointPolicy | null;
  readonly #db: Database.Database;
  readonly #ownsDatabase: boolean;
  #statements: Statements | undefined;
  #transactions: Transactions | undefined;
  #closed = false;
  /** Plans as last committed through this connection, valid while {@link #seen} says nobody else wrote. */
  readonly #cache = new PlanCache();
  #seen: Seen | null = null;
  /** Updates waiting for the next transaction, which a queued microtask runs. */
  #pending: Pending[] = [];
  #flushing = false;
  /** True while a transaction of updates runs (and change functions with it). */
  #running = false;

  constructor(options: SqliteStoreOptions = {}) {
    const c = sqliteSettings(options);
    this.auditCapacity = c.auditCapacity;
    this.busyTimeoutMs = c.busyTimeoutMs;
    this.tablePrefix = c.tablePrefix;
    this.#checkpoints = c.checkpoints;
    this.#db = c.db;
    this.#ownsDatabase = c.ownsDatabase;
  }

  /**
   * Brings the schema up to {@link SQLITE_SCHEMA_VERSION}, one transaction for all the steps, and
   * prepares the statements. Safe to run again and from several processes at once: a database that is
   * up to date is left alone.
   * @throws GuardrailError `STORE_SCHEMA_TOO_NEW` when the database was migrated by a newer version
   */
  async migrate(): Promise<void> {
    this.#open();
    const p = this.tablePrefix;
    const db = this.#db;
    try {
      migrateSchema(db, p);
      this.#statements ??= prepareStatements(this.#db, this.tablePrefix);
      this.#transactions ??= transactionsOf(this.#db, this.#statements, {
        caps: new CapsInTransaction(prepareCapStatements(this.#db, this.tablePrefix)),
        people: sqlitePeople(this.#db, this.tablePrefix),
        outbox: sqliteOutbox(this.#db, this.tablePrefix),
        cache: this.#cache,
        checkpoints: this.#checkpoints,
        auditCapacity: this.auditCapacity,
        lastSeen: () => this.#seen,
      });
    } catch (error) {
      throw this.#failure(error, 'migrate the schema');
    }
  }

  /**
   * Queues the update for the store's next transaction, which runs, in one `BEGIN IMMEDIATE`, every
   * update made before it starts (a group commit): concurrent updates share one commit. Each still
   * takes effect all or nothing, in the order the updates were made. Its `onCommit` is told once that
   * transaction commits, or, inside a transaction of the owner of a database given to the store, once
   * the store's savepoint is released: the owner may still roll that back.
   */
  update<T>(planId: string, change: PlanChangeFn<T>, options?: UpdateOptions): Promise<T> {
    try {
      this.#ready();
    } catch (error) {
      return Promise.reject(this.#failure(error, `update plan "${planId}"`));
    }
    return new Promise<T>((resolve, reject) => {
      const approvalId = options?.approvalId;
      this.#pending.push({
        planId,
        change,
        approvalId,
        capsAt: options?.capsAt,
        onCommit: options?.onCommit,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      if (!this.#flushing) {
        this.#flushing = true;
        queueMicrotask(this.#flush);
      }
    });
  }

  /** Runs the queued updates, at most {@link MAX_UPDATES_PER_WRITE} to a transaction. */
  readonly #flush = (): void => {
    this.#flushing = false;
    const pending = this.#pending;
    this.#pending = [];
    for (let i = 0; i < pending.length; i += MAX_UPDATES_PER_WRITE)
      this.#run(pending.slice(i, i + MAX_UPDATES_PER_WRITE));
  };

  /** Runs updates in one transaction and settles them; alone, each, when one of them failed writing. */
  #run(updates: readonly Pending[]): void {
    // Inside a transaction the owner of a given database has open, ours is only a savepoint: the owner
    // may still roll it back, so nothing it leaves is kept to decide from.
    const nested = this.#db.inTransaction;
    let done: Updated;
    this.#running = true;
    try {
      done = this.#ready().update(updates);
    } catch (error) {
      // Rolled back: cached plans may have been changed in place before the failure.
      this.#cache.clear();
      this.#seen = null;
      if (error instanceof PartlyWritten && updates.length > 1) {
        for (const u of updates) this.#run([u]);
        return;
      }
      const cause = error instanceof PartlyWritten ? error.cause : error;
      for (const u of updates) u.reject(this.#failure(cause, `update plan "${u.planId}"`));
      return;
    } finally {
      this.#running = false;
    }
    if (nested) {
      this.#cache.clear();
      this.#seen = null;
    } else {
      this.#seen = done.seen;
    }
    updates.forEach((u, i) => {
      const outcome = done.outcomes[i] as Outcome;
      if (!outcome.ok) {
        u.reject(this.#failure(outcome.error, `update plan "${u.planId}"`));
        return;
      }
      reportCommit(u.onCommit, outcome.records);
      u.resolve(outcome.result);
    });
  }

  async getApproval(id: string): Promise<Approval | null> {
    return this.#reading(`read approval "${id}"`, (_tx, s) => {
      const row = s.selectApproval.get(id);
      return row === undefined ? null : approvalOf(row);
    });
  }

  async listApprovals(filter?: {
    readonly planId?: string;
    readonly status?: ApprovalStatus;
  }): Promise<Approval[]> {
    return this.#reading('list approvals', (_tx, s) => listedApprovals(s, filter).map(approvalOf));
  }

  async findApproval(planId: string, decisionId: string): Promise<Approval | null> {
    const doing = `find the approval of decision "${decisionId}" of plan "${planId}"`;
    return this.#reading(doing, (_tx, s) => {
      const row = s.newestOfDecision.get(planId, decisionId);
      return row === undefined ? null : approvalOf(row);
    });
  }

  async put(planId: string, guardrails: AutonomyGuardrails, audit?: AuditTrail): Promise<void> {
    this.#notFromChange('store plan', planId);
    this.#runPending();
    // Serialized first: from here on nothing the caller holds is shared with the store.
    const json = JSON.stringify(guardrails.toJSON());
    const entries = audit?.entries.slice(-this.auditCapacity);
    this.#reading(`store plan "${planId}"`, (tx) => tx.put(planId, json, entries));
  }

  async create(planId: string, guardrails: AutonomyGuardrails): Promise<boolean> {
    this.#notFromChange('store plan', planId);
    this.#runPending();
    const json = JSON.stringify(guardrails.toJSON());
    return this.#reading(`store plan "${planId}"`, (_tx, s) => s.insertPlan.run(planId, json).changes === 1);
  }

  async get(planId: string): Promise<PlanRecord | null> {
    return this.#reading(`read plan "${planId}"`, (tx) => tx.get(planId));
  }

  async getGuardrails(planId: string): Promise<AutonomyGuardrails | null> {
    return this.#reading(`read plan "${planId}"`, (tx) => tx.getGuardrails(planId));
  }

  async readAuditLog(planId: string): Promise<readonly ChainedEntry[]> {
    return this.#readLog(planId, (row) => chainedOf(planId, row));
  }

  async readAuditRows(planId: string): Promise<readonly (ChainedEntry | MalformedEntry)[]> {
    return this.#readLog(planId, (row) => logEntryFromRow(planId, storedRow(row)));
  }

  #readLog<T>(planId: string, decode: (row: ChainedRow) => T): T[] {
    return this.#reading(`read the audit log of plan "${planId}"`, (tx) => tx.readLog(planId).map(decode));
  }

  async delete(planId: string): Promise<boolean> {
    this.#notFromChange('delete plan', planId);
    return this.#reading(`delete plan "${planId}"`, (tx) => tx.delete(planId));
  }

  async readCheckpoints(planId: string): Promise<readonly Checkpoint[]> {
    return this.#reading(`read the checkpoints of plan "${planId}"`, (_tx, s) =>
      s.selectCheckpoints.all(planId).map((r) => checkpointFromRow(planId, r)),
    );
  }

  async pruneAuditLog(planId: string, throughSeq: number): Promise<number> {
    this.#runPending();
    this.#ready();
    const through = pruneTarget(throughSeq);
    return this.#reading(`prune the audit log of plan "${planId}"`, (tx) => tx.prune(planId, through));
  }

  async savePlanDocument(
    document: PlanDocumentInput,
    options?: { readonly expectedRevision?: number | null },
  ): Promise<PlanDocument> {
    this.#runPending();
    this.#ready();
    const doc = checkDocument(document, options);
    return this.#reading(`save the document of plan "${doc.planId}"`, (tx) => tx.saveDocument(doc));
  }

  async getPlanDocument(planId: string): Promise<PlanDocument | null> {
    return this.#reading(`read the document of plan "${planId}"`, (_tx, s) => {
      const row = s.selectDocument.get(planId);
      return row === undefined ? null : documentOf(row);
    });
  }

  async listPlans(): Promise<PlanListing[]> {
    return this.#reading('list plans', (tx) => tx.listPlans());
  }

  async putCaps(caps: readonly SpendCap[]): Promise<void> {
    this.#notFromChange('install spend caps for', '*');
    this.#reading('install spend caps', (tx) => tx.caps.put(caps));
  }

  async deleteCap(id: string): Promise<boolean> {
    this.#notFromChange('remove spend cap', id);
    return this.#reading(`remove spend cap "${id}"`, (tx) => tx.caps.delete(id));
  }

  async listCaps(): Promise<SpendCap[]> {
    return this.#reading('list spend caps', (tx) => tx.caps.list());
  }

  async listCapWindows(filter?: { readonly capId?: string }): Promise<CapWindowRecord[]> {
    return this.#reading('list spend cap windows', (tx) => tx.caps.windows(filter?.capId));
  }

  async putPrincipal(principal: Principal): Promise<void> {
    this.#reading('store a principal', (tx) => tx.people.putPrincipal(principal));
  }

  async getPrincipal(id: string): Promise<Principal | null> {
    return this.#reading(`read principal "${id}"`, (tx) => tx.people.getPrincipal(id));
  }

  async listPrincipals(): Promise<Principal[]> {
    return this.#reading('list principals', (tx) => tx.people.listPrincipals());
  }

  async putToken(token: PersonalToken): Promise<void> {
    this.#reading('store a personal token', (tx) => tx.people.putToken(token));
  }

  async findToken(hash: string): Promise<PersonalToken | null> {
    return this.#reading('find a personal token', (tx) => tx.people.findToken(hash));
  }

  async listTokens(filter?: { readonly principalId?: string }): Promise<PersonalToken[]> {
    return this.#reading('list personal tokens', (tx) => tx.people.listTokens(filter));
  }

  async enqueueNotifications(items: readonly NotificationInput[]): Promise<void> {
    this.#reading('queue notifications', (tx) => tx.outbox.enqueue(items));
  }

  async claimNotifications(claim: NotificationClaim): Promise<Notification[]> {
    return this.#reading('claim notifications', (tx) => tx.outbox.claim(claim));
  }

  async finishNotification(id: string, outcome: NotificationOutcome): Promise<void> {
    this.#reading('record the outcome of a notification', (tx) => tx.outbox.finish(id, outcome));
  }

  async listNotifications(filter?: NotificationFilter): Promise<Notification[]> {
    return this.#reading('list notifications', (tx) => tx.outbox.list(filter));
  }

  /** Closes the database if the store opened it; a database given to the store stays open. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#runPending();
    this.#closed = true;
    this.#cache.clear();
    this.#statements = undefined;
    this.#transactions = undefined;
    if (this.#ownsDatabase) {
      try {
        this.#db.close();
      } catch (error) {
        throw this.#failure(error, 'close the database');
      }
    }
  }

  #open(): void {
    if (this.#closed) throw new GuardrailError('STORE_CLOSED', 'the store is closed');
  }

  /**
   * {@link #ready}, once the updates made before this call have run, so that calls take effect in the
   * order they were made; inside a change function or a transaction of the owner's, the call goes first.
   */
  #afterUpdates(): Transactions {
    this.#runPending();
    return this.#ready();
  }

  /** Runs `fn` {@link #afterUpdates}; what SQLite throws becomes the store's error, saying what failed. */
  #reading<T>(doing: string, fn: (tx: Transactions, s: Statements) => T): T {
    const tx = this.#afterUpdates();
    try {
      return fn(tx, this.#statements as Statements);
    } catch (error) {
      throw this.#failure(error, doing);
    }
  }

  /**
   * Refuses a put or delete from inside a change function: it would run in the middle of the update's
   * transaction, whose own write of the plan's row at its end would then silently undo it.
   */
  #notFromChange(doing: string, planId: string): void {
    if (this.#running) {
      throw new GuardrailError(
        'STORE_CONTRACT',
        `cannot ${doing} "${planId}" from inside a change function: make the call once the update has resolved`,
      );
    }
  }

  /**
   * Runs the queued updates now, unless from inside a change function (they would run in the middle of
   * its transaction) or inside a transaction the owner of a given database has open (they would run in
   * it, and its rollback would undo what they already reported as done): then their microtask runs
   * them, or, after `close()`, refuses them with `STORE_CLOSED`.
   */
  #runPending(): void {
    if (this.#pending.length > 0 && !this.#running && !this.#db.inTransaction) this.#flush();
  }

  #ready(): Transactions {
    this.#open();
    const tx = this.#transactions;
    if (tx === undefined) {
      throw new GuardrailError(
        'STORE_NOT_MIGRATED',
        'the SQLite store is not ready: call and await store.migrate() before using it',
      );
    }
    return tx;
  }

  #failure(error: unknown, doing: string): unknown {
    return sqliteFailure(this.#db, this.busyTimeoutMs, error, doing);
  }
}
