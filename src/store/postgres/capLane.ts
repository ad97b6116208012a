import type { PoolClient } from 'pg';
import { describeValue, GuardrailError } from '../../errors.js';
import { approvalRowValues } from '../sql/approvalRows.js';
import type { Statements } from './statements.js';
import type { AutonomyGuardrails } from '../../guardrails/AutonomyGuardrails.js';
import { refKey, type CapRef } from '../../guardrails/capLedger.js';
import { capWindowsFor, CapSession, type CapSlot, type CapWindows } from '../caps.js';
import { reportCommit, type ChainedRecord, type Write } from '../decide.js';
import type { Approval, CapWrite } from '../GuardrailStore.js';
import { MAX_UPDATES_PER_WRITE, type CachedPlan } from '../planCache.js';
import { windowText } from '../sql/capRows.js';
import { guardrailsFromRow } from '../sql/rows.js';
import { ChangeBatch, type BatchParts, type Pending } from './batch.js';
import { query, transaction } from './connection.js';
import { headOf, type LockedPlan } from './rows.js';
import type { UpdatesOf } from './updates.js';

// The updates that read spend caps, of many plans at once: a cap shared by many plans is one row every
// one of their updates must lock, so updates that come while a transaction holds it wait, and go
// together in the next one (a group commit): one lock of their plans, one of the windows, one write.

interface Waiting {
  readonly planId: string;
  readonly pending: Pending;
}

/** An update of the transaction, once its plan is read. */
interface Item extends Waiting {
  readonly locked: CachedPlan | null;
  readonly current: AutonomyGuardrails | null;
  readonly windows: CapWindows;
  batch?: ChangeBatch;
  /** The entries its change appends, kept for its `onCommit` only. */
  records?: readonly ChainedRecord[];
  /** The plan row's version once written. */
  written?: string;
  outcome?: { ok: true; result: unknown } | { ok: false; error: unknown };
}

export class CapLane {
  readonly #store: UpdatesOf;
  #waiting: Waiting[] = [];
  #running = false;

  constructor(store: UpdatesOf) {
    this.#store = store;
  }

  /**
   * Runs `pending` (an update of `planId` with `capsAt` and no approval) in the next transaction of the
   * lane; resolves or rejects as the update does. The caller sends at most one update of a plan at once.
   */
  run(planId: string, pending: Pending): void {
    this.#waiting.push({ planId, pending });
    if (this.#running) return;
    this.#running = true;
    void this.#drain();
  }

  async #drain(): Promise<void> {
    try {
      while (this.#waiting.length > 0) {
        const next = this.#waiting.splice(0, MAX_UPDATES_PER_WRITE);
        try {
          await this.#write(next);
        } catch (error) {
          for (const { planId, pending } of next) {
            this.#store.cache.delete(planId);
            pending.reject(error);
          }
        }
      }
    } finally {
      this.#running = false;
    }
  }

  /** One transaction for `waiting`: each update is decided in order, from what those before it left. */
  async #write(waiting: readonly Waiting[]): Promise<void> {
    const { sql, caps, cache, checkpoints } = this.#store;
    const doing =
      waiting.length === 1
        ? `update plan ${describeValue((waiting[0] as Waiting).planId)}`
        : `update ${waiting.length} plans`;
    const items = await transaction(this.#store.pool, doing, async (client) => {
      const ids = [...new Set(waiting.map((w) => w.planId))];
      const rows = new Map(
        (await query<LockedPlan & { plan_id: string }>(client, doing, sql.lockPlans, [ids])).rows.map((r) => [
          r.plan_id,
          r,
        ]),
      );
      const { caps: stored } = await caps.read(client);
      const items: Item[] = waiting.map((w) => {
        const row = rows.get(w.planId);
        const locked = row === undefined ? null : lockedOf(w.planId, row);
        const current = locked?.guardrails ?? null;
        return { ...w, locked, current, windows: capWindowsFor(stored, current, w.pending.capsAt as number) };
      });
      const states = await caps.lock(client, merged(items.map((i) => i.windows)));
      const session = new CapSession((ref) => states.get(refKey(ref)));
      for (const item of items) {
        try {
          const view = session.view(item.windows, item.pending.capsAt as number);
          const out = item.pending.change(item.current, null, view);
          const batch = new ChangeBatch(item.planId, item.locked, checkpoints);
          const w = batch.add(out, view) as Write<ChainedRecord[]> | null;
          if (w !== null) {
            // Its approvals first: one refused leaves nothing of the update kept.
            await writeApprovals(client, doing, sql, w);
            session.keep(w.caps);
            item.batch = batch;
            if (item.pending.onCommit !== undefined) item.records = w.entries;
          }
          item.outcome = { ok: true, result: out.result };
        } catch (error) {
          item.outcome = { ok: false, error };
        }
      }
      await writeAll(client, doing, sql.writePlans, items, session.written);
      return items;
    });
    for (const item of items) {
      const outcome = item.outcome as NonNullable<Item['outcome']>;
      if (!outcome.ok) {
        cache.delete(item.planId);
        item.pending.reject(outcome.error);
        continue;
      }
      // A batch that wrote is kept with the row's new version; one whose version did not come back is
      // dropped (its guardrails were changed in place), as is a plan that is not there.
      const kept = !item.batch?.writes
        ? item.locked
        : item.written === undefined
          ? null
          : item.batch.writtenAs(item.written);
      if (kept === null) cache.delete(item.planId);
      else cache.set(item.planId, kept);
      reportCommit(item.pending.onCommit, item.records);
      item.pending.resolve(outcome.result);
    }
  }
}

