import { AuditEntry } from '../../audit/AuditEntry.js';
import { type ChainedEntry } from '../../audit/chain.js';
import { describeValue } from '../../errors.js';
import { type Approval } from '../GuardrailStore.js';
import { approvalFromRow, type ApprovalRow } from '../sql/approvalRows.js';
import { chainedFromRow, entryFromRow, type LogRow as StoredLogRow } from '../sql/auditRows.js';
import { type ChainHead } from '../planCache.js';
import { corrupt } from './connection.js';

// The rows the PostgreSQL store reads: plans as locked, log rows, approvals.

export interface LockedPlan {
  guardrails: string;
  head_seq: string;
  head_hash: string | null;
  version: string;
}

export interface LogRow {
  seq: string;
  prev: string | null;
  hash: string | null;
  event_type: string;
  ts: string;
  details: string;
}

/** The last entry of a locked plan, or null for an empty log. */
export function headOf(planId: string, row: LockedPlan): { seq: number; hash: string } | null {
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
export function headOrUndefined(planId: string, row: LockedPlan): ChainHead | null | undefined {
  try {
    return headOf(planId, row);
  } catch {
    return undefined;
  }
}

/** A stored entry of the log as it is: a tampered prev or hash is for the verifier to find. */
export function chainedOf(planId: string, row: LogRow): ChainedEntry {
  return chainedFromRow(planId, storedRow(row), 'PostgresStore');
}

export function storedRow(row: LogRow): StoredLogRow {
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
export function readEntries(planId: string, rows: unknown): AuditEntry[] {
  if (rows === null) return [];
  if (!Array.isArray(rows)) throw corrupt(`audit entries for plan ${describeValue(planId)}`, null);
  return rows.map((row: unknown) => {
    const [seq, eventType, timestamp, details] = Array.isArray(row) ? row : [];
    return entryFromRow(planId, { seq: Number(seq), eventType, timestamp, details }, 'PostgresStore');
  });
}

export function readApproval(row: ApprovalRow): Approval {
  return approvalFromRow(row, 'PostgresStore');
}
