import type Database from 'better-sqlite3';
import type { AuditEntry } from '../../audit/AuditEntry.js';
import { AuditTrail, DEFAULT_AUDIT_CAPACITY } from '../../audit/AuditTrail.js';
import { chainEntry, type ChainedEntry, type Checkpoint, type MalformedEntry } from '../../audit/chain.js';
import { describeValue, GuardrailError, GuardrailValidationError } from '../../errors.js';
import { AutonomyGuardrails } from '../../guardrails/AutonomyGuardrails.js';
import { intField, objectWithKeys } from '../../guardrails/validate.js';
import {
  type Approval,
  type ApprovalStatus,
  type GuardrailStore,
  type PlanChange,
  type PlanChangeFn,
  type PlanDocument,
  type PlanDocumentInput,
  type PlanListing,
  type PlanRecord,
} from '../GuardrailStore.js';
import {
  APPROVAL_COLUMNS,
  APPROVAL_UPDATES,
  approvalFromRow,
  approvalPlaceholders,
  approvalRowValues,
  type ApprovalRow,
  type ApprovalRowValues,
} from '../approvalRows.js';
import {
  checkpointPolicy,
  pruneTarget,
  unanchoredPrune,
  type CheckpointOptions,
  type CheckpointPolicy,
} from '../checkpoints.js';
import { chainedFromRow, entryFromRow, logEntryFromRow, type LogRow } from '../auditRows.js';
import { driver } from '../drivers.js';
import { chainEntries, decideWrite, writesState, type ChainedRecord, type Write } from '../decide.js';
import {
  checkDocument,
  documentFromRow,
  mergeListings,
  nextRevision,
  type CheckedDocument,
  type DocumentRow,
} from '../planDocuments.js';
import { MAX_UPDATES_PER_WRITE, PlanCache, type CachedPlan, type ChainHead } from '../planCache.js';
import { openProblem } from './fileProblems.js';

/** What {@link SqliteStore} accepts. */
export interface SqliteStoreOptions {
  /** Database file; defaults to `':memory:'`. Not together with `database`. */
  path?: string;
  /**
   * An open better-sqlite3 connection to use instead of opening one; the store never closes it. The store
   * sets its `busy_timeout` and leaves `journal_mode` and `synchronous` as the owner chose: use WAL for a
   * file that several connections share. An update runs in the store's own transaction after `update`
   * returns, not in a transaction function of the owner's that called it; one that finds a transaction
   * the owner opened (`BEGIN`) runs inside it, and the owner's rollback undoes it.
   */
  database?: Database.Database;
  /** How many audit entries `get` returns per plan (the newest). Defaults to 1000. */
  auditCapacity?: number;
  /** Put before every table and index name. Defaults to `leash_`. */
  tablePrefix?: string;
  /** How long to wait for another connection's write lock before failing. Defaults to 5000 ms. */
  busyTimeoutMs?: number;
  /** Write a (signed) checkpoint of a plan's log every `every` entries, in the transaction of the entry. */
  checkpoints?: CheckpointOptions;
}

const OPTION_KEYS = ['path', 'database', 'auditCapacity', 'tablePrefix', 'busyTimeoutMs', 'checkpoints'];
const TABLE_PREFIX = /^[a-z][a-z0-9_]{0,30}$/;
const DEFAULT_TABLE_PREFIX = 'leash_';
const DEFAULT_BUSY_TIMEOUT_MS = 5000;
const MAX_BUSY_TIMEOUT_MS = 2_147_483_647; // SQLite takes a C int

/**
 * Schema migrations, in order; migration n brings the schema from version n - 1 to n. Applied ones are
 * never edited: a change to the schema is a new entry. `p` is the validated table prefix.
 */