/**
 * Writes the approvals an update's change replaces or adds, in the lane's transaction; refuses (throws)
 * one of another plan, or a new one whose id is taken, having written nothing of it.
 */
async function writeApprovals(
  client: PoolClient,
  doing: string,
  sql: Statements,
  { approval, newApproval }: Write<ChainedRecord[]>,
): Promise<void> {
  if (approval === undefined && newApproval === undefined) return;
  // Within a savepoint, so that a refused one takes back the other.
  await query(client, doing, 'SAVEPOINT leash_approvals');
  try {
    await approvalRows(client, doing, sql, approval, newApproval);
  } catch (error) {
    await query(client, doing, 'ROLLBACK TO SAVEPOINT leash_approvals');
    throw error;
  }
  await query(client, doing, 'RELEASE SAVEPOINT leash_approvals');
}

async function approvalRows(
  client: PoolClient,
  doing: string,
  sql: Statements,
  approval: Approval | undefined,
  newApproval: Approval | undefined,
): Promise<void> {
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
}

/** The plan as its locked row holds it. */
function lockedOf(planId: string, row: LockedPlan): CachedPlan {
  return {
    guardrails: guardrailsFromRow(planId, row.guardrails, 'PostgresStore'),
    head: headOf(planId, row),
    version: row.version,
  };
}

/** The windows of several updates as one set to lock: each slot and ref once. */
function merged(all: readonly CapWindows[]): CapWindows {
  const slots = new Map<string, CapSlot>();
  const refs = new Map<string, CapRef>();
  for (const w of all) {
    for (const s of w.slots) slots.set(refKey(s.ref), s);
    for (const r of w.refs) refs.set(refKey(r), r);
  }
  return { slots: [...slots.values()], refs: [...refs.values()], caps: all[0]?.caps ?? [] };
}

/** Writes every item's batch and the windows, in one statement; notes each plan's new version. */
async function writeAll(
  client: PoolClient,
  doing: string,
  text: string,
  items: Item[],
  windows: readonly CapWrite[],
): Promise<void> {
  const parts: BatchParts[] = [];
  for (const item of items) if (item.batch?.writes) parts.push(item.batch.parts());
  if (parts.length === 0) return;
  const entries = parts.flatMap((p) => p.entries[0].map((_, i) => [p.planId, ...p.entries.map((c) => c[i])]));
  const checkpoints = parts.flatMap((p) =>
    p.checkpoints[0].map((_, i) => [p.planId, ...p.checkpoints.map((c) => c[i])]),
  );
  const column = (rows: unknown[][], n: number) => rows.map((r) => r[n]);
  const found = await query<{ plan_id: string; version: string }>(client, doing, text, [
    parts.map((p) => p.planId),
    parts.map((p) => p.guardrails),
    parts.map((p) => p.head?.seq ?? null),
    parts.map((p) => p.head?.hash ?? null),
    ...[0, 1, 2, 3, 4, 5, 6].map((n) => column(entries, n)),
    ...[0, 1, 2, 3, 4].map((n) => column(checkpoints, n)),
    windows.map((w) => w.ref.cap),
    windows.map((w) => w.ref.scope),
    windows.map((w) => w.ref.window),
    windows.map((w) => windowText(w.state)),
  ]);
  const versions = new Map(found.rows.map((r) => [r.plan_id, r.version]));
  for (const item of items) {
    const version = item.batch?.writes ? versions.get(item.planId) : undefined;
    if (version !== undefined) item.written = version;
  }
}
