import type { Pool } from 'pg';
import { AuditTrail } from '../../audit/AuditTrail.js';
import { type ChainedEntry, type Checkpoint, type MalformedEntry } from '../../audit/chain.js';
import { describeValue, GuardrailError, invalid, isGuardrailError } from '../../errors.js';
import { AutonomyGuardrails } from '../../guardrails/AutonomyGuardrails.js';
import {
  APPROVAL_STATUSES,
  type Approval,
  type ApprovalStatus,
  type GuardrailStore,
  type Notification,
  type NotificationClaim,
  type NotificationFilter,
  type NotificationInput,
  type NotificationOutcome,
  type PersonalToken,
  type PlanChangeFn,
  type CapWindowRecord,
  type UpdateOptions,
  type PlanDocument,
  type PlanDocumentInput,
  type PlanListing,
  type PlanRecord,
  type Principal,
} from '../GuardrailStore.js';
import { type ApprovalRow } from '../sql/approvalRows.js';
import { pruneTarget, unanchoredPrune, type CheckpointPolicy } from '../checkpoints.js';
import { logEntryFromRow } from '../sql/auditRows.js';
import { checkpointFromRow, guardrailsFromRow, type CheckpointRow } from '../sql/rows.js';
import { checkDocument, documentFromRow, type DocumentRow } from '../planDocuments.js';
import { PlanCache } from '../planCache.js';
import { query, storable, transaction, write } from './connection.js';
import { chainedOf, readApproval, readEntries, storedRow, type LogRow } from './rows.js';
import { notMigrated, POSTGRES_SCHEMA_VERSION, type Tables } from './schema.js';
import { statements, type Statements } from './statements.js';

import { PlanUpdates } from './updates.js';
import { putWithTrail } from './puts.js';
import { PostgresCaps } from './caps.js';
import { PostgresPeople } from './people.js';
import { PostgresOutbox } from './notifications.js';
import type { SpendCap } from '../../guardrails/caps.js';
import { listPlans, saveDocument } from './documents.js';
import { postgresSettings, type PostgresStoreOptions } from './options.js';
import { migrateSchema, schemaVersion, tablesOf } from './schema.js';

export { POSTGRES_SCHEMA_VERSION } from './schema.js';

export type { PostgresStoreOptions } from './options.js';

/**
 * Keeps guardrails, every audit entry and approvals in PostgreSQL, so that several processes can share
 * plans. Updates of a plan through one store run one after the other, in the order they came. An update
 * is decided from the plan as this store last wrote it, and written with its audit entry in one
 * statement, `UPDATE … WHERE version = $v RETURNING` with the inserts in the same round trip, that writes
 * only if no one changed the plan since (every update of a plan's row gives it a new version); updates
 * that queue up meanwhile are decided one after the other and written together by the next statement.
 * Otherwise (first use, another writer, approvals) the update runs in a transaction that locks the plan's
 * row (`SELECT … FOR UPDATE`) from the read to the commit. Either way concurrent updates of a plan, from
 * any number of connections and processes, take effect one after the other. Any failure of the database
 * rejects with a `STORE_UNAVAILABLE` {@link GuardrailError}: a check that cannot be recorded is never
 * allowed.
 *
 * Call {@link migrate} once (at deployment, or at start-up: it is idempotent and safe to run from several
 * processes at once) before using the store.
 *
 * @example
 * const store = new PostgresStore({ url: process.env.DATABASE_URL });
 * await store.migrate();
 * const service = new AutonomyGuardrailService({ store });
 */
export class PostgresStore implements GuardrailStore {
  readonly auditCapacity: number;
  readonly schema: string;
  readonly tablePrefix: string;
  readonly #pool: Pool;
  readonly #endPool: (() => Promise<void>) | null;
  readonly #t: Tables;
  readonly #sql: Statements;
  readonly #checkpoints: CheckpointPolicy | null;
  #closed = false;
  #ready: Promise<void> | undefined;
  /** Plans as this store last wrote or locked them, with their row's version. */
  readonly #cache = new PlanCache();
  /** The updates through this store, queued per plan; `close()` waits for them. */
  readonly #updates: PlanUpdates;
  readonly #caps: PostgresCaps;
  readonly #people: PostgresPeople;
  readonly #outbox: PostgresOutbox;

