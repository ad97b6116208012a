import type { Pool, PoolClient } from 'pg';
import type { AuditEntry } from '../../audit/AuditEntry.js';
import type { Checkpoint } from '../../audit/chain.js';
import { describeValue } from '../../errors.js';
import type { CheckpointPolicy } from '../checkpoints.js';
import { chainEntries, type ChainedRecord } from '../decide.js';
import { query, transaction } from './connection.js';
import { headOf, type LockedPlan } from './rows.js';
import type { Statements } from './statements.js';

// A plan put with a trail: its row, and the trail's entries appended to its log as new chained entries.

/**
 * Stores plan `planId`'s guardrails (`json`) and appends `kept` to its log, chained after what is
 * there, with the checkpoints due; the plan's trail then starts at the first of them.
 */
export async function putWithTrail(
  pool: Pool,
  sql: Statements,
  checkpoints: CheckpointPolicy | null,
  planId: string,
  json: string,
  kept: readonly AuditEntry[],
): Promise<void> {
  const doing = `store plan ${describeValue(planId)}`;
  await transaction(pool, doing, async (client) => {
    // The upsert locks the plan's row, so the head read next stays the head until the commit.
    await query(client, doing, sql.upsertPlan, [planId, json]);
    const locked = (await query<LockedPlan>(client, doing, sql.lockPlan, [planId])).rows[0];
    let head = locked === undefined ? null : headOf(planId, locked);
    const windowStart = (head?.seq ?? 0) + 1;
    if (kept.length > 0) {
      const records = chainEntries(planId, head, kept, checkpoints);
      await query(client, doing, sql.insertEntries, [
        planId,
        kept.map((e) => e.eventType),
        kept.map((e) => e.timestamp),
        kept.map((e) => JSON.stringify(e.details)),
        records.map((r) => r.chained.seq),
        records.map((r) => r.chained.prev),
        records.map((r) => r.chained.hash),
      ]);
      const due = records.flatMap((r) => (r.checkpoint === null ? [] : [r.checkpoint]));
      await insertCheckpoints(client, sql, doing, planId, due);
      head = (records.at(-1) as ChainedRecord).chained;
    }
    await query(client, doing, sql.setWindow, [planId, windowStart, head?.seq ?? 0, head?.hash ?? null]);
  });
}

async function insertCheckpoints(
  client: PoolClient,
  sql: Statements,
  doing: string,
  planId: string,
  list: readonly Checkpoint[],
): Promise<void> {
  if (list.length === 0) return;
  await query(client, doing, sql.insertCheckpoints, [
    planId,
    list.map((c) => c.size),
    list.map((c) => c.head),
    list.map((c) => c.ts),
    list.map((c) => c.signature ?? null),
  ]);
}
