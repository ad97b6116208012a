import type { Pool, PoolClient } from 'pg';
import { GuardrailError } from '../../errors.js';
import { entryFromRow } from '../sql/auditRows.js';
import { storedRow, type LogRow } from './rows.js';
import { query, quote } from './connection.js';
import { chainInOrder } from '../sql/chainRows.js';

// The PostgreSQL schema: its tables, its migrations, and the rows they chain.

export interface Tables {
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
  readonly spendCaps: string;
  readonly capWindows: string;
  /** One row: a number that changes whenever the caps do, which a write decided from cached caps checks. */
  readonly capsVersion: string;
  readonly principals: string;
  readonly tokens: string;
  readonly notifications: string;
  readonly prefix: string;
}

/** Each migration, in order: migration n brings the schema to version n. */
// First key of the advisory lock that serializes migrations ("leas").
export const MIGRATION_LOCK = 0x6c656173;

export const MIGRATIONS: readonly ((t: Tables) => readonly string[])[] = [
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
  // Spend caps that span plans, and their windows: one row per cap, label values and calendar window.
  (t) => [
    `CREATE TABLE ${t.spendCaps} (id text PRIMARY KEY, definition text NOT NULL)`,
    `CREATE TABLE ${t.capWindows} (
       cap_id text NOT NULL,
       scope text NOT NULL,
       window_key text NOT NULL,
       state text NOT NULL,
       PRIMARY KEY (cap_id, scope, window_key)
     )`,
    `CREATE TABLE ${t.capsVersion} (one boolean PRIMARY KEY CHECK (one), version bigint NOT NULL)`,
    `INSERT INTO ${t.capsVersion} (one, version) VALUES (true, 0)`,
  ],
  // The people who decide, their personal tokens (as hashes), an approval's rule, votes and decider (as
  // JSON text), and the outbox of notifications, whose seq orders deliveries. Times are canonical
  // ISO-8601 text, as the approvals' are: compared as text (COLLATE "C"), they compare as times.
  (t) => [
    `ALTER TABLE ${t.approvals} ADD COLUMN review text`,
    `CREATE TABLE ${t.principals} (
       id text PRIMARY KEY,
       name text NOT NULL,
       roles text NOT NULL,
       email text,
       created_at text NOT NULL,
       revoked_at text
     )`,
    `CREATE TABLE ${t.tokens} (
       id text PRIMARY KEY,
       principal_id text NOT NULL,
       hash text NOT NULL UNIQUE,
       label text,
       created_at text NOT NULL,
       expires_at text,
       revoked_at text
     )`,
    `CREATE INDEX ${quote(`${t.prefix}tokens_principal_idx`)} ON ${t.tokens} (principal_id)`,
    `CREATE TABLE ${t.notifications} (
       seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
       id text NOT NULL UNIQUE,
       target text NOT NULL,
       event text NOT NULL,
       payload text NOT NULL,
       created_at text NOT NULL,
       status text NOT NULL CHECK (status IN ('queued', 'delivered', 'failed')),
       attempts integer NOT NULL DEFAULT 0,
       next_attempt_at text NOT NULL,
       lease_until text,
       last_error text,
       delivered_at text
     )`,
    `CREATE INDEX ${quote(`${t.prefix}notifications_queued_idx`)}
       ON ${t.notifications} (target, seq) WHERE status = 'queued'`,
    `CREATE INDEX ${quote(`${t.prefix}notifications_status_idx`)} ON ${t.notifications} (status, seq)`,
  ],
];

/** The schema version this code reads and writes; `migrate()` brings a database up to it. */
export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.length;

/** The migration that added the hash chain: rows it finds are chained right after it runs. */
export const CHAIN_MIGRATION = 2;

