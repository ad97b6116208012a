import { z } from 'zod';
import type { AuditEntry } from '../../audit/AuditEntry.js';
import { AuditTrail } from '../../audit/AuditTrail.js';
import { chainEntry, type ChainedEntry, type Checkpoint } from '../../audit/chain.js';
import { GuardrailError, invalid } from '../../errors.js';
import type { AutonomyGuardrails } from '../../guardrails/AutonomyGuardrails.js';
import type {
  Approval,
  ApprovalStatus,
  CapView,
  CapWindowRecord,
  GuardrailStore,
  UpdateOptions,
  PlanChangeFn,
  PlanDocument,
  PlanDocumentInput,
  PlanListing,
  PlanRecord,
} from '../GuardrailStore.js';
import type { PersonalToken, Principal } from '../people.js';
import type {
  Notification,
  NotificationInput,
  NotificationOutcome,
  NotificationClaim,
  NotificationFilter,
} from '../notifications.js';
import { storedText } from '../fields.js';
import { tokenFilter } from '../peopleRecords.js';
import { MemoryApprovals } from './memoryApprovals.js';
import { MemoryPeople } from './memoryPeople.js';
import { MemoryOutbox } from './memoryNotifications.js';
import {
  checkpointDue,
  pruneTarget,
  STORE_OPTIONS,
  unanchoredPrune,
  type CheckpointOptions,
  type CheckpointPolicy,
} from '../checkpoints.js';
import { decideWrite, tellCommitted, type WriteSteps } from '../decide.js';
import { checkedCap } from '../caps.js';
import type { SpendCap } from '../../guardrails/caps.js';
import { MemoryCaps } from './memoryCaps.js';
import { parseOptions } from '../../validation.js';
import { checkDocument, documentFromRow, mergeListings, nextRevision } from '../planDocuments.js';

const memoryStoreOptions = z.object({
  ...STORE_OPTIONS,
  keepLog: z.boolean({ error: 'a boolean' }).default(true),
});

interface Entry {
  guardrails: AutonomyGuardrails;
  /** The newest `auditCapacity` entries of the log since the last put with a trail. */
  audit: AuditTrail;
  /** Every entry, oldest first: the whole log, seq 1..n. */
  readonly log: AuditEntry[];
  /**
   * The log's first entries, chained. Chaining (a SHA-256 per entry) is done when the log is read, not on
   * every check (in one process nothing but this code can reach the entries between the two), or when an
   * update's `onCommit` asks for its entries as chained.
   */
  readonly chained: ChainedEntry[];
  /** Checkpoints of the chained part of the log. */
  readonly checkpoints: Checkpoint[];
}

/**
 * Keeps everything in this process's memory. Atomic because a change runs from read to write without
 * yielding to the event loop. Lost when the process ends: use a durable store to keep state.
 */
export class MemoryStore implements GuardrailStore {
  readonly auditCapacity: number;
  /** Whether every entry is kept for readAuditLog, or only the bounded window. */
  readonly keepLog: boolean;
  readonly #checkpoints: CheckpointPolicy | null;
  readonly #plans = new Map<string, Entry>();
  readonly #caps = new MemoryCaps();
  readonly #people = new MemoryPeople();
  readonly #outbox = new MemoryOutbox();
  readonly #approvals = new MemoryApprovals();
  /** Saved as JSON text, as the durable stores keep them, so a caller's later change cannot reach them. */
  readonly #documents = new Map<
    string,
    { phase: string; body: string; updatedAt: string; revision: number }
  >();
  #closed = false;

  /**
   * `keepLog: false` keeps only the window of the newest `auditCapacity` entries per plan: memory stays
   * bounded in a long-running process and no entry outlives the window, but there is no durable log to
   * read or verify (readAuditLog refuses) and no chain for an update's `onCommit` to report, which is
   * never called. The default keeps every entry, as the durable stores do.
   * `checkpoints` makes it checkpoint the log every `every` entries, as the durable stores do; here they
   * are made (and signed) when the log is read, from the entries' own times, so they are the same.
   */
  constructor(options?: { auditCapacity?: number; keepLog?: boolean; checkpoints?: CheckpointOptions }) {
    const o = parseOptions(memoryStoreOptions, options);
    this.auditCapacity = o.auditCapacity;
    this.keepLog = o.keepLog;
    this.#checkpoints = o.checkpoints;
    if (o.checkpoints !== null && !o.keepLog)
      invalid('checkpoints', 'absent when keepLog is false', options?.checkpoints);
  }