  constructor(options: PostgresStoreOptions) {
    const c = postgresSettings(options);
    this.auditCapacity = c.auditCapacity;
    this.schema = c.schema;
    this.tablePrefix = c.tablePrefix;
    this.#checkpoints = c.checkpoints;
    this.#pool = c.pool;
    this.#endPool = c.endPool;
    this.#t = tablesOf(this.schema, this.tablePrefix);
    this.#sql = statements(this.#t);
    this.#caps = new PostgresCaps(this.#t, this.#pool);
    const usable = async () => {
      this.#open();
      await this.#whenReady();
    };
    this.#people = new PostgresPeople(this.#t, this.#pool, usable);
    this.#outbox = new PostgresOutbox(this.#t, this.#pool, usable);
    this.#updates = new PlanUpdates({
      caps: this.#caps,
      pool: this.#pool,
      sql: this.#sql,
      cache: this.#cache,
      checkpoints: this.#checkpoints,
      whenReady: () => this.#whenReady(),
    });
  }

  /**
   * Creates the schema and the tables, or brings them up to {@link POSTGRES_SCHEMA_VERSION}. Idempotent;
   * concurrent calls, from any process, wait for each other. Rejects with `STORE_SCHEMA_TOO_NEW` when the
   * database was migrated by a newer version of leash.
   */
  async migrate(): Promise<void> {
    this.#open();
    const t = this.#t;
    const doing = 'migrate its tables';
    await transaction(this.#pool, doing, (client) => migrateSchema(client, doing, this.schema, t));
    this.#ready = Promise.resolve();
  }

  /**
   * Whether the store's tables are in the database, that is whether {@link migrate} ran on this schema
   * and prefix. Creates nothing, not even the schema, so that a caller can refuse a mistyped one.
   */
  async exists(): Promise<boolean> {
    this.#open();
    const found = await query<{ found: boolean }>(
      this.#pool,
      'look for its tables',
      'SELECT to_regclass($1) IS NOT NULL AS found',
      [this.#t.plans],
    );
    return found.rows[0]?.found === true;
  }

  async update<T>(planId: string, change: PlanChangeFn<T>, options?: UpdateOptions): Promise<T> {
    this.#open();
    storable(planId, 'plan_id');
    const approvalId = options?.approvalId;
    if (approvalId !== undefined) storable(approvalId, 'approval_id');
    // Queued at once, so that updates run in the order they were made, even past the schema check.
    return this.#updates.update(planId, change, approvalId, options?.capsAt, options?.onCommit) as Promise<T>;
  }

  async putCaps(caps: readonly SpendCap[]): Promise<void> {
    this.#open();
    await this.#whenReady();
    await this.#caps.put(caps);
  }

  async deleteCap(id: string): Promise<boolean> {
    this.#open();
    storable(id, 'cap_id');
    await this.#whenReady();
    return this.#caps.delete(id);
  }

  async listCaps(): Promise<SpendCap[]> {
    this.#open();
    await this.#whenReady();
    return this.#caps.list();
  }

  async listCapWindows(filter?: { readonly capId?: string }): Promise<CapWindowRecord[]> {
    this.#open();
    await this.#whenReady();
    return this.#caps.windows(filter?.capId);
  }

  async getApproval(id: string): Promise<Approval | null> {
    this.#open();
    storable(id, 'approval_id');
    await this.#whenReady();
    const doing = `read approval ${describeValue(id)}`;
    const found = await query<ApprovalRow>(this.#pool, doing, this.#sql.getApproval, [id]);
    return found.rows[0] === undefined ? null : readApproval(found.rows[0]);
  }

  async findApproval(planId: string, decisionId: string): Promise<Approval | null> {
    this.#open();
    storable(planId, 'plan_id');
    storable(decisionId, 'decision_id');
    await this.#whenReady();
    const doing = `find the approval of decision ${describeValue(decisionId)} of plan ${describeValue(planId)}`;
    const found = await query<ApprovalRow>(this.#pool, doing, this.#sql.newestOfDecision, [
      planId,
      decisionId,
    ]);
    return found.rows[0] === undefined ? null : readApproval(found.rows[0]);
  }

  async listApprovals(filter?: {
    readonly planId?: string;
    readonly status?: ApprovalStatus;
  }): Promise<Approval[]> {
    this.#open();
    const planId = filter?.planId;
    const status = filter?.status;
    if (planId !== undefined) storable(planId, 'plan_id');
    if (status !== undefined && !APPROVAL_STATUSES.includes(status)) {
      invalid('status', `one of ${APPROVAL_STATUSES.join(', ')}`, status);
    }
    await this.#whenReady();
    const sql = this.#sql;
    const doing = 'list approvals';
    const found =
      planId !== undefined && status !== undefined
        ? await query<ApprovalRow>(this.#pool, doing, sql.listByPlanAndStatus, [planId, status])
        : planId !== undefined
          ? await query<ApprovalRow>(this.#pool, doing, sql.listByPlan, [planId])
          : status !== undefined
            ? await query<ApprovalRow>(this.#pool, doing, sql.listByStatus, [status])
            : await query<ApprovalRow>(this.#pool, doing, sql.listAll, []);
    return found.rows.map(readApproval);
  }

  async put(planId: string, guardrails: AutonomyGuardrails, audit?: AuditTrail): Promise<void> {
    this.#open();
    storable(planId, 'plan_id');
    const json = JSON.stringify(guardrails.toJSON());
    // Copied now: the caller may keep adding to its trail while the write is on its way.
    const kept = audit?.withCapacity(this.auditCapacity).entries;
    await this.#whenReady();
    const doing = `store plan ${describeValue(planId)}`;
    const sql = this.#sql;
    this.#cache.delete(planId);
    if (kept === undefined) {
      await write(this.#pool, doing, sql.upsertPlan, [planId, json]);
      return;
    }
    await putWithTrail(this.#pool, sql, this.#checkpoints, planId, json, kept);
  }

  async create(planId: string, guardrails: AutonomyGuardrails): Promise<boolean> {
    this.#open();
    storable(planId, 'plan_id');
    const json = JSON.stringify(guardrails.toJSON());
    await this.#whenReady();
    this.#cache.delete(planId);
    const added = await write(this.#pool, `store plan ${describeValue(planId)}`, this.#sql.insertPlan, [
      planId,
      json,
    ]);
    return added.rowCount === 1;
  }

  async get(planId: string): Promise<PlanRecord | null> {
    await this.#readyFor(planId);
    const doing = `read plan ${describeValue(planId)}`;
    // One statement, so the guardrails and the entries come from the same snapshot.
    const found = await query<{ guardrails: string; entries: unknown }>(
      this.#pool,
      doing,
      this.#sql.getPlan,
      [planId, this.auditCapacity],
    );
    const row = found.rows[0];
    if (row === undefined) return null;
    const trail = new AuditTrail({ maxEntries: this.auditCapacity });
    for (const entry of readEntries(planId, row.entries)) trail.add(entry);
    return { guardrails: guardrailsFromRow(planId, row.guardrails, 'PostgresStore'), audit: trail };
  }

  async getGuardrails(planId: string): Promise<AutonomyGuardrails | null> {
    await this.#readyFor(planId);
    const doing = `read plan ${describeValue(planId)}`;
    const found = await query<{ guardrails: string }>(this.#pool, doing, this.#sql.getGuardrails, [planId]);
    const row = found.rows[0];
    return row === undefined ? null : guardrailsFromRow(planId, row.guardrails, 'PostgresStore');
  }

  async readAuditLog(planId: string): Promise<readonly ChainedEntry[]> {
    return (await this.#readLog(planId)).map((row) => chainedOf(planId, row));
  }

  async readAuditRows(planId: string): Promise<readonly (ChainedEntry | MalformedEntry)[]> {
    return (await this.#readLog(planId)).map((row) => logEntryFromRow(planId, storedRow(row)));
  }

  async #readLog(planId: string): Promise<LogRow[]> {
    await this.#readyFor(planId);
    const doing = `read the audit log of plan ${describeValue(planId)}`;
    return (await query<LogRow>(this.#pool, doing, this.#sql.readLog, [planId])).rows;
  }

  async delete(planId: string): Promise<boolean> {
    await this.#readyFor(planId);
    this.#cache.delete(planId);
    const gone = await write(this.#pool, `delete plan ${describeValue(planId)}`, this.#sql.deletePlan, [
      planId,
    ]);
    return (gone.rowCount ?? 0) > 0;
  }

  async readCheckpoints(planId: string): Promise<readonly Checkpoint[]> {
    await this.#readyFor(planId);
    const doing = `read the checkpoints of plan ${describeValue(planId)}`;
    const found = await query<CheckpointRow>(this.#pool, doing, this.#sql.readCheckpoints, [planId]);
    return found.rows.map((r) => checkpointFromRow(planId, r));
  }

  async pruneAuditLog(planId: string, throughSeq: number): Promise<number> {
    this.#open();
    storable(planId, 'plan_id');
    const through = pruneTarget(throughSeq);
    await this.#whenReady();
    const doing = `prune the audit log of plan ${describeValue(planId)}`;
    type Row = { anchored: number; removed: number };
    const row = (await write<Row>(this.#pool, doing, this.#sql.pruneEntries, [planId, through])).rows[0];
    if (row === undefined || row.anchored === 0) throw unanchoredPrune(planId, through);
    return row.removed;
  }

  async savePlanDocument(
    document: PlanDocumentInput,
    options?: { readonly expectedRevision?: number | null },
  ): Promise<PlanDocument> {
    this.#open();
    const doc = checkDocument(document, options);
    await this.#whenReady();
    return saveDocument(this.#pool, this.#sql, doc);
  }

  async getPlanDocument(planId: string): Promise<PlanDocument | null> {
    await this.#readyFor(planId);
    const doing = `read the document of plan ${describeValue(planId)}`;
    const found = await query<DocumentRow>(this.#pool, doing, this.#sql.getDocument, [planId]);
    return found.rows[0] === undefined ? null : documentFromRow(found.rows[0], 'PostgresStore');
  }

  async listPlans(): Promise<PlanListing[]> {
    this.#open();
    await this.#whenReady();
    return listPlans(this.#pool, this.#sql);
  }

  async putPrincipal(principal: Principal): Promise<void> {
    return this.#people.putPrincipal(principal);
  }

  async getPrincipal(id: string): Promise<Principal | null> {
    return this.#people.getPrincipal(id);
  }

  async listPrincipals(): Promise<Principal[]> {
    return this.#people.listPrincipals();
  }

  async putToken(token: PersonalToken): Promise<void> {
    return this.#people.putToken(token);
  }

  async findToken(hash: string): Promise<PersonalToken | null> {
    return this.#people.findToken(hash);
  }

  async listTokens(filter?: { readonly principalId?: string }): Promise<PersonalToken[]> {
    return this.#people.listTokens(filter);
  }

  async enqueueNotifications(items: readonly NotificationInput[]): Promise<void> {
    return this.#outbox.enqueue(items);
  }

  async claimNotifications(claim: NotificationClaim): Promise<Notification[]> {
    return this.#outbox.claim(claim);
  }

  async finishNotification(id: string, outcome: NotificationOutcome): Promise<void> {
    return this.#outbox.finish(id, outcome);
  }

  async listNotifications(filter?: NotificationFilter): Promise<Notification[]> {
    return this.#outbox.list(filter);
  }

  /**
   * Waits for the updates already made (each settles within the query timeout), then ends the pool when
   * the store created it: a connection the server has not closed a connection timeout after the store
   * said goodbye (a silent network) is dropped. A pool passed in is left to its owner.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // The updates already made run to the end first.
    await this.#updates.drained();
    this.#cache.clear();
    if (this.#endPool !== null) await this.#endPool();
  }

  #open(): void {
    if (this.#closed) throw new GuardrailError('STORE_CLOSED', 'the store is closed');
  }

  /** Refuses a closed store and a plan id no row can hold, then waits for the schema check. */
  async #readyFor(planId: string): Promise<void> {
    this.#open();
    storable(planId, 'plan_id');
    await this.#whenReady();
  }

  /** Checks the schema version once, before the first use; a failed check is tried again next time. */
  #whenReady(): Promise<void> {
    if (this.#ready === undefined) {
      const doing = 'check its schema version';
      const ready = (async () => {
        let current: number;
        try {
          current = await schemaVersion(this.#pool, doing, this.#t, this.schema);
        } catch (error) {
          const code = isGuardrailError(error)
            ? (error.cause as { code?: unknown } | undefined)?.code
            : undefined;
          if (code === '42P01' || code === '3F000') {
            throw notMigrated(0);
          }
          throw error;
        }
        if (current < POSTGRES_SCHEMA_VERSION) throw notMigrated(current);
      })();
      ready.catch(() => {
        if (this.#ready === ready) this.#ready = undefined;
      });
      this.#ready = ready;
    }
    return this.#ready;
  }
}
