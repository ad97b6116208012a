import { createHash } from 'node:crypto';
import type { Pool, PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { AuditEntry } from '../../audit/AuditEntry.js';
import { AuditTrail, DEFAULT_AUDIT_CAPACITY } from '../../audit/AuditTrail.js';
import { chainEntry, type ChainedEntry, type Checkpoint, type MalformedEntry } from '../../audit/chain.js';
import {
  describeValue,
  errorText,
  GuardrailError,
  GuardrailValidationError,
  invalid,
  isGuardrailError,
  isStoreOutcomeUnknownError,
  StoreOutcomeUnknownError,
} from '../../errors.js';
import { AutonomyGuardrails } from '../../guardrails/AutonomyGuardrails.js';
import {
  APPROVAL_STATUSES,
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
} from '../sql/approvalRows.js';
import {
  checkpointPolicy,
  pruneTarget,
  unanchoredPrune,
  type CheckpointOptions,
  type CheckpointPolicy,
} from '../checkpoints.js';
import {
  chainedFromRow,
  entryFromRow,
  logEntryFromRow,
  type LogRow as StoredLogRow,
} from '../sql/auditRows.js';
import { driver } from '../drivers.js';
import { checkpointFromRow, guardrailsFromRow, type CheckpointRow } from '../sql/rows.js';
import { chainEntries, decideWrite, writesState, type ChainedRecord, type Write } from '../decide.js';
import {
  checkDocument,
  documentConflict,
  documentFromRow,
  mergeListings,
  type DocumentRow,
} from '../planDocuments.js';
import { MAX_UPDATES_PER_WRITE, PlanCache, type CachedPlan, type ChainHead } from '../planCache.js';

/** Options of a {@link PostgresStore}: exactly one of `pool` and `url`. */
export interface PostgresStoreOptions {
  /**
   * A pool the caller owns: the store uses it and never ends it. Its owner listens for its 'error' event,
   * which a connection idle in it emits when the server ends it; the store listens to those it holds.
   */
  pool?: Pool;
  /** A connection string: the store creates a pool of its own and ends it on `close()`. */
  url?: string;
  /** The schema holding the tables; default `public`. `migrate()` creates it when it is missing. */
  schema?: string;
  /** Put before every table name, so several stores can share a schema; default `leash_`. */
  tablePrefix?: string;
  /** How many audit entries `get` returns per plan (the tables keep every entry); default 1000. */
  auditCapacity?: number;
  /** Write a (signed) checkpoint of a plan's log every `every` entries, in the transaction of the entry. */
  checkpoints?: CheckpointOptions;
}

// Schema and table prefix go into SQL identifiers, so they are held to a plain lower-case form that
// needs no escaping and leaves room for the longest table name within PostgreSQL's 63 bytes.
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,30}$/;
// NUL cannot be stored in a text column, and a lone surrogate is turned into U+FFFD on the way to the
// server, which would make two distinct ids name one row.
const LONE_SURROGATE = /\p{Cs}/u;
// First key of the advisory lock that serializes migrations ("leas").
const MIGRATION_LOCK = 0x6c656173;
// Owned pools give up waiting for a connection after this long instead of hanging a check.
const CONNECT_TIMEOUT_MS = 10_000;

interface Tables {
  readonly schema: string;
  readonly plans: string;
  readonly entries: string;
  readonly approvals: string;
  readonly documents: string;
  readonly checkpoints: string;
  readonly version: string;
  /** The sequence every new version of a plan's row takes its number from. */
  readonly planVersions: string;
  /** The trigger function that gives a plan's row a new version on every update. */
  readonly newPlanVersion: string;
  readonly prefix: string;
}

/** Each migration, in order: migration n brings the schema to version n. */
const MIGRATIONS: readonly ((t: Tables) => readonly string[])[] = [
  (t) => [
    // Guardrails and details are kept as JSON text, not jsonb: text gives back exactly what was
    // written (jsonb refuses \u0000 and lone surrogates, which JSON.stringify emits as escapes).
    `CREATE TABLE ${t.plans} (
       plan_id text PRIMARY KEY,
       guardrails text NOT NULL
     )`,
    `CREATE TABLE ${t.entries} (
       plan_id text NOT NULL REFERENCES ${t.plans} (plan_id) ON DELETE CASCADE,
       seq bigint NOT NULL,
       event_type text NOT NULL,
       ts bigint NOT NULL,
       details text NOT NULL,
       PRIMARY KEY (plan_id, seq)
     )`,
    `CREATE TABLE ${t.approvals} (
       id text PRIMARY KEY,
       plan_id text NOT NULL REFERENCES ${t.plans} (plan_id) ON DELETE CASCADE,
       decision_id text NOT NULL,
       operation text NOT NULL,
       input_hash text NOT NULL,
       requested_at text NOT NULL,
       expires_at text NOT NULL,
       status text NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'used')),
       decided_by text,
       decided_at text,
       reason text,
       used_at text
     )`,
    `CREATE INDEX ${quote(`${t.prefix}approvals_plan_idx`)} ON ${t.approvals} (plan_id)`,
    `CREATE INDEX ${quote(`${t.prefix}approvals_status_idx`)} ON ${t.approvals} (status)`,
  ],
  // The audit table becomes a hash chain; rows written before it are chained by migrate(). A plan's
  // trail starts at window_start: a put with a trail moves it instead of deleting history. The plan's
  // row holds the seq and hash of its last entry, read with the row lock an update takes anyway.
  (t) => [
    `ALTER TABLE ${t.entries} ADD COLUMN prev text, ADD COLUMN hash text`,
    `ALTER TABLE ${t.plans}
       ADD COLUMN window_start bigint NOT NULL DEFAULT 1,
       ADD COLUMN head_seq bigint NOT NULL DEFAULT 0,
       ADD COLUMN head_hash text`,
  ],
  // Plan documents: what a runner saves so that another process can show or resume the plan. Not tied
  // to the plans table: a document may be saved before the plan's guardrails are configured.
  (t) => [
    `CREATE TABLE ${t.documents} (
       plan_id text PRIMARY KEY,
       phase text NOT NULL,
       body text NOT NULL,
       updated_at text NOT NULL,
       revision bigint NOT NULL
     )`,
  ],
  // Checkpoints of each plan's log, written with the entry they cover.
  (t) => [
    `CREATE TABLE ${t.checkpoints} (
       plan_id text NOT NULL REFERENCES ${t.plans} (plan_id) ON DELETE CASCADE,
       size bigint NOT NULL,
       head text NOT NULL,
       ts text NOT NULL,
       signature text,
       PRIMARY KEY (plan_id, size)
     )`,
  ],
  // A version on each plan's row, new with every insert and update of the row (whoever writes it, through
  // the store or not) and unique across deletes: a store decides a change from the plan as it last wrote
  // it, and writes it only if the row still has that version, in one statement. The trigger runs as the
  // role that migrated, so roles granted only the tables need nothing on the sequence.
  (t) => [
    `CREATE SEQUENCE ${t.planVersions}`,
    `ALTER TABLE ${t.plans} ADD COLUMN version bigint NOT NULL DEFAULT nextval('${t.planVersions}')`,
    `ALTER TABLE ${t.plans} ALTER COLUMN version DROP DEFAULT`,
    `CREATE FUNCTION ${t.newPlanVersion}() RETURNS trigger LANGUAGE plpgsql
       SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
     BEGIN
       NEW.version := nextval('${t.planVersions}');
       RETURN NEW;
     END
     $$`,
    `CREATE TRIGGER ${quote(`${t.prefix}plans_version`)} BEFORE INSERT OR UPDATE ON ${t.plans}
       FOR EACH ROW EXECUTE FUNCTION ${t.newPlanVersion}()`,
  ],
  // What an approval is for, as the person asked sees it: the tool an agent called, a preview of its input.
  (t) => [`ALTER TABLE ${t.approvals} ADD COLUMN tool_name text, ADD COLUMN input_preview text`],
  // A run guard looks up the approval of a plan's decision before each call.
  (t) => [
    `CREATE INDEX IF NOT EXISTS ${quote(`${t.prefix}approvals_decision_idx`)}
       ON ${t.approvals} (plan_id, decision_id)`,
  ],
];

