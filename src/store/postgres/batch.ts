import type { QueryResult } from 'pg';
import { AutonomyGuardrails } from '../../guardrails/AutonomyGuardrails.js';
import { type CapView, type PlanChange, type PlanChangeFn, type UpdateOptions } from '../GuardrailStore.js';
import { type CheckpointPolicy } from '../checkpoints.js';
import { chainEntries, decideWrite, type ChainedRecord, type Write } from '../decide.js';
import { type CachedPlan, type ChainHead } from '../planCache.js';
import { type Statements } from './statements.js';

/** Sends a batch's statement with its values. */
export type Send = (text: string, values: unknown[]) => Promise<QueryResult<{ version: string }>>;

// The changes of a plan's updates, decided one after the other and written in one statement.

/** See {@link ChangeBatch.parts}. */
export interface BatchParts {
  readonly planId: string;
  readonly guardrails: string | null;
  readonly head: ChainHead | null;
  /** event types, timestamps, details, seqs, prevs, hashes */
  readonly entries: readonly [string[], number[], string[], number[], string[], string[]];
  /** sizes, heads, timestamps, signatures */
  readonly checkpoints: readonly [number[], string[], string[], (string | null)[]];
}

/** An update waiting for its turn among the updates of its plan through one store. */
export interface Pending {
  readonly change: PlanChangeFn<unknown>;
  readonly approvalId: string | undefined;
  /** Reads the spend caps as of this time (see `UpdateOptions.capsAt`). */
  readonly capsAt: number | undefined;
  /** Told the entries the update appended, once they are committed (see `UpdateOptions.onCommit`). */
  readonly onCommit: UpdateOptions['onCommit'];
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The changes of one or more updates of a plan, decided one after the other from `base`, to write in
 * one statement. Changes `base.guardrails` in place as it goes: whoever holds `base` drops it unless the
 * write succeeds. A null `base` (a plan not configured) takes no change that writes.
 */
export class ChangeBatch {
  readonly #planId: string;
  readonly #base: CachedPlan | null;
  readonly #checkpoints: CheckpointPolicy | null;
  #guardrails: AutonomyGuardrails | null;
  #changed = false;
  #head: ChainHead | null;
  readonly #entries: [string[], number[], string[], number[], string[], string[]] = [[], [], [], [], [], []];
  readonly #checkpointed: [number[], string[], string[], (string | null)[]] = [[], [], [], []];
  /**
   * The version of the spend caps a change of the batch was decided from, when one was given a view
   * of cached caps: the write holds only while they are unchanged.
   */
  capsVersion: string | null = null;

  constructor(planId: string, base: CachedPlan | null, checkpoints: CheckpointPolicy | null) {
    this.#planId = planId;
    this.#base = base;
    this.#checkpoints = checkpoints;
    this.#guardrails = base?.guardrails ?? null;
    this.#head = base?.head ?? null;
  }

  /** The guardrails after the changes added so far: what the next update is decided from. */
  get guardrails(): AutonomyGuardrails | null {
    return this.#guardrails;
  }

  /** Whether there is anything for the plan's row: new guardrails or entries. */
  get writes(): boolean {
    return this.#changed || this.#entries[0].length > 0;
  }

  /**
   * Adds a change, all or nothing: when it throws, the batch is as it was. Resolves with what it writes
   * (its approvals are for the caller to write), or null for a change that writes nothing.
   */
  add(out: PlanChange<unknown>, capView: CapView | null = null): Write<ChainedRecord[]> | null {
    const head = this.#head;
    const w = decideWrite(this.#planId, this.#guardrails, out, {
      record: (entries) => chainEntries(this.#planId, head, entries, this.#checkpoints),
      capView,
    });
    if (w === null) return null;
    if (w.guardrails !== undefined) {
      this.#guardrails = w.guardrails;
      this.#changed = true;
    }
    const [eventTypes, timestamps, details, seqs, prevs, hashes] = this.#entries;
    const [sizes, heads, ts, signatures] = this.#checkpointed;
    for (const { audit: a, chained: c, checkpoint: cp } of w.entries) {
      eventTypes.push(a.eventType);
      timestamps.push(a.timestamp);
      details.push(JSON.stringify(a.details));
      seqs.push(c.seq);
      prevs.push(c.prev);
      hashes.push(c.hash);
      this.#head = { seq: c.seq, hash: c.hash };
      if (cp === null) continue;
      sizes.push(cp.size);
      heads.push(cp.head);
      ts.push(cp.ts);
      signatures.push(cp.signature ?? null);
    }
    return w;
  }

  /**
   * Writes the batch if the row still has the base's version: one entry and no checkpoint with the
   * store's writeOneEntry, anything else with its writeChanges, sent by `send` (in a transaction, or on
   * a connection of its own). Resolves with the plan as written, or null when the row has another
   * version or is gone.
   */
  async write(sql: Statements, send: Send): Promise<CachedPlan | null> {
    const found = await send(...this.#statement(sql));
    const version = found.rows[0]?.version;
    return version === undefined
      ? null
      : { guardrails: this.#guardrails as AutonomyGuardrails, head: this.#head, version };
  }

  /**
   * What the batch writes, for a statement that writes several plans' batches together: the plan's new
   * guardrails (null: unchanged), its new head (null: unchanged), and its entries and checkpoints as
   * columns.
   */
  parts(): BatchParts {
    const guardrails = this.#changed
      ? JSON.stringify((this.#guardrails as AutonomyGuardrails).toJSON())
      : null;
    const head = this.#entries[0].length > 0 ? this.#head : null;
    return {
      planId: this.#planId,
      guardrails,
      head,
      entries: this.#entries,
      checkpoints: this.#checkpointed,
    };
  }

  /** The plan as the batch leaves it once written, with the row's new version. */
  writtenAs(version: string): CachedPlan {
    return { guardrails: this.#guardrails as AutonomyGuardrails, head: this.#head, version };
  }

  /** The statement that writes the batch, and its values. */
  #statement(sql: Statements): [text: string, values: unknown[]] {
    const version = (this.#base as CachedPlan).version; // a batch that writes has a base
    const guardrails = this.#changed
      ? JSON.stringify((this.#guardrails as AutonomyGuardrails).toJSON())
      : null;
    const [eventTypes, timestamps, details, seqs, prevs, hashes] = this.#entries;
    if (eventTypes.length === 1 && this.#checkpointed[0].length === 0) {
      const one = [this.#planId, eventTypes[0], timestamps[0], details[0], seqs[0], hashes[0]]; // $1-$6
      return [sql.writeOneEntry, [...one, guardrails, version, prevs[0], this.capsVersion]]; // $7-$10
    }
    const head = eventTypes.length > 0 ? this.#head : null;
    const values = [
      this.#planId,
      ...this.#entries,
      guardrails,
      version,
      head?.seq ?? null,
      head?.hash ?? null,
    ];
    return [sql.writeChanges, [...values, ...this.#checkpointed, this.capsVersion]];
  }
}