const MIGRATIONS: readonly ((p: string) => string)[] = [
  (p) => `
    CREATE TABLE ${p}plans (
      plan_id TEXT NOT NULL PRIMARY KEY,
      guardrails TEXT NOT NULL
    );
    CREATE TABLE ${p}audit_entries (
      plan_id TEXT NOT NULL REFERENCES ${p}plans (plan_id) ON DELETE CASCADE,
      seq INTEGER NOT NULL CHECK (seq >= 1),
      event_type TEXT NOT NULL,
      timestamp INTEGER NOT NULL,
      details TEXT NOT NULL,
      PRIMARY KEY (plan_id, seq)
    ) WITHOUT ROWID;
    CREATE TABLE ${p}approvals (
      id TEXT NOT NULL PRIMARY KEY,
      plan_id TEXT NOT NULL REFERENCES ${p}plans (plan_id) ON DELETE CASCADE,
      decision_id TEXT NOT NULL,
      operation TEXT NOT NULL,
      input_hash TEXT NOT NULL,
      requested_at TEXT NOT NULL,
      expires_at TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'used')),
      decided_by TEXT,
      decided_at TEXT,
      reason TEXT,
      used_at TEXT
    );
    CREATE INDEX ${p}approvals_by_request ON ${p}approvals (requested_at, id);
    CREATE INDEX ${p}approvals_by_plan ON ${p}approvals (plan_id, requested_at, id);
    CREATE INDEX ${p}approvals_by_status ON ${p}approvals (status, requested_at, id);
  `,
  // The audit table becomes a hash chain; rows written before it are chained by migrate(). A plan's
  // trail starts at window_start: a put with a trail moves it instead of deleting history.
  (p) => `
    ALTER TABLE ${p}audit_entries ADD COLUMN prev TEXT;
    ALTER TABLE ${p}audit_entries ADD COLUMN hash TEXT;
    ALTER TABLE ${p}plans ADD COLUMN window_start INTEGER NOT NULL DEFAULT 1;
  `,
  // Plan documents: what a runner saves so that another process can show or resume the plan.
  (p) => `
    CREATE TABLE ${p}plan_documents (
      plan_id TEXT NOT NULL PRIMARY KEY,
      phase TEXT NOT NULL,
      body TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      revision INTEGER NOT NULL
    );
  `,
  // Checkpoints of each plan's log, written with the entry they cover.
  (p) => `
    CREATE TABLE ${p}checkpoints (
      plan_id TEXT NOT NULL,
      size INTEGER NOT NULL,
      head TEXT NOT NULL,
      ts TEXT NOT NULL,
      signature TEXT,
      PRIMARY KEY (plan_id, size)
    );
  `,
  // What an approval is for, as the person asked sees it: the tool an agent called, a preview of its input.
  (p) => `
    ALTER TABLE ${p}approvals ADD COLUMN tool_name TEXT;
    ALTER TABLE ${p}approvals ADD COLUMN input_preview TEXT;
  `,
  // A run guard looks up the approval of a plan's decision before each call.
  (p) => `
    CREATE INDEX IF NOT EXISTS ${p}approvals_by_decision ON ${p}approvals (plan_id, decision_id, requested_at, id);
  `,
];

/** The migration that added the hash chain: rows it finds are chained right after it runs. */
const CHAIN_MIGRATION = 2;

/** The schema version this code writes and reads. */
export const SQLITE_SCHEMA_VERSION = MIGRATIONS.length;

const APPROVAL_VALUES = approvalPlaceholders('?');

interface AuditRow {
  seq: number;
  event_type: string;
  timestamp: number;
  details: string;
}

interface ChainedRow extends AuditRow {
  prev: string | null;
  hash: string | null;
}

type Head = ChainHead;

type Stmt<P extends unknown[], R = unknown> = Database.Statement<P, R>;

/** Every statement the store runs, prepared once after {@link SqliteStore.migrate}. */
interface Statements {
  selectPlan: Stmt<[string], string>;
  upsertPlan: Stmt<[string, string]>;
  updatePlan: Stmt<[string, string]>;
  deletePlan: Stmt<[string]>;
  selectHead: Stmt<[string], Head>;
  insertEntry: Stmt<[string, number, string, number, string, string, string]>;
  setWindow: Stmt<[number, string]>;
  selectEntries: Stmt<[string, number], AuditRow>;
  selectLog: Stmt<[string], ChainedRow>;
  deleteEntries: Stmt<[string]>;
  selectApproval: Stmt<[string], ApprovalRow>;
  insertApproval: Stmt<ApprovalRowValues>;
  upsertApproval: Stmt<ApprovalRowValues>;
  deleteApprovals: Stmt<[string]>;
  listAll: Stmt<[], ApprovalRow>;
  listByPlan: Stmt<[string], ApprovalRow>;
  newestOfDecision: Stmt<[string, string], ApprovalRow>;
  listByStatus: Stmt<[string], ApprovalRow>;
  listByPlanAndStatus: Stmt<[string, string], ApprovalRow>;
  selectDocument: Stmt<[string], DocumentRow>;
  selectRevision: Stmt<[string], number>;
  upsertDocument: Stmt<[string, string, string, string, number]>;
  deleteDocument: Stmt<[string]>;
  listPlanIds: Stmt<[], string>;
  listDocuments: Stmt<[], DocumentRow>;
  insertCheckpoint: Stmt<[string, number, string, string, string | null]>;
  selectCheckpoints: Stmt<[string], CheckpointRow>;
  deleteCheckpoints: Stmt<[string]>;
  hasCheckpoint: Stmt<[string, number], number>;
  pruneEntries: Stmt<[string, number]>;
  dataVersion: Stmt<[], number>;
  totalChanges: Stmt<[], number>;
}

