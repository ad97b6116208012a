import type Database from 'better-sqlite3';
import { GuardrailError } from '../../errors.js';
import { chainInOrder } from '../sql/chainRows.js';
import { readEntry, type ChainedRow } from './statements.js';

// The SQLite schema: its migrations, and how a database is brought up to date.

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
  // Spend caps that span plans, and their windows: one row per cap, label values and calendar window.
  (p) => `
    CREATE TABLE ${p}spend_caps (
      id TEXT NOT NULL PRIMARY KEY,
      definition TEXT NOT NULL
    );
    CREATE TABLE ${p}cap_windows (
      cap_id TEXT NOT NULL,
      scope TEXT NOT NULL,
      window_key TEXT NOT NULL,
      state TEXT NOT NULL,
      PRIMARY KEY (cap_id, scope, window_key)
    ) WITHOUT ROWID;
  `,
  // The people who decide, their personal tokens (as hashes), an approval's rule, votes and decider, and
  // the outbox of notifications. seq orders deliveries: an INTEGER PRIMARY KEY is one more than the
  // largest in the table, and no notification is ever removed, so none is handed out twice.
  (p) => `
    ALTER TABLE ${p}approvals ADD COLUMN review TEXT;
    CREATE TABLE ${p}principals (
      id TEXT NOT NULL PRIMARY KEY,
      name TEXT NOT NULL,
      roles TEXT NOT NULL,
      email TEXT,
      created_at TEXT NOT NULL,
      revoked_at TEXT
    );
    CREATE TABLE ${p}tokens (
      id TEXT NOT NULL PRIMARY KEY,
      principal_id TEXT NOT NULL,
      hash TEXT NOT NULL UNIQUE,
      label TEXT,
      created_at TEXT NOT NULL,
      expires_at TEXT,
      revoked_at TEXT
    );
    CREATE INDEX ${p}tokens_by_principal ON ${p}tokens (principal_id, created_at, id);
    CREATE TABLE ${p}notifications (
      seq INTEGER PRIMARY KEY,
      id TEXT NOT NULL UNIQUE,
      target TEXT NOT NULL,
      event TEXT NOT NULL,
      payload TEXT NOT NULL,
      created_at TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('queued', 'delivered', 'failed')),
      attempts INTEGER NOT NULL DEFAULT 0,
      next_attempt_at TEXT NOT NULL,
      lease_until TEXT,
      last_error TEXT,
      delivered_at TEXT
    );
    CREATE INDEX ${p}notifications_queued ON ${p}notifications (target, seq) WHERE status = 'queued';
    CREATE INDEX ${p}notifications_by_status ON ${p}notifications (status, seq);
  `,
];

/** The migration that added the hash chain: rows it finds are chained right after it runs. */
const CHAIN_MIGRATION = 2;

/** The schema version this code writes and reads. */
export const SQLITE_SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Brings the schema of the tables named with prefix `p` up to {@link SQLITE_SCHEMA_VERSION}, in one
 * immediate transaction for all the steps: a database that is up to date is left alone.
 * @throws GuardrailError `STORE_SCHEMA_TOO_NEW` when the database was migrated by a newer version
 */
export function migrateSchema(db: Database.Database, p: string): void {
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
  for (const { row, chained: c } of chainInOrder(rows, (r) => readEntry(r.plan_id, r))) {
    write.run(c.seq, c.prev, c.hash, row.plan_id, row.seq);
  }
}
