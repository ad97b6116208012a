import type { Pool } from 'pg';
import {
  describeValue,
  errorText,
  GuardrailError,
  isGuardrailError,
  isStoreOutcomeUnknownError,
} from '../../errors.js';
import { type Approval, type CapView, type PlanChangeFn, type UpdateOptions } from '../GuardrailStore.js';
import { refKey } from '../../guardrails/capLedger.js';
import { capWindowsFor, CapSession } from '../caps.js';
import type { PostgresCaps } from './caps.js';
import { CapLane } from './capLane.js';
import { approvalRowValues, type ApprovalRow } from '../sql/approvalRows.js';
import { type CheckpointPolicy } from '../checkpoints.js';
import { guardrailsFromRow } from '../sql/rows.js';
import { reportCommit, writesState, type ChainedRecord, type Write } from '../decide.js';
import { MAX_UPDATES_PER_WRITE, PlanCache, type CachedPlan } from '../planCache.js';
import { ChangeBatch, type Pending, type Send } from './batch.js';
import { answered, query, transaction, write } from './connection.js';
import { headOf, headOrUndefined, readApproval, type LockedPlan } from './rows.js';
import { type Statements } from './statements.js';

// The updates of the PostgreSQL store: queued per plan, written together when they can be, each in a
// transaction that locks the plan's row when they cannot.

/** What the updates need of their store. */
export interface UpdatesOf {
  readonly pool: Pool;
  readonly sql: Statements;
  readonly cache: PlanCache;
  readonly checkpoints: CheckpointPolicy | null;
  readonly caps: PostgresCaps;
  /** Resolves once the schema is known to be up to date. */
  whenReady(): Promise<void>;
}

/**
 * Runs a store's updates: those of one plan one after the other, in the order they came. Updates that
 * can be decided from the plan as the store last wrote it go together in one statement; any other, and
 * every update after another writer changed the plan, runs in a transaction that locks the plan's row.
 */
export class PlanUpdates {
  readonly #store: UpdatesOf;
  /** Per plan, the updates that wait for the one running (the first). */
  readonly #queues = new Map<string, Pending[]>();
  /** The runs of those queues going on. */
  readonly #draining = new Set<Promise<void>>();
  /** Where updates that read spend caps go, with those of other plans. */
  readonly #lane: CapLane;

  constructor(store: UpdatesOf) {
    this.#store = store;
    this.#lane = new CapLane(store);
  }