/** The schema version this code reads and writes; `migrate()` brings a database up to it. */
export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.length;

/** The migration that added the hash chain: rows it finds are chained right after it runs. */
const CHAIN_MIGRATION = 2;

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
  readonly #ownsPool: boolean;
  readonly #t: Tables;
  readonly #sql: Statements;
  readonly #checkpoints: CheckpointPolicy | null;
  #closed = false;
  #ready: Promise<void> | undefined;
  /** Plans as this store last wrote or locked them, with their row's version. */
  readonly #cache = new PlanCache();
  /** Per plan, the updates through this store that wait for the one running (the first). */
  readonly #queues = new Map<string, Pending[]>();
  /** The runs of those queues going on, which `close()` waits for. */
  readonly #draining = new Set<Promise<void>>();

  constructor(options: PostgresStoreOptions) {
    if (typeof options !== 'object' || options === null) invalid('options', 'an object', options);
    this.auditCapacity = new AuditTrail({
      maxEntries: options.auditCapacity ?? DEFAULT_AUDIT_CAPACITY,
    }).maxEntries;
    this.schema = identifier(options.schema ?? 'public', 'schema');
    if (this.schema.startsWith('pg_')) invalid('schema', 'a name not starting with pg_', this.schema);
    this.tablePrefix = identifier(options.tablePrefix ?? 'leash_', 'tablePrefix');
    this.#checkpoints = checkpointPolicy(options.checkpoints);
    if ((options.pool === undefined) === (options.url === undefined)) {
      throw new GuardrailValidationError('pool', 'give exactly one of pool and url');
    }
    if (options.url !== undefined) {
      if (typeof options.url !== 'string' || options.url === '')
        invalid('url', 'a connection string', options.url);
      this.#pool = new (driver('pg').Pool)({
        connectionString: options.url,
        connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      });
      // An idle connection that breaks emits 'error' on the pool, which would end the process when
      // unheard; the next query reports the failure instead.
      this.#pool.on('error', () => {});
      // A connection the server ends can emit 'error' again after the query it failed has let go of it
      // (pg-pool's own query listens once): each connection keeps a listener for its whole life, and
      // the query, or the next one, reports the failure.
      this.#pool.on('connect', (client) => client.on('error', () => {}));
      this.#ownsPool = true;
    } else {
      const pool = options.pool;
      // Duck-typed, so that a pool of another copy of pg is accepted.
      if (typeof (pool as { connect?: unknown } | undefined)?.connect !== 'function') {
        invalid('pool', 'a pg.Pool', pool);
      }
      this.#pool = pool as Pool;
      this.#ownsPool = false;
    }
    const s = quote(this.schema);
    const table = (name: string) => `${s}.${quote(this.tablePrefix + name)}`;
    this.#t = {
      schema: s,
      prefix: this.tablePrefix,
      plans: table('plans'),
      entries: table('audit_entries'),
      approvals: table('approvals'),
      documents: table('plan_documents'),
      checkpoints: table('checkpoints'),
      version: table('schema_version'),
      planVersions: table('plan_versions'),
      newPlanVersion: table('new_plan_version'),
    };
    this.#sql = statements(this.#t);
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
    await this.#transaction(doing, async (client) => {
      // Per schema, not per prefix: two prefixes migrating at once would both create the schema.
      await query(client, doing, 'SELECT pg_advisory_xact_lock($1, hashtext($2))', [
        MIGRATION_LOCK,
        this.schema,
      ]);
      const ns = await query(client, doing, 'SELECT 1 FROM pg_namespace WHERE nspname = $1', [this.schema]);
      if (ns.rowCount === 0) await query(client, doing, `CREATE SCHEMA ${t.schema}`);
      await query(
        client,
        doing,
        `CREATE TABLE IF NOT EXISTS ${t.version} (
           version integer PRIMARY KEY,
           applied_at timestamptz NOT NULL DEFAULT now()
         )`,
      );
      const current = await this.#version(client, doing);
      for (let v = current + 1; v <= MIGRATIONS.length; v++) {
        for (const statement of (MIGRATIONS[v - 1] as (t: Tables) => readonly string[])(t)) {
          await query(client, doing, statement);
        }
        if (v === CHAIN_MIGRATION) await chainUnchainedRows(client, doing, t);
        await query(client, doing, `INSERT INTO ${t.version} (version) VALUES ($1)`, [v]);
      }
    });
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

  async update<T>(
    planId: string,
    change: PlanChangeFn<T>,
    options?: { readonly approvalId?: string },
  ): Promise<T> {
    this.#open();
    storable(planId, 'plan_id');
    const approvalId = options?.approvalId;
    if (approvalId !== undefined) storable(approvalId, 'approval_id');
    // Queued at once, so that updates run in the order they were made, even past the schema check.
    return new Promise<T>((resolve, reject) => {
      const pending: Pending = { change, approvalId, resolve: resolve as (value: unknown) => void, reject };
      const queue = this.#queues.get(planId);
      if (queue !== undefined) {
        queue.push(pending);
        return;
      }
      const started = [pending];
      this.#queues.set(planId, started);
      const draining = this.#drain(planId, started);
      this.#draining.add(draining);
      void draining.then(() => this.#draining.delete(draining));
    });
  }

  /**
   * Runs the queued updates of one plan through this store, in the order they came, until none is left.
   * Updates that can be decided from the plan as this store last wrote it go together in one statement
   * ({@link #writeQueued}); any other, and every update after another writer changed the plan, runs in a
   * transaction that locks the plan's row.
   */
  async #drain(planId: string, queue: Pending[]): Promise<void> {
    // When the database cannot be reached, every update waiting is refused at once, rather than each
    // waiting out a connection timeout of its own behind the one before it.
    // Those were not sent: what might have been committed is only the update the database was lost with.
    const refuseAll = (error: unknown): void => {
      const refusal = isStoreOutcomeUnknownError(error)
        ? new GuardrailError(
            'STORE_UNAVAILABLE',
            `PostgresStore did not send an update of plan ${describeValue(planId)}: the database was lost ` +
              `while an earlier one was written (${errorText(error)})`,
            { cause: error },
          )
        : error;
      for (const pending of queue.splice(0)) pending.reject(refusal);
    };
    try {
      while (queue.length > 0) {
        try {
          await this.#whenReady();
        } catch (error) {
          // A server that answered (a lock timeout, say) may answer the next one.
          if (answered(error)) (queue.shift() as Pending).reject(error);
          else refuseAll(error);
          continue;
        }
        const written = await this.#writeQueued(planId, queue);
        if (written.lost !== undefined) refuseAll(written.lost);
        if (written.settled > 0) continue;
        const pending = queue.shift() as Pending;
        try {
          pending.resolve(await this.#updateLocked(planId, pending.change, pending.approvalId));
        } catch (error) {
          pending.reject(error);
          if (isGuardrailError(error) && error.code === 'STORE_UNAVAILABLE' && !answered(error)) {
            refuseAll(error);
          }
        }
      }
    } catch (error) {
      // Not expected; but no update is left waiting for ever.
      this.#cache.delete(planId);
      for (const pending of queue.splice(0)) pending.reject(error);
    } finally {
      this.#queues.delete(planId);
    }
  }

  /**
   * Decides the updates at the head of the queue, one after the other, from the plan as this store last
   * wrote it, and writes all their changes in one statement that holds only while the plan's row still
   * has that version. Stops before an update that needs an approval, writes nothing, changes an approval
   * or throws: the transaction decides those. Resolves with how many updates it settled (and took off
   * the queue): 0 when it could decide none or the plan has changed since, and none was written.
   */
  async #writeQueued(planId: string, queue: Pending[]): Promise<{ settled: number; lost?: unknown }> {
    const cached = queue[0]?.approvalId === undefined ? this.#cache.get(planId) : undefined;
    if (cached === undefined) return { settled: 0 };
    const batch = new ChangeBatch(planId, cached, this.#checkpoints);
    const results: unknown[] = [];
    for (const pending of queue) {
      if (pending.approvalId !== undefined || results.length === MAX_UPDATES_PER_WRITE) break;
      let result: unknown;
      try {
        const out = pending.change(batch.guardrails, null);
        if (!writesState(out) || out.approval !== undefined || out.newApproval !== undefined) break;
        batch.add(out); // writes: decided, or thrown
        result = out.result;
      } catch {
        break;
      }
      results.push(result);
    }
    if (results.length === 0) return { settled: 0 };
    const doing = `update plan ${describeValue(planId)}`;
    const refuse = (error: unknown): void => {
      // The cached guardrails were changed in place for a write that did not happen (or may not have).
      this.#cache.delete(planId);
      for (const pending of queue.splice(0, results.length)) pending.reject(error);
    };
    let held: Held;
    try {
      held = await hold(this.#pool);
    } catch (error) {
      const lost = unavailable(doing, error); // nothing was sent
      refuse(lost);
      return { settled: results.length, lost };
    }
    let written: CachedPlan | null;
    let broken: Error | undefined;
    try {
      written = await batch.write(held.client, doing, this.#sql.writeChanges);
    } catch (error) {
      if (answered(error)) {
        if (endsSession(error)) broken = asError(causeOf(error));
        refuse(error);
        return { settled: results.length };
      }
      // Not tried again one by one: without an answer from the server, the statement may have committed.
      broken = asError(causeOf(error));
      const lost = outcomeUnknown(doing, causeOf(error));
      refuse(lost);
      return { settled: results.length, lost };
    } finally {
      // A connection whose state is unknown, or that the server ended, is closed rather than handed on.
      held.release(broken);
    }
    if (written === null) {
      // Another writer changed the plan since: the cached guardrails were changed in place for nothing.
      this.#cache.delete(planId);
      return { settled: 0 };
    }
    this.#cache.set(planId, written);
    const settled = queue.splice(0, results.length);
    for (let i = 0; i < settled.length; i++) (settled[i] as Pending).resolve(results[i]);
    return { settled: settled.length };
  }

  /** One update in a transaction that locks the plan's row from the read to the commit. */
  async #updateLocked<T>(
    planId: string,
    change: PlanChangeFn<T>,
    approvalId: string | undefined,
  ): Promise<T> {
    const doing = `update plan ${describeValue(planId)}`;
    const sql = this.#sql;
    let state: CachedPlan | null = null;
    let result: T;
    try {
      result = await this.#transaction(doing, async (client) => {
        const row = (await query<LockedPlan>(client, doing, sql.lockPlan, [planId])).rows[0];
        const current = row === undefined ? null : guardrailsFromRow(planId, row.guardrails, 'PostgresStore');
        let wanted: Approval | null = null;
        // Approvals exist only for configured plans; the plan's lock already orders every change to them.
        if (current !== null && approvalId !== undefined) {
          const found = await query<ApprovalRow>(client, doing, sql.lockApproval, [approvalId, planId]);
          wanted = found.rows[0] === undefined ? null : readApproval(found.rows[0]);
        }
        const out = change(current, wanted);
        if (!writesState(out)) {
          // Kept to decide from only with a head to chain to; a change that writes nothing needs none.
          const head = row === undefined || current === null ? undefined : headOrUndefined(planId, row);
          if (row !== undefined && current !== null && head !== undefined) {
            state = { guardrails: current, head, version: row.version };
          }
          return out.result;
        }
        const locked =
          row === undefined || current === null
            ? null
            : { guardrails: current, head: headOf(planId, row), version: row.version };
        const batch = new ChangeBatch(planId, locked, this.#checkpoints);
        // Refuses a change of a plan that is not configured, or with another plan's approval.
        const { approval, newApproval } = batch.add(out) as Write<ChainedRecord[]>;
        const written = batch.writes ? await batch.write(client, doing, sql.writeChanges) : locked;
        if (written === null) {
          // The row is locked: only a write that bypassed the lock could have given it a new version.
          throw new GuardrailError(
            'STORE_CONTRACT',
            `PostgresStore could not ${doing}: its row changed while it was locked, written by something that does not lock it`,
          );
        }
        if (approval !== undefined) {
          const kept = await query(client, doing, sql.upsertApproval, approvalRowValues(approval));
          if (kept.rowCount === 0) {
            throw new GuardrailError('STORE_CONTRACT', `approval "${approval.id}" belongs to another plan`);
          }
        }
        if (newApproval !== undefined) {
          const added = await query(client, doing, sql.insertApproval, approvalRowValues(newApproval));
          if (added.rowCount === 0) {
            throw new GuardrailError('APPROVAL_ID_TAKEN', `approval id "${newApproval.id}" is already used`);
          }
        }
        state = written;
        return out.result;
      });
    } catch (error) {
      this.#cache.delete(planId);
      throw error;
    }
    // Kept only now that the transaction has committed.
    if (state === null) this.#cache.delete(planId);
    else this.#cache.set(planId, state);
    return result;
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
      await query(this.#pool, doing, sql.upsertPlan, [planId, json]);
      return;
    }
    await this.#transaction(doing, async (client) => {
      // The upsert locks the plan's row, so the head read next stays the head until the commit.
      await query(client, doing, sql.upsertPlan, [planId, json]);
      const locked = (await query<LockedPlan>(client, doing, sql.lockPlan, [planId])).rows[0];
      let head = locked === undefined ? null : headOf(planId, locked);
      const windowStart = (head?.seq ?? 0) + 1;
      if (kept.length > 0) {
        const records = chainEntries(planId, head, kept, this.#checkpoints);
        await query(client, doing, sql.insertEntries, [
          planId,
          kept.map((e) => e.eventType),
          kept.map((e) => e.timestamp),
          kept.map((e) => JSON.stringify(e.details)),
          records.map((r) => r.chained.seq),
          records.map((r) => r.chained.prev),
          records.map((r) => r.chained.hash),
        ]);
        const checkpoints = records.flatMap((r) => (r.checkpoint === null ? [] : [r.checkpoint]));
        await this.#insertCheckpoints(client, doing, planId, checkpoints);
        head = (records.at(-1) as ChainedRecord).chained;
      }
      await query(client, doing, sql.setWindow, [planId, windowStart, head?.seq ?? 0, head?.hash ?? null]);
    });
  }

  async get(planId: string): Promise<PlanRecord | null> {
    this.#open();
    storable(planId, 'plan_id');
    await this.#whenReady();
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
    this.#open();
    storable(planId, 'plan_id');
    await this.#whenReady();
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
    this.#open();
    storable(planId, 'plan_id');
    await this.#whenReady();
    const doing = `read the audit log of plan ${describeValue(planId)}`;
    return (await query<LogRow>(this.#pool, doing, this.#sql.readLog, [planId])).rows;
  }

  async delete(planId: string): Promise<boolean> {
    this.#open();
    storable(planId, 'plan_id');
    await this.#whenReady();
    this.#cache.delete(planId);
    const gone = await query(this.#pool, `delete plan ${describeValue(planId)}`, this.#sql.deletePlan, [
      planId,
    ]);
    return (gone.rowCount ?? 0) > 0;
  }

  async readCheckpoints(planId: string): Promise<readonly Checkpoint[]> {
    this.#open();
    storable(planId, 'plan_id');
    await this.#whenReady();
    const doing = `read the checkpoints of plan ${describeValue(planId)}`;
    const found = await query<CheckpointRow>(this.#pool, doing, this.#sql.readCheckpoints, [planId]);
    return found.rows.map((r) => checkpointFromRow(planId, r));
  }

  async #insertCheckpoints(
    client: PoolClient,
    doing: string,
    planId: string,
    list: readonly Checkpoint[],
  ): Promise<void> {
    if (list.length === 0) return;
    await query(client, doing, this.#sql.insertCheckpoints, [
      planId,
      list.map((c) => c.size),
      list.map((c) => c.head),
      list.map((c) => c.ts),
      list.map((c) => c.signature ?? null),
    ]);
  }

  async pruneAuditLog(planId: string, throughSeq: number): Promise<number> {
    this.#open();
    storable(planId, 'plan_id');
    const through = pruneTarget(throughSeq);
    await this.#whenReady();
    const doing = `prune the audit log of plan ${describeValue(planId)}`;
    type Row = { anchored: number; removed: number };
    const row = (await query<Row>(this.#pool, doing, this.#sql.pruneEntries, [planId, through])).rows[0];
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
    const doing = `save the document of plan ${describeValue(doc.planId)}`;
    const sql = this.#sql;
    const values = [doc.planId, doc.phase, doc.body, doc.updatedAt];
    // One statement each way: the condition and the write cannot be separated by another writer.
    const saved =
      doc.expected === undefined
        ? await query<{ revision: string }>(this.#pool, doing, sql.saveDocument, values)
        : doc.expected === null
          ? await query<{ revision: string }>(this.#pool, doing, sql.createDocument, values)
          : await query<{ revision: string }>(this.#pool, doing, sql.replaceDocument, [
              ...values,
              doc.expected,
            ]);
    const revision = saved.rows[0]?.revision;
    if (revision === undefined) {
      const current = await query<{ revision: string }>(this.#pool, doing, sql.documentRevision, [
        doc.planId,
      ]);
      const found = current.rows[0]?.revision;
      throw documentConflict(doc, found === undefined ? null : Number(found));
    }
    return documentFromRow(
      { plan_id: doc.planId, phase: doc.phase, body: doc.body, updated_at: doc.updatedAt, revision },
      'PostgresStore',
    );
  }

  async getPlanDocument(planId: string): Promise<PlanDocument | null> {
    this.#open();
    storable(planId, 'plan_id');
    await this.#whenReady();
    const doing = `read the document of plan ${describeValue(planId)}`;
    const found = await query<DocumentRow>(this.#pool, doing, this.#sql.getDocument, [planId]);
    return found.rows[0] === undefined ? null : documentFromRow(found.rows[0], 'PostgresStore');
  }

  async listPlans(): Promise<PlanListing[]> {
    this.#open();
    await this.#whenReady();
    type Row = {
      plan_id: string;
      configured: boolean;
      phase: string | null;
      updated_at: string | null;
      revision: string | null;
    };
    const rows = (await query<Row>(this.#pool, 'list plans', this.#sql.listPlans, [])).rows;
    const documents = rows.flatMap((r) =>
      r.configured || r.phase === null || r.updated_at === null || r.revision === null
        ? []
        : [{ planId: r.plan_id, phase: r.phase, updatedAt: r.updated_at, revision: r.revision }],
    );
    return mergeListings(
      rows.filter((r) => r.configured).map((r) => r.plan_id),
      documents,
    );
  }

  /** Ends the pool when the store created it; a pool passed in is left to its owner. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // The updates already made run to the end first.
    while (this.#draining.size > 0) await Promise.all(this.#draining);
    this.#cache.clear();
    if (this.#ownsPool) await this.#pool.end();
  }

  #open(): void {
    if (this.#closed) throw new GuardrailError('STORE_CLOSED', 'the store is closed');
  }

  /** Checks the schema version once, before the first use; a failed check is tried again next time. */
  #whenReady(): Promise<void> {
    if (this.#ready === undefined) {
      const doing = 'check its schema version';
      const ready = (async () => {
        let current: number;
        try {
          current = await this.#version(this.#pool, doing);
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

  async #version(client: Pool | PoolClient, doing: string): Promise<number> {
    const found = await query<{ v: number }>(
      client,
      doing,
      `SELECT COALESCE(MAX(version), 0)::integer AS v FROM ${this.#t.version}`,
    );
    const version = found.rows[0]?.v ?? 0;
    if (version > POSTGRES_SCHEMA_VERSION) {
      throw new GuardrailError(
        'STORE_SCHEMA_TOO_NEW',
        `the PostgreSQL schema ${this.schema} (prefix ${this.tablePrefix}) is at version ${version}, newer than version ${POSTGRES_SCHEMA_VERSION} of this leash; upgrade leash`,
      );
    }
    return version;
  }

  /**
   * Runs `body` in a transaction on one pooled connection: COMMIT when it resolves, ROLLBACK when it
   * throws. Errors of `body` come out unchanged; database errors come out as `STORE_UNAVAILABLE`.
   */
  async #transaction<T>(doing: string, body: (client: PoolClient) => Promise<T>): Promise<T> {
    let held: Held;
    try {
      held = await hold(this.#pool);
    } catch (error) {
      throw unavailable(doing, error);
    }
    const client = held.client;
    let broken: Error | undefined;
    try {
      try {
        await client.query('BEGIN');
      } catch (error) {
        broken = asError(error);
        throw unavailable(doing, error);
      }
      let result: T;
      try {
        result = await body(client);
      } catch (error) {
        try {
          await client.query('ROLLBACK');
        } catch (rollback) {
          broken = asError(rollback);
        }
        throw error;
      }
      try {
        await client.query('COMMIT');
      } catch (error) {
        broken = asError(error);
        throw outcomeUnknown(doing, error);
      }
      return result;
    } finally {
      // A connection whose state is unknown is closed rather than handed to the next caller.
      held.release(broken);
    }
  }
}

/** An update waiting for its turn among the updates of its plan through one store. */
interface Pending {
  readonly change: PlanChangeFn<unknown>;
  readonly approvalId: string | undefined;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The changes of one or more updates of a plan, decided one after the other from `base`, to write in
 * one statement. Changes `base.guardrails` in place as it goes: whoever holds `base` drops it unless the
 * write succeeds. A null `base` (a plan not configured) takes no change that writes.
 */
class ChangeBatch {
  readonly #planId: string;
  readonly #base: CachedPlan | null;
  readonly #checkpoints: CheckpointPolicy | null;
  #guardrails: AutonomyGuardrails | null;
  #changed = false;
  #head: ChainHead | null;
  readonly #entries: [string[], number[], string[], number[], string[], string[]] = [[], [], [], [], [], []];
  readonly #checkpointed: [number[], string[], string[], (string | null)[]] = [[], [], [], []];

  constructor(planId: string, base: CachedPlan | null, checkpoints: CheckpointPolicy | null) {
    this.#planId = planId;
    this.#base = base;
    this.#checkpoints = checkpoints;
    this.#guardrails = base?.guardrails ?? null;
    this.#head = base?.head ?? null;
  }

  /** The guardrails after the changes added so far: what the next update is decided from. */
  get guardrails(): AutonomyGuardrails | null {
    return this.#guardrails;
  }

  /** Whether there is anything for the plan's row: new guardrails or entries. */
  get writes(): boolean {
    return this.#changed || this.#entries[0].length > 0;
  }

  /**
   * Adds a change, all or nothing: when it throws, the batch is as it was. Resolves with what it writes
   * (its approvals are for the caller to write), or null for a change that writes nothing.
   */
  add(out: PlanChange<unknown>): Write<ChainedRecord[]> | null {
    const head = this.#head;
    const w = decideWrite(this.#planId, this.#guardrails, out, {
      record: (entries) => chainEntries(this.#planId, head, entries, this.#checkpoints),
    });
    if (w === null) return null;
    if (w.guardrails !== undefined) {
      this.#guardrails = w.guardrails;
      this.#changed = true;
    }
    const [eventTypes, timestamps, details, seqs, prevs, hashes] = this.#entries;
    const [sizes, heads, ts, signatures] = this.#checkpointed;
    for (const { audit: a, chained: c, checkpoint: cp } of w.entries) {
      eventTypes.push(a.eventType);
      timestamps.push(a.timestamp);
      details.push(JSON.stringify(a.details));
      seqs.push(c.seq);
      prevs.push(c.prev);
      hashes.push(c.hash);
      this.#head = { seq: c.seq, hash: c.hash };
      if (cp === null) continue;
      sizes.push(cp.size);
      heads.push(cp.head);
      ts.push(cp.ts);
      signatures.push(cp.signature ?? null);
    }
    return w;
  }

  /**
   * Writes the batch with `sql` (the store's writeChanges) if the row still has the base's version.
   * Resolves with the plan as written, or null when the row has another version or is gone.
   */
  async write(client: Pool | PoolClient, doing: string, sql: string): Promise<CachedPlan | null> {
    const base = this.#base as CachedPlan; // a batch that writes has a base
    const head = this.#entries[0].length > 0 ? this.#head : null;
    const found = await query<{ version: string }>(client, doing, sql, [
      this.#planId,
      ...this.#entries,
      this.#changed ? JSON.stringify((this.#guardrails as AutonomyGuardrails).toJSON()) : null,
      base.version,
      head?.seq ?? null,
      head?.hash ?? null,
      ...this.#checkpointed,
    ]);
    const version = found.rows[0]?.version;
    return version === undefined
      ? null
      : { guardrails: this.#guardrails as AutonomyGuardrails, head: this.#head, version };
  }
}

/** The SQL of one store, built once from its table names. */
interface Statements {
  readonly lockPlan: string;
  readonly lockApproval: string;
  readonly writeChanges: string;
  readonly upsertApproval: string;
  readonly insertApproval: string;
  readonly getApproval: string;
  readonly listAll: string;
  readonly listByPlan: string;
  readonly newestOfDecision: string;
  readonly listByStatus: string;
  readonly listByPlanAndStatus: string;
  readonly upsertPlan: string;
  readonly setWindow: string;
  readonly insertEntries: string;
  readonly readLog: string;
  readonly getPlan: string;
  readonly getGuardrails: string;
  readonly deletePlan: string;
  readonly saveDocument: string;
  readonly createDocument: string;
  readonly replaceDocument: string;
  readonly documentRevision: string;
  readonly getDocument: string;
  readonly listPlans: string;
  readonly insertCheckpoints: string;
  readonly readCheckpoints: string;
  readonly pruneEntries: string;
}

function statements(t: Tables): Statements {
  const order = 'ORDER BY requested_at COLLATE "C", id COLLATE "C"';
  const insertApproval = `INSERT INTO ${t.approvals} (${APPROVAL_COLUMNS})
    VALUES (${approvalPlaceholders('$')})`;
  return {
    lockPlan: `SELECT guardrails, head_seq::text AS head_seq, head_hash, version::text AS version
      FROM ${t.plans} WHERE plan_id = $1 FOR UPDATE`,
    lockApproval: `SELECT ${APPROVAL_COLUMNS} FROM ${t.approvals} WHERE id = $1 AND plan_id = $2 FOR UPDATE`,
    // One statement, atomic without a transaction: the row's new guardrails and head, the entries and
    // the checkpoints are written only if the row still has version $9 (the trigger then gives it a new
    // one). Null leaves the guardrails or the head as they are.
    writeChanges: `WITH written AS (
        UPDATE ${t.plans} SET guardrails = COALESCE($8::text, guardrails),
          head_seq = COALESCE($10::bigint, head_seq), head_hash = COALESCE($11::text, head_hash)
        WHERE plan_id = $1 AND version = $9::bigint
        RETURNING version::text AS version),
      entry AS (INSERT INTO ${t.entries} (plan_id, seq, event_type, ts, details, prev, hash)
        SELECT $1, e.seq, e.event_type, e.ts, e.details, e.prev, e.hash
        FROM written, unnest($2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::text[], $7::text[])
          AS e(event_type, ts, details, seq, prev, hash)),
      checkpoint AS (INSERT INTO ${t.checkpoints} (plan_id, size, head, ts, signature)
        SELECT $1, c.size, c.head, c.ts, c.signature
        FROM written, unnest($12::bigint[], $13::text[], $14::text[], $15::text[]) AS c(size, head, ts, signature))
      SELECT version FROM written`,
    // Replaces an approval of this plan only: a row of another plan is left alone and nothing returned.
    upsertApproval: `${insertApproval}
      ON CONFLICT (id) DO UPDATE SET ${APPROVAL_UPDATES}
      WHERE ${t.approvals}.plan_id = EXCLUDED.plan_id
      RETURNING id`,
    insertApproval: `${insertApproval} ON CONFLICT (id) DO NOTHING RETURNING id`,
    getApproval: `SELECT ${APPROVAL_COLUMNS} FROM ${t.approvals} WHERE id = $1`,
    listAll: `SELECT ${APPROVAL_COLUMNS} FROM ${t.approvals} ${order}`,
    listByPlan: `SELECT ${APPROVAL_COLUMNS} FROM ${t.approvals} WHERE plan_id = $1 ${order}`,
    newestOfDecision: `SELECT ${APPROVAL_COLUMNS} FROM ${t.approvals} WHERE plan_id = $1 AND decision_id = $2
      ORDER BY requested_at COLLATE "C" DESC, id COLLATE "C" DESC LIMIT 1`,
    listByStatus: `SELECT ${APPROVAL_COLUMNS} FROM ${t.approvals} WHERE status = $1 ${order}`,
    listByPlanAndStatus: `SELECT ${APPROVAL_COLUMNS} FROM ${t.approvals}
      WHERE plan_id = $1 AND status = $2 ${order}`,
    upsertPlan: `INSERT INTO ${t.plans} (plan_id, guardrails) VALUES ($1, $2)
      ON CONFLICT (plan_id) DO UPDATE SET guardrails = EXCLUDED.guardrails`,
    setWindow: `UPDATE ${t.plans} SET window_start = $2, head_seq = $3, head_hash = $4 WHERE plan_id = $1`,
    insertEntries: `INSERT INTO ${t.entries} (plan_id, seq, event_type, ts, details, prev, hash)
      SELECT $1, e.seq, e.event_type, e.ts, e.details, e.prev, e.hash
      FROM unnest($2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::text[], $7::text[])
        AS e(event_type, ts, details, seq, prev, hash)`,
    // Ordered by the bigint column, not by the text it is read as.
    readLog: `SELECT e.seq::text AS seq, e.prev, e.hash, e.event_type, e.ts::text AS ts, e.details
      FROM ${t.entries} e WHERE e.plan_id = $1 ORDER BY e.seq`,
    getPlan: `SELECT p.guardrails,
        (SELECT json_agg(json_build_array(e.seq, e.event_type, e.ts, e.details) ORDER BY e.seq)
           FROM (SELECT seq, event_type, ts, details FROM ${t.entries}
                  WHERE plan_id = p.plan_id AND seq >= p.window_start
                  ORDER BY seq DESC LIMIT $2) e) AS entries
      FROM ${t.plans} p WHERE p.plan_id = $1`,
    getGuardrails: `SELECT guardrails FROM ${t.plans} WHERE plan_id = $1`,
    // The plan and its document go in one statement; entries and approvals cascade with the plan.
    deletePlan: `WITH d AS (DELETE FROM ${t.documents} WHERE plan_id = $1 RETURNING 1),
        p AS (DELETE FROM ${t.plans} WHERE plan_id = $1 RETURNING 1)
      SELECT 1 FROM d UNION ALL SELECT 1 FROM p`,
    saveDocument: `INSERT INTO ${t.documents} (plan_id, phase, body, updated_at, revision)
      VALUES ($1, $2, $3, $4, 1)
      ON CONFLICT (plan_id) DO UPDATE SET phase = EXCLUDED.phase, body = EXCLUDED.body,
        updated_at = EXCLUDED.updated_at, revision = ${t.documents}.revision + 1
      RETURNING revision::text AS revision`,
    createDocument: `INSERT INTO ${t.documents} (plan_id, phase, body, updated_at, revision)
      VALUES ($1, $2, $3, $4, 1) ON CONFLICT (plan_id) DO NOTHING RETURNING revision::text AS revision`,
    replaceDocument: `UPDATE ${t.documents} SET phase = $2, body = $3, updated_at = $4, revision = revision + 1
      WHERE plan_id = $1 AND revision = $5 RETURNING revision::text AS revision`,
    documentRevision: `SELECT revision::text AS revision FROM ${t.documents} WHERE plan_id = $1`,
    getDocument: `SELECT plan_id, phase, body, updated_at, revision::text AS revision
      FROM ${t.documents} WHERE plan_id = $1`,
    insertCheckpoints: `INSERT INTO ${t.checkpoints} (plan_id, size, head, ts, signature)
      SELECT $1, c.size, c.head, c.ts, c.signature
      FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[]) AS c(size, head, ts, signature)`,
    // Deletes only when a checkpoint of the last pruned entry anchors what is kept; says which it was.
    pruneEntries: `WITH anchor AS (SELECT 1 FROM ${t.checkpoints} WHERE plan_id = $1 AND size = $2),
        gone AS (DELETE FROM ${t.entries} WHERE plan_id = $1 AND seq <= $2 AND EXISTS (SELECT 1 FROM anchor)
          RETURNING 1)
      SELECT (SELECT count(*) FROM anchor)::integer AS anchored, (SELECT count(*) FROM gone)::integer AS removed`,
    readCheckpoints: `SELECT size::text AS size, head, ts, signature FROM ${t.checkpoints}
      WHERE plan_id = $1 ORDER BY ${t.checkpoints}.size`,
    listPlans: `SELECT plan_id, true AS configured, NULL AS phase, NULL AS updated_at, NULL AS revision
        FROM ${t.plans}
      UNION ALL
      SELECT plan_id, false, phase, updated_at, revision::text FROM ${t.documents}`,
  };
}

// Named statements are parsed and planned once per connection. Names come from the text, so stores
// with different tables, or two copies of this module, sharing one pool never clash.
const statementNames = new Map<string, string>();

function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `leash_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
    statementNames.set(text, name);
  }
  return name;
}

/** Runs one statement; with values it is a named (prepared) statement. Failures become `STORE_UNAVAILABLE`. */
async function query<R extends QueryResultRow = QueryResultRow>(
  client: Pool | PoolClient,
  doing: string,
  text: string,
  values?: unknown[],
): Promise<QueryResult<R>> {
  const config: QueryConfig = values === undefined ? { text } : { name: statementName(text), text, values };
  try {
    return await client.query<R>(config);
  } catch (error) {
    throw unavailable(doing, error);
  }
}

/** A connection the store took from its pool, until it gives it back. */
interface Held {
  readonly client: PoolClient;
  /** Gives the connection back: closed, not reused, when `broken` is given or it emitted 'error'. */
  release(broken?: Error): void;
}

/**
 * Takes a connection from `pool` with a listener for its 'error' event until it is given back. A
 * connection the server ends while the store holds it (a restart, a failover, `pg_terminate_backend`)
 * emits 'error', which would end the process when unheard; the statement in flight rejects anyway.
 */
async function hold(pool: Pool): Promise<Held> {
  const client = await pool.connect();
  let lost: Error | undefined;
  const onError = (error: Error): void => {
    lost ??= error;
  };
  client.on('error', onError);
  return {
    client,
    release(broken) {
      client.off('error', onError);
      client.release(broken ?? lost);
    },
  };
}

/** The error for a failure of the database: the store fails closed, keeping the cause. */
function unavailable(doing: string, error: unknown): GuardrailError {
  if (isGuardrailError(error)) return error;
  const e = error as { message?: unknown; code?: unknown } | null;
  const message = typeof e?.message === 'string' && e.message !== '' ? e.message : describeValue(error);
  const code = typeof e?.code === 'string' && !message.includes(e.code) ? ` (${e.code})` : '';
  const hint = e?.code === '42P01' || e?.code === '3F000' ? '; call migrate() first' : '';
  return new GuardrailError(
    'STORE_UNAVAILABLE',
    `PostgresStore could not ${doing}: ${message}${code}${hint}`,
    { cause: error },
  );
}

/** The error for a change the database was lost with: it may or may not have been committed. */
function outcomeUnknown(doing: string, error: unknown): StoreOutcomeUnknownError {
  const message = unavailable(doing, error).message;
  return new StoreOutcomeUnknownError(`${message} (the change may or may not have been committed)`, {
    cause: error,
  });
}

/** The error a database failure was reported with, before {@link unavailable} wrapped it. */
function causeOf(error: unknown): unknown {
  return isGuardrailError(error) && error.cause !== undefined ? error.cause : error;
}

/** True when the server answered with an error (an SQLSTATE): the statement did not commit. */
function answered(error: unknown): boolean {
  // The server's errors (pg's DatabaseError) carry a severity; a lost connection's do not.
  const e = causeOf(error) as { severity?: unknown; code?: unknown } | null;
  return typeof e?.severity === 'string' && typeof e.code === 'string';
}

/** True for a server error that ends the session (FATAL, PANIC): its connection is closing. */
function endsSession(error: unknown): boolean {
  const severity = (causeOf(error) as { severity?: unknown } | null)?.severity;
  return severity === 'FATAL' || severity === 'PANIC';
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function notMigrated(version: number): GuardrailError {
  return new GuardrailError(
    'STORE_NOT_MIGRATED',
    `the PostgreSQL schema is at version ${version}, older than version ${POSTGRES_SCHEMA_VERSION}; call migrate() first`,
  );
}

function identifier(value: unknown, field: string): string {
  if (typeof value !== 'string' || !IDENTIFIER.test(value)) {
    invalid(field, `a lower-case SQL identifier matching ${IDENTIFIER}`, value);
  }
  return value;
}

function quote(name: string): string {
  return `"${name}"`;
}

function storable(value: unknown, field: string): void {
  if (typeof value !== 'string' || value.includes('\0') || LONE_SURROGATE.test(value)) {
    invalid(field, 'a string of well-formed Unicode without NUL', value);
  }
}

function corrupt(what: string, cause: unknown): GuardrailError {
  const why = cause instanceof Error ? `: ${cause.message}` : '';
  return new GuardrailError('STORE_CORRUPT', `PostgresStore holds unreadable ${what}${why}`, { cause });
}

/** The plan's row as an update or a put locks it, with its last entry. */
interface LockedPlan {
  guardrails: string;
  head_seq: string;
  head_hash: string | null;
  version: string;
}

interface LogRow {
  seq: string;
  prev: string | null;
  hash: string | null;
  event_type: string;
  ts: string;
  details: string;
}

/** The last entry of a locked plan, or null for an empty log. */
function headOf(planId: string, row: LockedPlan): { seq: number; hash: string } | null {
  const seq = Number(row.head_seq);
  if (seq === 0) return null;
  if (!Number.isSafeInteger(seq) || typeof row.head_hash !== 'string') {
    throw corrupt(
      `audit log for plan ${describeValue(planId)}`,
      new Error(`its last entry (seq ${row.head_seq}) has no hash to chain to`),
    );
  }
  return { seq, hash: row.head_hash };
}

/** {@link headOf}, or undefined when the row's head cannot be read. */
function headOrUndefined(planId: string, row: LockedPlan): ChainHead | null | undefined {
  try {
    return headOf(planId, row);
  } catch {
    return undefined;
  }
}

/** A stored entry of the log as it is: a tampered prev or hash is for the verifier to find. */
function chainedOf(planId: string, row: LogRow): ChainedEntry {
  return chainedFromRow(planId, storedRow(row), 'PostgresStore');
}

function storedRow(row: LogRow): StoredLogRow {
  return {
    seq: Number(row.seq),
    eventType: row.event_type,
    timestamp: Number(row.ts),
    details: row.details,
    prev: row.prev,
    hash: row.hash,
  };
}

/** Chains, plan by plan in seq order, the rows written before the log was a hash chain. */
async function chainUnchainedRows(client: PoolClient, doing: string, t: Tables): Promise<void> {
  const rows = await query<LogRow & { plan_id: string }>(
    client,
    doing,
    `SELECT e.plan_id, e.seq::text AS seq, e.event_type, e.ts::text AS ts, e.details
       FROM ${t.entries} e ORDER BY e.plan_id, e.seq`,
  );
  let plan: string | undefined;
  let head: ChainedEntry | null = null;
  for (const row of rows.rows) {
    if (row.plan_id !== plan) {
      plan = row.plan_id;
      head = null;
    }
    head = chainEntry(row.plan_id, head, entryFromRow(row.plan_id, storedRow(row), 'PostgresStore'));
    await query(
      client,
      doing,
      `UPDATE ${t.entries} SET seq = $1, prev = $2, hash = $3 WHERE plan_id = $4 AND seq = $5`,
      [head.seq, head.prev, head.hash, row.plan_id, row.seq],
    );
    await query(client, doing, `UPDATE ${t.plans} SET head_seq = $1, head_hash = $2 WHERE plan_id = $3`, [
      head.seq,
      head.hash,
      row.plan_id,
    ]);
  }
}

/** The entries of a plan's trail, as `getPlan` aggregates them: [seq, event_type, ts, details] each. */
function readEntries(planId: string, rows: unknown): AuditEntry[] {
  if (rows === null) return [];
  if (!Array.isArray(rows)) throw corrupt(`audit entries for plan ${describeValue(planId)}`, null);
  return rows.map((row: unknown) => {
    const [seq, eventType, timestamp, details] = Array.isArray(row) ? row : [];
    return entryFromRow(planId, { seq: Number(seq), eventType, timestamp, details }, 'PostgresStore');
  });
}

function readApproval(row: ApprovalRow): Approval {
  return approvalFromRow(row, 'PostgresStore');
}