export async function chainUnchainedRows(client: PoolClient, doing: string, t: Tables): Promise<void> {
  const rows = await query<LogRow & { plan_id: string }>(
    client,
    doing,
    `SELECT e.plan_id, e.seq::text AS seq, e.event_type, e.ts::text AS ts, e.details
       FROM ${t.entries} e ORDER BY e.plan_id, e.seq`,
  );
  const entryOf = (row: LogRow & { plan_id: string }) =>
    entryFromRow(row.plan_id, storedRow(row), 'PostgresStore');
  for (const { row, chained: head } of chainInOrder(rows.rows, entryOf)) {
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

export function notMigrated(version: number): GuardrailError {
  return new GuardrailError(
    'STORE_NOT_MIGRATED',
    `the PostgreSQL schema is at version ${version}, older than version ${POSTGRES_SCHEMA_VERSION}; call migrate() first`,
  );
}

/** The tables of a store in `schema` (a checked identifier) with names starting with `prefix`. */
export function tablesOf(schema: string, prefix: string): Tables {
  const s = quote(schema);
  const table = (name: string) => `${s}.${quote(prefix + name)}`;
  return {
    schema: s,
    prefix,
    plans: table('plans'),
    entries: table('audit_entries'),
    approvals: table('approvals'),
    documents: table('plan_documents'),
    checkpoints: table('checkpoints'),
    version: table('schema_version'),
    planVersions: table('plan_versions'),
    newPlanVersion: table('new_plan_version'),
    spendCaps: table('spend_caps'),
    capWindows: table('cap_windows'),
    capsVersion: table('caps_version'),
    principals: table('principals'),
    tokens: table('tokens'),
    notifications: table('notifications'),
  };
}

/**
 * Creates the schema named `schema` and the tables `t`, or brings them up to
 * {@link POSTGRES_SCHEMA_VERSION}, in the transaction of `client`; concurrent migrations of the schema,
 * from any process, wait for each other.
 */
export async function migrateSchema(
  client: PoolClient,
  doing: string,
  schema: string,
  t: Tables,
): Promise<void> {
  // Per schema, not per prefix: two prefixes migrating at once would both create the schema.
  await query(client, doing, 'SELECT pg_advisory_xact_lock($1, hashtext($2))', [MIGRATION_LOCK, schema]);
  const ns = await query(client, doing, 'SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
  if (ns.rowCount === 0) await query(client, doing, `CREATE SCHEMA ${t.schema}`);
  await query(
    client,
    doing,
    `CREATE TABLE IF NOT EXISTS ${t.version} (
       version integer PRIMARY KEY,
       applied_at timestamptz NOT NULL DEFAULT now()
     )`,
  );
  const current = await schemaVersion(client, doing, t, schema);
  for (let v = current + 1; v <= MIGRATIONS.length; v++) {
    for (const statement of (MIGRATIONS[v - 1] as (t: Tables) => readonly string[])(t)) {
      await query(client, doing, statement);
    }
    if (v === CHAIN_MIGRATION) await chainUnchainedRows(client, doing, t);
    await query(client, doing, `INSERT INTO ${t.version} (version) VALUES ($1)`, [v]);
  }
}

/**
 * The schema version the tables `t` (in the schema named `schema`) are at.
 * @throws GuardrailError `STORE_SCHEMA_TOO_NEW` when it is newer than this code knows
 */
export async function schemaVersion(
  client: Pool | PoolClient,
  doing: string,
  t: Tables,
  schema: string,
): Promise<number> {
  const found = await query<{ v: number }>(
    client,
    doing,
    `SELECT COALESCE(MAX(version), 0)::integer AS v FROM ${t.version}`,
  );
  const version = found.rows[0]?.v ?? 0;
  if (version > POSTGRES_SCHEMA_VERSION) {
    throw new GuardrailError(
      'STORE_SCHEMA_TOO_NEW',
      `the PostgreSQL schema ${schema} (prefix ${t.prefix}) is at version ${version}, newer than version ${POSTGRES_SCHEMA_VERSION} of this leash; upgrade leash`,
    );
  }
  return version;
}
