import { APPROVAL_COLUMNS, APPROVAL_UPDATES, approvalPlaceholders } from '../sql/approvalRows.js';
import type { Tables } from './schema.js';

// The SQL of the PostgreSQL store.

/** The SQL of one store, built once from its table names. */
export interface Statements {
  readonly lockPlan: string;
  readonly lockApproval: string;
  readonly writeChanges: string;
  readonly writeOneEntry: string;
  readonly lockPlans: string;
  readonly writePlans: string;
  readonly upsertApproval: string;
  readonly insertApproval: string;
  readonly getApproval: string;
  readonly listAll: string;
  readonly listByPlan: string;
  readonly newestOfDecision: string;
  readonly listByStatus: string;
  readonly listByPlanAndStatus: string;
  readonly upsertPlan: string;
  readonly insertPlan: string;
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

export function statements(t: Tables): Statements {
  // A write decided from cached caps (the plan had none to take from) holds only while they are unchanged.
  const capsUnchanged = (param: string) =>
    `AND (${param}::bigint IS NULL OR ${param}::bigint = (SELECT version FROM ${t.capsVersion}))`;
  const order = 'ORDER BY requested_at COLLATE "C", id COLLATE "C"';
  const insertApproval = `INSERT INTO ${t.approvals} (${APPROVAL_COLUMNS})
    VALUES (${approvalPlaceholders('$')})`;
  return {
    lockPlan: `SELECT guardrails, head_seq::text AS head_seq, head_hash, version::text AS version
      FROM ${t.plans} WHERE plan_id = $1 FOR UPDATE`,
    lockApproval: `SELECT ${APPROVAL_COLUMNS} FROM ${t.approvals} WHERE id = $1 AND plan_id = $2 FOR UPDATE`,
    // One statement, atomic without a transaction: the row's new guardrails and head, the entries and
    // the checkpoints are written only if the row still has version $9 (the trigger then gives it a new
    // one) and, when $16 is given, the spend caps version $16. Null leaves the guardrails or the head as
    // they are.
    writeChanges: `WITH written AS (
        UPDATE ${t.plans} SET guardrails = COALESCE($8::text, guardrails),
          head_seq = COALESCE($10::bigint, head_seq), head_hash = COALESCE($11::text, head_hash)
        WHERE plan_id = $1 AND version = $9::bigint ${capsUnchanged('$16')}
        RETURNING version::text AS version),
      entry AS (INSERT INTO ${t.entries} (plan_id, seq, event_type, ts, details, prev, hash)
        SELECT $1, e.seq, e.event_type, e.ts, e.details, e.prev, e.hash
        FROM written, unnest($2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::text[], $7::text[])
          AS e(event_type, ts, details, seq, prev, hash)),
      checkpoint AS (INSERT INTO ${t.checkpoints} (plan_id, size, head, ts, signature)
        SELECT $1, c.size, c.head, c.ts, c.signature
        FROM written, unnest($12::bigint[], $13::text[], $14::text[], $15::text[]) AS c(size, head, ts, signature))
      SELECT version FROM written`,
    // writeChanges for the write a check makes most: one entry and no checkpoint. Its values go as
    // parameters of their own: unnesting arrays made the statement take about as long again as the
    // plain UPDATE of a row (see docs/benchmarks.md).
    writeOneEntry: `WITH written AS (
        UPDATE ${t.plans} SET guardrails = COALESCE($7::text, guardrails), head_seq = $5::bigint, head_hash = $6::text
        WHERE plan_id = $1 AND version = $8::bigint ${capsUnchanged('$10')}
        RETURNING version::text AS version),
      entry AS (INSERT INTO ${t.entries} (plan_id, seq, event_type, ts, details, prev, hash)
        SELECT $1, $5::bigint, $2::text, $3::bigint, $4::text, $9::text, $6::text FROM written)
      SELECT version FROM written`,
    // The rows of several plans, locked in one order so that two transactions wait rather than deadlock.
    lockPlans: `SELECT plan_id, guardrails, head_seq::text AS head_seq, head_hash, version::text AS version
      FROM ${t.plans} WHERE plan_id = ANY($1::text[]) ORDER BY plan_id COLLATE "C" FOR UPDATE`,
    // Several plans' changes and the cap windows they wrote, in one statement of a transaction that
    // holds their rows: null guardrails or head leave them as they are.
    writePlans: `WITH written AS (
        UPDATE ${t.plans} p SET guardrails = COALESCE(u.guardrails, p.guardrails),
          head_seq = COALESCE(u.head_seq, p.head_seq), head_hash = COALESCE(u.head_hash, p.head_hash)
        FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[]) AS u(plan_id, guardrails, head_seq, head_hash)
        WHERE p.plan_id = u.plan_id
        RETURNING p.plan_id, p.version::text AS version),
      entry AS (INSERT INTO ${t.entries} (plan_id, seq, event_type, ts, details, prev, hash)
        SELECT e.plan_id, e.seq, e.event_type, e.ts, e.details, e.prev, e.hash
        FROM unnest($5::text[], $6::text[], $7::bigint[], $8::text[], $9::bigint[], $10::text[], $11::text[])
          AS e(plan_id, event_type, ts, details, seq, prev, hash)),
      checkpoint AS (INSERT INTO ${t.checkpoints} (plan_id, size, head, ts, signature)
        SELECT * FROM unnest($12::text[], $13::bigint[], $14::text[], $15::text[], $16::text[])),
      win AS (UPDATE ${t.capWindows} c SET state = w.state
        FROM unnest($17::text[], $18::text[], $19::text[], $20::text[]) AS w(cap_id, scope, window_key, state)
        WHERE c.cap_id = w.cap_id AND c.scope = w.scope AND c.window_key = w.window_key)
      SELECT plan_id, version FROM written`,
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
    insertPlan: `INSERT INTO ${t.plans} (plan_id, guardrails) VALUES ($1, $2) ON CONFLICT (plan_id) DO NOTHING`,
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