interface CheckpointRow {
  size: number;
  head: string;
  ts: string;
  signature: string | null;
}

/** What the connection has seen: when it changes between two updates, another writer was at work. */
interface Seen {
  /** `PRAGMA data_version`: changes when another connection commits. */
  readonly version: number;
  /** `total_changes()`: rows this connection has changed, through the store or not. */
  readonly changes: number;
}

/** An update waiting for the store's next transaction. */
interface Pending {
  readonly planId: string;
  readonly change: PlanChangeFn<unknown>;
  readonly approvalId: string | undefined;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/** How one update of a transaction came out: its result, or why it was refused before it wrote. */
type Outcome =
  { readonly ok: true; readonly result: unknown } | { readonly ok: false; readonly error: unknown };

/** What an update transaction hands back once it has committed. */
interface Updated {
  readonly outcomes: readonly Outcome[];
  readonly seen: Seen;
}

/** An update decided, before anything of it is written. */
interface Decided {
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
class PartlyWritten {
  constructor(readonly cause: unknown) {}
}

interface Transactions {
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
}

/**
 * Keeps guardrails, audit entries and approvals in a SQLite database through better-sqlite3, so that
 * several processes can share one file. Every update runs in a `BEGIN IMMEDIATE` transaction: the
 * read, the decision and the writes of concurrent updates, from any process, never interleave. Updates
 * made before the store's next transaction starts share it (one commit for all), each still all or
 * nothing. An update is decided from the plan as this connection last committed it while no other
 * writer has committed since, otherwise from the row read again. The audit table keeps every entry;
 * `get` returns the newest `auditCapacity` of them.
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
    const o = objectWithKeys(options, 'options', OPTION_KEYS);
    this.auditCapacity = intField(
      o['auditCapacity'] ?? DEFAULT_AUDIT_CAPACITY,
      'auditCapacity',
      1,
      false,
    ) as number;
    this.busyTimeoutMs = intField(
      o['busyTimeoutMs'] ?? DEFAULT_BUSY_TIMEOUT_MS,
      'busyTimeoutMs',
      0,
      false,
    ) as number;
    if (this.busyTimeoutMs > MAX_BUSY_TIMEOUT_MS) {
      throw new GuardrailValidationError(
        'busyTimeoutMs',
        `busyTimeoutMs must be at most ${MAX_BUSY_TIMEOUT_MS}, got ${this.busyTimeoutMs}`,
      );
    }
    const prefix = o['tablePrefix'] ?? DEFAULT_TABLE_PREFIX;
    // The prefix is the only text put into SQL: everything else is a bound parameter.
    if (typeof prefix !== 'string' || !TABLE_PREFIX.test(prefix)) {
      throw new GuardrailValidationError(
        'tablePrefix',
        `tablePrefix must match ${TABLE_PREFIX}, got ${describeValue(prefix)}`,
      );
    }
    this.tablePrefix = prefix;
    this.#checkpoints = checkpointPolicy(o['checkpoints']);
    // Loaded by the first store rather than on import; a given database needs it too, for its errors.
    const Sqlite = driver('better-sqlite3');
    if (o['database'] !== undefined) {
      if (o['path'] !== undefined) {
        throw new GuardrailValidationError('path', 'path and database cannot both be given');
      }
      this.#db = givenDatabase(o['database']);
      this.#ownsDatabase = false;
      this.#db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
    } else {
      const path = o['path'] ?? ':memory:';
      if (typeof path !== 'string' || path.length === 0) {
        throw new GuardrailValidationError(
          'path',
          `path must be a file name or ":memory:", got ${describeValue(path)}`,
        );
      }
      this.#db = this.#openDatabase(Sqlite, path);
      this.#ownsDatabase = true;
    }
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
      db.transaction(() => {
        db.exec(
          `CREATE TABLE IF NOT EXISTS ${p}schema_version (` +
            'version INTEGER NOT NULL PRIMARY KEY, applied_at INTEGER NOT NULL)',
        );
        const current =
          db.prepare<[], number | null>(`SELECT max(version) FROM ${p}schema_version`).pluck().get() ?? 0;
        if (current > SQLITE_SCHEMA_VERSION) {
          throw new GuardrailError(
            'STORE_SCHEMA_TOO_NEW',
            `the database schema (tables "${p}*") is at version ${current}, newer than version ` +
              `${SQLITE_SCHEMA_VERSION} that this version of leash knows: upgrade leash`,
          );
        }
        const record = db.prepare<[number, number]>(
          `INSERT INTO ${p}schema_version (version, applied_at) VALUES (?, ?)`,
        );
        for (let version = current + 1; version <= SQLITE_SCHEMA_VERSION; version++) {
          db.exec((MIGRATIONS[version - 1] as (p: string) => string)(p));
          if (version === CHAIN_MIGRATION) chainUnchainedRows(db, p);
          record.run(version, Date.now());
        }
      }).immediate();
      this.#statements ??= this.#prepare();
      this.#transactions ??= this.#transactionsOf(this.#statements);
    } catch (error) {
      throw this.#failure(error, 'migrate the schema');
    }
  }

  /**
   * Queues the update for the store's next transaction, which runs, in one `BEGIN IMMEDIATE`, every
   * update made before it starts (a group commit): concurrent updates share one commit. Each still
   * takes effect all or nothing, in the order the updates were made.
   */
  update<T>(planId: string, change: PlanChangeFn<T>, options?: { readonly approvalId?: string }): Promise<T> {
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
      if (outcome.ok) u.resolve(outcome.result);
      else u.reject(this.#failure(outcome.error, `update plan "${u.planId}"`));
    });
  }

