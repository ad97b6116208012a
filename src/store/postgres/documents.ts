import type { Pool } from 'pg';
import { describeValue } from '../../errors.js';
import type { PlanDocument, PlanListing } from '../GuardrailStore.js';
import { documentConflict, documentFromRow, mergeListings, type CheckedDocument } from '../planDocuments.js';
import { query, write } from './connection.js';
import type { Statements } from './statements.js';

// Plan documents in PostgreSQL: saved, conditionally or not, in one statement; listed with the plans.

/** Saves a checked document (see `savePlanDocument`); a condition that does not hold is a conflict. */
export async function saveDocument(pool: Pool, sql: Statements, doc: CheckedDocument): Promise<PlanDocument> {
  const doing = `save the document of plan ${describeValue(doc.planId)}`;
  const values = [doc.planId, doc.phase, doc.body, doc.updatedAt];
  // One statement each way: the condition and the write cannot be separated by another writer.
  const saved =
    doc.expected === undefined
      ? await write<{ revision: string }>(pool, doing, sql.saveDocument, values)
      : doc.expected === null
        ? await write<{ revision: string }>(pool, doing, sql.createDocument, values)
        : await write<{ revision: string }>(pool, doing, sql.replaceDocument, [...values, doc.expected]);
  const revision = saved.rows[0]?.revision;
  if (revision === undefined) {
    const current = await query<{ revision: string }>(pool, doing, sql.documentRevision, [doc.planId]);
    const found = current.rows[0]?.revision;
    throw documentConflict(doc, found === undefined ? null : Number(found));
  }
  return documentFromRow(
    { plan_id: doc.planId, phase: doc.phase, body: doc.body, updated_at: doc.updatedAt, revision },
    'PostgresStore',
  );
}

/** Every plan the store knows, configured or with a document, in plan id order. */
export async function listPlans(pool: Pool, sql: Statements): Promise<PlanListing[]> {
  type Row = {
    plan_id: string;
    configured: boolean;
    phase: string | null;
    updated_at: string | null;
    revision: string | null;
  };
  const rows = (await query<Row>(pool, 'list plans', sql.listPlans, [])).rows;
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
