import type Database from 'better-sqlite3';
import type { AuditEntry } from '../../audit/AuditEntry.js';
import { type ChainedEntry } from '../../audit/chain.js';
import { type Approval, type PlanDocument } from '../GuardrailStore.js';
import {
  APPROVAL_COLUMNS,
  APPROVAL_UPDATES,
  approvalFromRow,
  approvalPlaceholders,
  type ApprovalRow,
  type ApprovalRowValues,
} from '../sql/approvalRows.js';
import { chainedFromRow, entryFromRow, type LogRow } from '../sql/auditRows.js';
import { documentFromRow, type DocumentRow } from '../planDocuments.js';
import { type ChainHead } from '../planCache.js';
import { type CheckpointRow } from '../sql/rows.js';

// The statements the SQLite store runs, and the rows they read.

const APPROVAL_VALUES = approvalPlaceholders('?');

export interface AuditRow {
  seq: number;
  event_type: string;
  timestamp: number;
  details: string;
}

export interface ChainedRow extends AuditRow {
  prev: string | null;
  hash: string | null;
}

export type Head = ChainHead;

type Stmt<P extends unknown[], R = unknown> = Database.Statement<P, R>;

/** Every statement the store runs, prepared once after {@link SqliteStore.migrate}. */
export interface Statements {
  selectPlan: Stmt<[string], string>;
  upsertPlan: Stmt<[string, string]>;
  insertPlan: Stmt<[string, string]>;
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

/** Prepares every statement the store runs on `db`, whose tables are named with prefix `p`. */
export function prepareStatements(db: Database.Database, p: string): Statements {
  const listed = (where: string) => `SELECT * FROM ${p}approvals ${where} ORDER BY requested_at, id`;
  return {
    selectPlan: db.prepare<[string], string>(`SELECT guardrails FROM ${p}plans WHERE plan_id = ?`).pluck(),
    upsertPlan: db.prepare(
      `INSERT INTO ${p}plans (plan_id, guardrails) VALUES (?, ?) ` +
        'ON CONFLICT (plan_id) DO UPDATE SET guardrails = excluded.guardrails',
    ),
    insertPlan: db.prepare(
      `INSERT INTO ${p}plans (plan_id, guardrails) VALUES (?, ?) ON CONFLICT (plan_id) DO NOTHING`,
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

export function readEntry(planId: string, row: AuditRow): AuditEntry {
  return entryFromRow(planId, storedRow(row), 'SqliteStore');
}

/** A stored entry of the log as it is: a tampered prev or hash is for the verifier to find. */
export function chainedOf(planId: string, row: ChainedRow): ChainedEntry {
  return chainedFromRow(planId, storedRow(row), 'SqliteStore');
}

export function storedRow(row: AuditRow & Partial<ChainedRow>): LogRow {
  return {
    seq: row.seq,
    eventType: row.event_type,
    timestamp: row.timestamp,
    details: row.details,
    prev: row.prev ?? null,
    hash: row.hash ?? null,
  };
}

export function documentOf(row: DocumentRow): PlanDocument {
  return documentFromRow(row, 'SqliteStore');
}

/** The rows of the approvals `filter` asks for, oldest request first. */
export function listedApprovals(
  s: Statements,
  filter: { readonly planId?: string; readonly status?: string } | undefined,
): ApprovalRow[] {
  const planId = filter?.planId;
  const status = filter?.status;
  if (planId === undefined) return status === undefined ? s.listAll.all() : s.listByStatus.all(status);
  return status === undefined ? s.listByPlan.all(planId) : s.listByPlanAndStatus.all(planId, status);
}

export function approvalOf(row: ApprovalRow): Approval {
  return approvalFromRow(row, 'SqliteStore');
}