  async getApproval(id: string): Promise<Approval | null> {
    this.#afterUpdates();
    try {
      const row = (this.#statements as Statements).selectApproval.get(id);
      return row === undefined ? null : approvalOf(row);
    } catch (error) {
      throw this.#failure(error, `read approval "${id}"`);
    }
  }

  async listApprovals(filter?: {
    readonly planId?: string;
    readonly status?: ApprovalStatus;
  }): Promise<Approval[]> {
    this.#afterUpdates();
    const s = this.#statements as Statements;
    const planId = filter?.planId;
    const status = filter?.status;
    try {
      const rows =
        planId === undefined
          ? status === undefined
            ? s.listAll.all()
            : s.listByStatus.all(status)
          : status === undefined
            ? s.listByPlan.all(planId)
            : s.listByPlanAndStatus.all(planId, status);
      return rows.map(approvalOf);
    } catch (error) {
      throw this.#failure(error, 'list approvals');
    }
  }

  async findApproval(planId: string, decisionId: string): Promise<Approval | null> {
    this.#afterUpdates();
    try {
      const row = (this.#statements as Statements).newestOfDecision.get(planId, decisionId);
      return row === undefined ? null : approvalOf(row);
    } catch (error) {
      throw this.#failure(error, `find the approval of decision "${decisionId}" of plan "${planId}"`);
    }
  }

  async put(planId: string, guardrails: AutonomyGuardrails, audit?: AuditTrail): Promise<void> {
    this.#notFromChange('store plan', planId);
    const tx = this.#afterUpdates();
    // Serialized first: from here on nothing the caller holds is shared with the store.
    const json = JSON.stringify(guardrails.toJSON());
    const entries = audit?.entries.slice(-this.auditCapacity);
    try {
      tx.put(planId, json, entries);
    } catch (error) {
      throw this.#failure(error, `store plan "${planId}"`);
    }
  }

  async get(planId: string): Promise<PlanRecord | null> {
    const tx = this.#afterUpdates();
    try {
      return tx.get(planId);
    } catch (error) {
      throw this.#failure(error, `read plan "${planId}"`);
    }
  }

  async getGuardrails(planId: string): Promise<AutonomyGuardrails | null> {
    const tx = this.#afterUpdates();
    try {
      return tx.getGuardrails(planId);
    } catch (error) {
      throw this.#failure(error, `read plan "${planId}"`);
    }
  }

  async readAuditLog(planId: string): Promise<readonly ChainedEntry[]> {
    return this.#readLog(planId, (row) => chainedOf(planId, row));
  }

  async readAuditRows(planId: string): Promise<readonly (ChainedEntry | MalformedEntry)[]> {
    return this.#readLog(planId, (row) => logEntryFromRow(planId, storedRow(row)));
  }

  #readLog<T>(planId: string, decode: (row: ChainedRow) => T): T[] {
    const tx = this.#afterUpdates();
    try {
      return tx.readLog(planId).map(decode);
    } catch (error) {
      throw this.#failure(error, `read the audit log of plan "${planId}"`);
    }
  }

  async delete(planId: string): Promise<boolean> {
    this.#notFromChange('delete plan', planId);
    const tx = this.#afterUpdates();
    try {
      return tx.delete(planId);
    } catch (error) {
      throw this.#failure(error, `delete plan "${planId}"`);
    }
  }

  async readCheckpoints(planId: string): Promise<readonly Checkpoint[]> {
    this.#afterUpdates();
    try {
      return (this.#statements as Statements).selectCheckpoints
        .all(planId)
        .map((r) => checkpointOf(planId, r));
    } catch (error) {
      throw this.#failure(error, `read the checkpoints of plan "${planId}"`);
    }
  }

  async pruneAuditLog(planId: string, throughSeq: number): Promise<number> {
    const tx = this.#afterUpdates();
    const through = pruneTarget(throughSeq);
    try {
      return tx.prune(planId, through);
    } catch (error) {
      throw this.#failure(error, `prune the audit log of plan "${planId}"`);
    }
  }

  async savePlanDocument(
    document: PlanDocumentInput,
    options?: { readonly expectedRevision?: number | null },
  ): Promise<PlanDocument> {
    const tx = this.#afterUpdates();
    const doc = checkDocument(document, options);
    try {
      return tx.saveDocument(doc);
    } catch (error) {
      throw this.#failure(error, `save the document of plan "${doc.planId}"`);
    }
  }

  async getPlanDocument(planId: string): Promise<PlanDocument | null> {
    this.#afterUpdates();
    try {
      const row = (this.#statements as Statements).selectDocument.get(planId);
      return row === undefined ? null : documentOf(row);
    } catch (error) {
      throw this.#failure(error, `read the document of plan "${planId}"`);
    }
  }

  async listPlans(): Promise<PlanListing[]> {
    const tx = this.#afterUpdates();
    try {
      return tx.listPlans();
    } catch (error) {
      throw this.#failure(error, 'list plans');
    }
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

  #openDatabase(Sqlite: typeof Database, path: string): Database.Database {
    let db: Database.Database | undefined;
    try {
      db = new Sqlite(path, { timeout: this.busyTimeoutMs });
      db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
      db.pragma('foreign_keys = ON');
      if (!db.memory) {
        // WAL lets readers go on while one process writes; NORMAL is durable in WAL except for the
        // last transactions before a power loss, and spares an fsync per commit.
        db.pragma('journal_mode = WAL');
        db.pragma('synchronous = NORMAL');
      }
      return db;
    } catch (error) {
      db?.close();
      // SQLite's "unable to open database file" does not say why: the file system can.
      const problem = path === ':memory:' ? null : openProblem(path);
      const why = problem === null ? messageOf(error) : `${problem} (${messageOf(error)})`;
      throw new GuardrailError(
        'STORE_UNAVAILABLE',
        `SQLite store unavailable: cannot open ${describeValue(path)}: ${why}`,
        { cause: error },
      );
    }
  }

  #prepare(): Statements {
    const db = this.#db;
    const p = this.tablePrefix;
    const listed = (where: string) => `SELECT * FROM ${p}approvals ${where} ORDER BY requested_at, id`;
    return {
      selectPlan: db.prepare<[string], string>(`SELECT guardrails FROM ${p}plans WHERE plan_id = ?`).pluck(),
      upsertPlan: db.prepare(
        `INSERT INTO ${p}plans (plan_id, guardrails) VALUES (?, ?) ` +
          'ON CONFLICT (plan_id) DO UPDATE SET guardrails = excluded.guardrails',
      ),
      updatePlan: db.prepare(`UPDATE ${p}plans SET guardrails = ? WHERE plan_id = ?`),
      deletePlan: db.prepare(`DELETE FROM ${p}plans WHERE plan_id = ?`),
      // The last entry comes from the end of the primary key index: one step on the hot path.
      selectHead: db.prepare(
        `SELECT seq, hash FROM ${p}audit_entries WHERE plan_id = ? ORDER BY seq DESC LIMIT 1`,
      ),
      insertEntry: db.prepare(
        `INSERT INTO ${p}audit_entries (plan_id, seq, event_type, timestamp, details, prev, hash) ` +
          'VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      setWindow: db.prepare(`UPDATE ${p}plans SET window_start = ? WHERE plan_id = ?`),
      selectEntries: db.prepare(
        `SELECT e.seq, e.event_type, e.timestamp, e.details FROM ${p}audit_entries e ` +
          `JOIN ${p}plans p ON p.plan_id = e.plan_id ` +
          'WHERE e.plan_id = ? AND e.seq >= p.window_start ORDER BY e.seq DESC LIMIT ?',
      ),
      selectLog: db.prepare(
        `SELECT seq, event_type, timestamp, details, prev, hash FROM ${p}audit_entries ` +
          'WHERE plan_id = ? ORDER BY seq',
      ),
      deleteEntries: db.prepare(`DELETE FROM ${p}audit_entries WHERE plan_id = ?`),
      selectApproval: db.prepare(`SELECT * FROM ${p}approvals WHERE id = ?`),
      insertApproval: db.prepare(
        `INSERT INTO ${p}approvals (${APPROVAL_COLUMNS}) VALUES (${APPROVAL_VALUES}) ` +
          'ON CONFLICT (id) DO NOTHING',
      ),
      // Replaces only an approval of the same plan: no change means the id belongs to another plan.
      upsertApproval: db.prepare(
        `INSERT INTO ${p}approvals (${APPROVAL_COLUMNS}) VALUES (${APPROVAL_VALUES}) ` +
          `ON CONFLICT (id) DO UPDATE SET ${APPROVAL_UPDATES} WHERE ${p}approvals.plan_id = excluded.plan_id`,
      ),
      deleteApprovals: db.prepare(`DELETE FROM ${p}approvals WHERE plan_id = ?`),
      listAll: db.prepare(listed('')),
      listByPlan: db.prepare(listed('WHERE plan_id = ?')),
      newestOfDecision: db.prepare(
        `SELECT * FROM ${p}approvals WHERE plan_id = ? AND decision_id = ? ORDER BY requested_at DESC, id DESC LIMIT 1`,
      ),
      listByStatus: db.prepare(listed('WHERE status = ?')),
      listByPlanAndStatus: db.prepare(listed('WHERE plan_id = ? AND status = ?')),
      selectDocument: db.prepare(`SELECT * FROM ${p}plan_documents WHERE plan_id = ?`),
      selectRevision: db
        .prepare<[string], number>(`SELECT revision FROM ${p}plan_documents WHERE plan_id = ?`)
        .pluck(),
      upsertDocument: db.prepare(
        `INSERT INTO ${p}plan_documents (plan_id, phase, body, updated_at, revision) VALUES (?, ?, ?, ?, ?) ` +
          'ON CONFLICT (plan_id) DO UPDATE SET phase = excluded.phase, body = excluded.body, ' +
          'updated_at = excluded.updated_at, revision = excluded.revision',
      ),
      deleteDocument: db.prepare(`DELETE FROM ${p}plan_documents WHERE plan_id = ?`),
      listPlanIds: db.prepare<[], string>(`SELECT plan_id FROM ${p}plans`).pluck(),
      insertCheckpoint: db.prepare(
        `INSERT INTO ${p}checkpoints (plan_id, size, head, ts, signature) VALUES (?, ?, ?, ?, ?)`,
      ),
      selectCheckpoints: db.prepare(
        `SELECT size, head, ts, signature FROM ${p}checkpoints WHERE plan_id = ? ORDER BY size`,
      ),
      deleteCheckpoints: db.prepare(`DELETE FROM ${p}checkpoints WHERE plan_id = ?`),
      hasCheckpoint: db
        .prepare<[string, number], number>(`SELECT 1 FROM ${p}checkpoints WHERE plan_id = ? AND size = ?`)
        .pluck(),
      pruneEntries: db.prepare(`DELETE FROM ${p}audit_entries WHERE plan_id = ? AND seq <= ?`),
      dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck(),
      totalChanges: db.prepare<[], number>('SELECT total_changes()').pluck(),
      listDocuments: db.prepare(
        `SELECT plan_id, phase, '{}' AS body, updated_at, revision FROM ${p}plan_documents`,
      ),
    };
  }

  #transactionsOf(s: Statements): Transactions {
    const db = this.#db;
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
      planId: string,
      change: PlanChangeFn<unknown>,
      approvalId: string | undefined,
      inTransaction: ReadonlyMap<string, CachedPlan>,
    ): Decided => {
      // A plan this transaction already changed is taken from there: its row is written only at the end.
      const cached = inTransaction.get(planId) ?? this.#cache.get(planId);
      let stored: AutonomyGuardrails | null;
      let head: Head | null | undefined;
      if (cached !== undefined) {
        stored = cached.guardrails;
        head = cached.head;
      } else {
        const json = s.selectPlan.get(planId);
        stored = json === undefined ? null : readGuardrails(planId, json);
      }
      const row = approvalId === undefined ? undefined : s.selectApproval.get(approvalId);
      const wanted = row === undefined || row.plan_id !== planId ? null : approvalOf(row);
      const out: PlanChange<unknown> = change(stored, wanted);
      if (!writesState(out)) {
        const state =
          stored === null ? null : { guardrails: stored, head: head ?? lastEntry(planId), version: '' };
        return { result: out.result, state };
      }
      const before = head ?? (stored === null ? null : lastEntry(planId));
      const w = decideWrite(planId, stored, out, {
        record: (entries) => chainEntries(planId, before, entries, this.#checkpoints),
      }) as Write<ChainedRecord[]>; // it writes: decided, or thrown
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
          approval: w.approval === undefined ? undefined : approvalRowValues(w.approval),
          newApproval: w.newApproval === undefined ? undefined : approvalRowValues(w.newApproval),
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
      const before = seen();
      const last = this.#seen;
      if (last === null || last.version !== before.version || last.changes !== before.changes) {
        this.#cache.clear();
      }
      const outcomes: Outcome[] = [];
      // The plans as this transaction leaves them, and those whose row it writes at its end (once, for
      // any number of updates of the plan).
      const plans = new Map<string, CachedPlan>();
      const rows = new Set<string>();
      for (const u of updates) {
        let decided: Decided;
        try {
          decided = decide(u.planId, u.change, u.approvalId, plans);
        } catch (error) {
          // Nothing written. The plan is read again, in case it was changed in place; one whose row is
          // not written yet cannot be, so the updates run again each in a transaction of its own.
          if (rows.has(u.planId)) throw new PartlyWritten(error);
          plans.delete(u.planId);
          this.#cache.delete(u.planId);
          outcomes.push({ ok: false, error });
          continue;
        }
        const w = decided.write;
        if (w !== undefined) {
          write(u.planId, w);
          if (w.guardrails !== undefined) rows.add(u.planId);
        }
        if (decided.state === null) {
          plans.delete(u.planId);
          this.#cache.delete(u.planId);
        } else {
          plans.set(u.planId, decided.state);
          this.#cache.set(u.planId, decided.state);
        }
        outcomes.push({ ok: true, result: decided.result });
      }
      try {
        for (const planId of rows) {
          const g = (plans.get(planId) as CachedPlan).guardrails;
          s.updatePlan.run(JSON.stringify(g.toJSON()), planId);
        }
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
        for (const e of chainEntries(planId, head, entries, this.#checkpoints)) record(planId, e);
      },
    );
    // A deferred transaction, so the guardrails and the entries come from one snapshot.
    const get = db.transaction((planId: string): PlanRecord | null => {
      const json = s.selectPlan.get(planId);
      if (json === undefined) return null;
      const guardrails = readGuardrails(planId, json);
      const rows = s.selectEntries.all(planId, this.auditCapacity);
      const audit = new AuditTrail({ maxEntries: this.auditCapacity });
      for (let i = rows.length - 1; i >= 0; i--) audit.add(readEntry(planId, rows[i] as AuditRow));
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
      get: (planId) => get.deferred(planId),
      getGuardrails: (planId) => {
        const json = s.selectPlan.get(planId);
        return json === undefined ? null : readGuardrails(planId, json);
      },
      readLog: (planId) => readLog.deferred(planId),
      delete: (planId) => remove.immediate(planId),
      saveDocument: (doc) => saveDocument.immediate(doc),
      prune: (planId, throughSeq) => prune.immediate(planId, throughSeq),
      listPlans: () => listPlans.deferred(),
    };
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

  /** The error to report for `error`: SQLite's own errors become GuardrailErrors; others pass as they are. */
  #failure(error: unknown, doing: string): unknown {
    if (error instanceof driver('better-sqlite3').SqliteError) {
      if (error.code.startsWith('SQLITE_CONSTRAINT')) {
        return new GuardrailError(
          'STORE_CONTRACT',
          `SQLite refused to ${doing}: ${error.message} (${error.code})`,
          { cause: error },
        );
      }
      const why = error.code.startsWith('SQLITE_BUSY')
        ? `the database stayed locked by another connection for longer than busyTimeoutMs ` +
          `(${this.busyTimeoutMs} ms)`
        : `${error.message} (${error.code})`;
      return new GuardrailError('STORE_UNAVAILABLE', `SQLite store unavailable: cannot ${doing}: ${why}`, {
        cause: error,
      });
    }
    if (!this.#db.open) {
      return new GuardrailError(
        'STORE_UNAVAILABLE',
        `SQLite store unavailable: cannot ${doing}: the database connection was closed`,
        { cause: error },
      );
    }
    return error;
  }
}

function givenDatabase(value: unknown): Database.Database {
  const db = value as Partial<Database.Database> | null;
  if (
    typeof db !== 'object' ||
    db === null ||
    typeof db.prepare !== 'function' ||
    typeof db.transaction !== 'function' ||
    typeof db.pragma !== 'function'
  ) {
    throw new GuardrailValidationError(
      'database',
      `database must be a better-sqlite3 Database, got ${describeValue(value)}`,
    );
  }
  if (db.open !== true) {
    throw new GuardrailValidationError('database', 'database must be open, got a closed connection');
  }
  return db as Database.Database;
}

/** Stored guardrails, validated as they are read: a damaged row makes the store refuse, never allow. */
function readGuardrails(planId: string, json: string): AutonomyGuardrails {
  try {
    return AutonomyGuardrails.fromJSON(JSON.parse(json));
  } catch (error) {
    throw new GuardrailError(
      'STORE_CORRUPT',
      `the stored guardrails of plan "${planId}" cannot be read: ${messageOf(error)}`,
      { cause: error },
    );
  }
}

function readEntry(planId: string, row: AuditRow): AuditEntry {
  return entryFromRow(planId, storedRow(row), 'SqliteStore');
}

/** A stored entry of the log as it is: a tampered prev or hash is for the verifier to find. */
function chainedOf(planId: string, row: ChainedRow): ChainedEntry {
  return chainedFromRow(planId, storedRow(row), 'SqliteStore');
}

function storedRow(row: AuditRow & Partial<ChainedRow>): LogRow {
  return {
    seq: row.seq,
    eventType: row.event_type,
    timestamp: row.timestamp,
    details: row.details,
    prev: row.prev ?? null,
    hash: row.hash ?? null,
  };
}

/** Chains, plan by plan in seq order, the rows written before the log was a hash chain. */
function chainUnchainedRows(db: Database.Database, p: string): void {
  const rows = db
    .prepare<[], ChainedRow & { plan_id: string }>(
      `SELECT plan_id, seq, event_type, timestamp, details FROM ${p}audit_entries ORDER BY plan_id, seq`,
    )
    .all();
  const write = db.prepare<[number, string, string, string, number]>(
    `UPDATE ${p}audit_entries SET seq = ?, prev = ?, hash = ? WHERE plan_id = ? AND seq = ?`,
  );
  let plan: string | undefined;
  let head: Head | null = null;
  for (const row of rows) {
    if (row.plan_id !== plan) {
      plan = row.plan_id;
      head = null;
    }
    const c = chainEntry(row.plan_id, head, readEntry(row.plan_id, row));
    write.run(c.seq, c.prev, c.hash, row.plan_id, row.seq);
    head = c;
  }
}

/** A stored checkpoint as it is: a tampered one is for the verifier to find. */
function checkpointOf(planId: string, r: CheckpointRow): Checkpoint {
  const cp = { plan: planId, size: r.size, head: r.head, ts: r.ts };
  return Object.freeze(r.signature === null ? cp : { ...cp, signature: r.signature });
}

function documentOf(row: DocumentRow): PlanDocument {
  return documentFromRow(row, 'SqliteStore');
}

function approvalOf(row: ApprovalRow): Approval {
  return approvalFromRow(row, 'SqliteStore');
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
