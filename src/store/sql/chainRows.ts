import type { AuditEntry } from '../../audit/AuditEntry.js';
import { chainEntry, type ChainedEntry } from '../../audit/chain.js';

/**
 * The rows of a log written before it was a hash chain (ordered by plan, then seq), each with its entry
 * chained after the one before it in its plan: what the chain migration of either SQL store writes back.
 */
export function chainInOrder<R extends { readonly plan_id: string }>(
  rows: readonly R[],
  entryOf: (row: R) => AuditEntry,
): { readonly row: R; readonly chained: ChainedEntry }[] {
  let plan: string | undefined;
  let head: ChainedEntry | null = null;
  return rows.map((row) => {
    if (row.plan_id !== plan) {
      plan = row.plan_id;
      head = null;
    }
    head = chainEntry(row.plan_id, head, entryOf(row));
    return { row, chained: head };
  });
}