  /**
   * Queues `change` behind the updates of the plan through this store that came before it, and runs
   * them in the order they came.
   */
  update<T>(
    planId: string,
    change: PlanChangeFn<T>,
    approvalId: string | undefined,
    capsAt: number | undefined,
    onCommit: UpdateOptions['onCommit'],
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const pending: Pending = {
        change,
        approvalId,
        capsAt,
        onCommit,
        resolve: resolve as (value: unknown) => void,
        reject,
      };
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

  /** Resolves once every update made so far has run. */
  async drained(): Promise<void> {
    while (this.#draining.size > 0) await Promise.all(this.#draining);
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
          await this.#store.whenReady();
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
        if (pending.capsAt !== undefined && pending.approvalId === undefined) {
          const error = await this.#inLane(planId, pending);
          if (isGuardrailError(error) && error.code === 'STORE_UNAVAILABLE' && !answered(error))
            refuseAll(error);
          continue;
        }
        try {
          pending.resolve(await this.#updateLocked(planId, pending));
        } catch (error) {
          pending.reject(error);
          if (isGuardrailError(error) && error.code === 'STORE_UNAVAILABLE' && !answered(error)) {
            refuseAll(error);
          }
        }
      }
    } catch (error) {
      // Not expected; but no update is left waiting for ever.
      this.#store.cache.delete(planId);
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
    const cached = queue[0]?.approvalId === undefined ? this.#store.cache.get(planId) : undefined;
    if (cached === undefined) return { settled: 0 };
    const batch = new ChangeBatch(planId, cached, this.#store.checkpoints);
    const results: unknown[] = [];
    // The entries of each update with onCommit, by its place in `results`: made only for those.
    let reports: (readonly ChainedRecord[])[] | undefined;
    const caps = this.#store.caps.cached;
    for (const pending of queue) {
      if (pending.approvalId !== undefined || results.length === MAX_UPDATES_PER_WRITE) break;
      let result: unknown;
      try {
        // Decided from the cached caps only when none of them applies to the plan, nor holds anything
        // of it: the write then holds only while the caps are unchanged. Any other goes locked.
        let view: CapView | null = null;
        if (pending.capsAt !== undefined) {
          if (caps === undefined) break;
          const windows = capWindowsFor(caps.caps, batch.guardrails, pending.capsAt);
          if (windows.refs.length > 0) break;
          view = new CapSession(() => undefined).view(windows, pending.capsAt);
          batch.capsVersion = caps.version;
        }
        const out = pending.change(batch.guardrails, null, view);
        // A change with an approval goes alone; one that writes nothing (add: null) is answered alone.
        if (out.approval !== undefined || out.newApproval !== undefined) break;
        const w = batch.add(out, view);
        if (w === null) break;
        if (pending.onCommit !== undefined) (reports ??= [])[results.length] = w.entries;
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
      this.#store.cache.delete(planId);
      for (const pending of queue.splice(0, results.length)) pending.reject(error);
    };
    let written: CachedPlan | null;
    try {
      written = await batch.write(this.#store.sql, (text, values) =>
        write(this.#store.pool, doing, text, values),
      );
    } catch (error) {
      refuse(error);
      // Not tried again one by one: without an answer from the server, the statement may have committed
      // (or, with no connection to be had, was not sent); the updates queued behind it are refused too.
      return answered(error) ? { settled: results.length } : { settled: results.length, lost: error };
    }
    if (written === null) {
      // Another writer changed the plan since: the cached guardrails were changed in place for nothing.
      this.#store.cache.delete(planId);
      return { settled: 0 };
    }
    this.#store.cache.set(planId, written);
    const settled = queue.splice(0, results.length);
    for (let i = 0; i < settled.length; i++) {
      const pending = settled[i] as Pending;
      reportCommit(pending.onCommit, reports?.[i]);
      pending.resolve(results[i]);
    }
    return { settled: settled.length };
  }

  /**
   * Runs an update with `capsAt` in the lane, with the updates of other plans waiting for the same
   * windows; resolves, once it is settled, with its error if it failed.
   */
  #inLane(planId: string, pending: Pending): Promise<unknown> {
    return new Promise((done) => {
      this.#lane.run(planId, {
        ...pending,
        resolve: (value) => {
          pending.resolve(value);
          done(undefined);
        },
        reject: (error) => {
          pending.reject(error);
          done(error);
        },
      });
    });
  }

  /**
   * One update in a transaction that locks the plan's row from the read to the commit, and, with
   * `capsAt`, the rows of the cap windows it reads.
   */
  async #updateLocked(planId: string, { change, approvalId, capsAt, onCommit }: Pending): Promise<unknown> {
    const doing = `update plan ${describeValue(planId)}`;
    const sql = this.#store.sql;
    let state: CachedPlan | null = null;
    let result: unknown;
    /** The entries the change appends, reported only once they are committed. */
    let records: readonly ChainedRecord[] | undefined;
    try {
      result = await transaction(this.#store.pool, doing, async (client) => {
        const row = (await query<LockedPlan>(client, doing, sql.lockPlan, [planId])).rows[0];
        const current = row === undefined ? null : guardrailsFromRow(planId, row.guardrails, 'PostgresStore');
        let wanted: Approval | null = null;
        // Approvals exist only for configured plans; the plan's lock already orders every change to them.
        if (current !== null && approvalId !== undefined) {
          const found = await query<ApprovalRow>(client, doing, sql.lockApproval, [approvalId, planId]);
          wanted = found.rows[0] === undefined ? null : readApproval(found.rows[0]);
        }
        let view: CapView | null = null;
        if (capsAt !== undefined) {
          const { caps } = await this.#store.caps.read(client);
          const windows = capWindowsFor(caps, current, capsAt);
          const states = await this.#store.caps.lock(client, windows);
          view = new CapSession((ref) => states.get(refKey(ref))).view(windows, capsAt);
        }
        const out = change(current, wanted, view);
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
        const batch = new ChangeBatch(planId, locked, this.#store.checkpoints);
        // Refuses a change of a plan that is not configured, or with another plan's approval.
        const { approval, newApproval, caps, entries } = batch.add(out, view) as Write<ChainedRecord[]>;
        const send: Send = (text, values) => query(client, doing, text, values);
        const written = batch.writes ? await batch.write(sql, send) : locked;
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
        await this.#store.caps.write(client, caps);
        if (newApproval !== undefined) {
          const added = await query(client, doing, sql.insertApproval, approvalRowValues(newApproval));
          if (added.rowCount === 0) {
            throw new GuardrailError('APPROVAL_ID_TAKEN', `approval id "${newApproval.id}" is already used`);
          }
        }
        state = written;
        records = entries;
        return out.result;
      });
    } catch (error) {
      this.#store.cache.delete(planId);
      throw error;
    }
    // Kept only now that the transaction has committed.
    if (state === null) this.#store.cache.delete(planId);
    else this.#store.cache.set(planId, state);
    reportCommit(onCommit, records);
    return result;
  }
}