  /** How this store keeps a change's entries (as they are), and checks its approval ids. */
  readonly #steps: WriteSteps<readonly AuditEntry[]> = {
    capView: null,
    record: (entries) => entries,
    claim: (approval, newApproval) => this.#approvals.claim(approval, newApproval),
  };

  // Not `async`: an async frame would add microtask hops to the hottest path of every check.
  update<T>(planId: string, change: PlanChangeFn<T>, options?: UpdateOptions): Promise<T> {
    try {
      this.#open();
      const entry = this.#plans.get(planId);
      const wanted = options?.approvalId === undefined ? undefined : this.#approvals.get(options.approvalId);
      const stored = entry?.guardrails ?? null;
      const caps = options?.capsAt === undefined ? null : this.#caps.open(stored, options.capsAt);
      const out = change(stored, wanted?.planId === planId ? wanted : null, caps?.view ?? null);
      const steps = caps === null ? this.#steps : this.#withCaps(caps.view);
      const write = decideWrite(planId, stored, out, steps);
      if (write === null) return Promise.resolve(out.result);
      if (caps !== null) this.#caps.commit(write.caps);
      const plan = entry as Entry; // a write is decided only for a configured plan
      const approval = write.approval ?? write.newApproval;
      if (write.guardrails !== undefined) plan.guardrails = write.guardrails;
      if (approval !== undefined) this.#approvals.keep(approval);
      for (const audit of write.entries) {
        if (this.keepLog) plan.log.push(audit);
        plan.audit.add(audit);
      }
      // Chained now only for a caller who asks: otherwise when the log is read, off the hot path.
      if (options?.onCommit !== undefined && this.keepLog && write.entries.length > 0) {
        tellCommitted(options.onCommit, this.#chain(planId, plan).slice(-write.entries.length));
      }
      return Promise.resolve(out.result);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** {@link #steps}, for a change given `view`. */
  #withCaps(view: CapView): WriteSteps<readonly AuditEntry[]> {
    return { ...this.#steps, capView: view };
  }

  async putCaps(caps: readonly SpendCap[]): Promise<void> {
    this.#open();
    this.#caps.put(caps.map((c, i) => checkedCap(c, `caps[${i}]`)));
  }

  async deleteCap(id: string): Promise<boolean> {
    this.#open();
    return this.#caps.delete(id);
  }

  async listCaps(): Promise<SpendCap[]> {
    this.#open();
    return this.#caps.list();
  }

  async listCapWindows(filter?: { readonly capId?: string }): Promise<CapWindowRecord[]> {
    this.#open();
    return this.#caps.windows(filter?.capId);
  }

  async getApproval(id: string): Promise<Approval | null> {
    this.#open();
    return this.#approvals.get(id) ?? null;
  }

  async listApprovals(filter?: {
    readonly planId?: string;
    readonly status?: ApprovalStatus;
  }): Promise<Approval[]> {
    this.#open();
    return this.#approvals.list(filter);
  }

  // Not `async`: it is asked before every guarded call.
  findApproval(planId: string, decisionId: string): Promise<Approval | null> {
    try {
      this.#open();
      return Promise.resolve(this.#approvals.newest(planId, decisionId));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async put(planId: string, guardrails: AutonomyGuardrails, audit?: AuditTrail): Promise<void> {
    this.#open();
    const existing = this.#plans.get(planId);
    const log = existing?.log ?? [];
    let window = existing?.audit ?? new AuditTrail({ maxEntries: this.auditCapacity });
    if (audit !== undefined) {
      window = audit.withCapacity(this.auditCapacity);
      if (this.keepLog) log.push(...window.entries);
    }
    const chained = existing?.chained ?? [];
    const checkpoints = existing?.checkpoints ?? [];
    this.#plans.set(planId, { guardrails: guardrails.clone(), audit: window, log, chained, checkpoints });
  }

  async create(planId: string, guardrails: AutonomyGuardrails): Promise<boolean> {
    this.#open();
    if (this.#plans.has(planId)) return false;
    await this.put(planId, guardrails); // runs to its end before anything else can
    return true;
  }

  async get(planId: string): Promise<PlanRecord | null> {
    this.#open();
    const entry = this.#plans.get(planId);
    return entry ? { guardrails: entry.guardrails.clone(), audit: entry.audit.clone() } : null;
  }

  // Not `async`: read before every call an agent framework may stop for.
  getGuardrails(planId: string): Promise<AutonomyGuardrails | null> {
    try {
      this.#open();
      return Promise.resolve(this.#plans.get(planId)?.guardrails.clone() ?? null);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async readAuditLog(planId: string): Promise<readonly ChainedEntry[]> {
    this.#open();
    if (!this.keepLog) {
      throw new GuardrailError('STORE_NO_LOG', 'this MemoryStore keeps no durable log (keepLog: false)');
    }
    const entry = this.#plans.get(planId);
    return entry ? this.#chain(planId, entry).slice() : [];
  }

  async readCheckpoints(planId: string): Promise<readonly Checkpoint[]> {
    this.#open();
    const entry = this.#plans.get(planId);
    if (!entry || !this.keepLog) return [];
    this.#chain(planId, entry);
    return entry.checkpoints.slice();
  }

  async pruneAuditLog(planId: string, throughSeq: number): Promise<number> {
    this.#open();
    const through = pruneTarget(throughSeq);
    const entry = this.#plans.get(planId);
    if (!entry || !this.keepLog) throw unanchoredPrune(planId, through);
    const chained = this.#chain(planId, entry);
    if (!entry.checkpoints.some((c) => c.size === through)) throw unanchoredPrune(planId, through);
    const kept = chained.findIndex((c) => c.seq > through);
    const removed = kept === -1 ? chained.length : kept;
    // Both arrays lose the same prefix, so the entries still to chain stay in step.
    chained.splice(0, removed);
    entry.log.splice(0, removed);
    return removed;
  }

  /** Chains the entries appended since the log was last read, with their checkpoints. */
  #chain(planId: string, entry: Entry): ChainedEntry[] {
    const { log, chained, checkpoints } = entry;
    for (let i = chained.length; i < log.length; i++) {
      const audit = log[i] as AuditEntry;
      const c = chainEntry(planId, chained.at(-1) ?? null, audit);
      chained.push(c);
      const cp = checkpointDue(this.#checkpoints, planId, c, audit.timestamp);
      if (cp !== null) checkpoints.push(cp);
    }
    return chained;
  }

  async savePlanDocument(
    document: PlanDocumentInput,
    options?: { readonly expectedRevision?: number | null },
  ): Promise<PlanDocument> {
    this.#open();
    const doc = checkDocument(document, options);
    const revision = nextRevision(doc, this.#documents.get(doc.planId)?.revision ?? null);
    const row = { phase: doc.phase, body: doc.body, updatedAt: doc.updatedAt, revision };
    this.#documents.set(doc.planId, row);
    return this.#document(doc.planId, row);
  }

  async getPlanDocument(planId: string): Promise<PlanDocument | null> {
    this.#open();
    const row = this.#documents.get(planId);
    return row === undefined ? null : this.#document(planId, row);
  }

  async listPlans(): Promise<PlanListing[]> {
    this.#open();
    const documents = [...this.#documents].map(([planId, d]) => ({ planId, ...d }));
    return mergeListings(this.#plans.keys(), documents);
  }

  async putPrincipal(principal: Principal): Promise<void> {
    this.#open();
    this.#people.putPrincipal(principal);
  }

  async getPrincipal(id: string): Promise<Principal | null> {
    this.#open();
    return this.#people.getPrincipal(storedText(id, 'id'));
  }

  async listPrincipals(): Promise<Principal[]> {
    this.#open();
    return this.#people.listPrincipals();
  }

  async putToken(token: PersonalToken): Promise<void> {
    this.#open();
    this.#people.putToken(token);
  }

  async findToken(hash: string): Promise<PersonalToken | null> {
    this.#open();
    return this.#people.findToken(storedText(hash, 'hash'));
  }

  async listTokens(filter?: { readonly principalId?: string }): Promise<PersonalToken[]> {
    this.#open();
    return this.#people.listTokens(tokenFilter(filter));
  }

  async enqueueNotifications(items: readonly NotificationInput[]): Promise<void> {
    this.#open();
    this.#outbox.enqueue(items);
  }

  async claimNotifications(claim: NotificationClaim): Promise<Notification[]> {
    this.#open();
    return this.#outbox.claim(claim);
  }

  async finishNotification(id: string, outcome: NotificationOutcome): Promise<void> {
    this.#open();
    this.#outbox.finish(id, outcome);
  }

  async listNotifications(filter?: NotificationFilter): Promise<Notification[]> {
    this.#open();
    return this.#outbox.list(filter);
  }

  async delete(planId: string): Promise<boolean> {
    this.#open();
    this.#approvals.deletePlan(planId);
    const hadDocument = this.#documents.delete(planId);
    return this.#plans.delete(planId) || hadDocument;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#plans.clear();
    this.#approvals.clear();
    this.#documents.clear();
    this.#people.clear();
    this.#outbox.clear();
  }

  #document(
    planId: string,
    d: { phase: string; body: string; updatedAt: string; revision: number },
  ): PlanDocument {
    return documentFromRow(
      { plan_id: planId, phase: d.phase, body: d.body, updated_at: d.updatedAt, revision: d.revision },
      'MemoryStore',
    );
  }

  #open(): void {
    if (this.#closed) throw new GuardrailError('STORE_CLOSED', 'the store is closed');
  }
}
