import { AuditTrail, DEFAULT_AUDIT_CAPACITY } from '../../audit/AuditTrail.js';
import { chainEntry, type ChainedEntry } from '../../audit/chain.js';
import { GuardrailError } from '../../errors.js';
import type { AutonomyGuardrails } from '../../guardrails/AutonomyGuardrails.js';
import type {
  Approval,
  ApprovalStatus,
  GuardrailStore,
  PlanChangeFn,
  PlanRecord,
} from '../GuardrailStore.js';
import { applyMutation, writesState } from '../mutation.js';

interface Entry {
  guardrails: AutonomyGuardrails;
  /** The newest `auditCapacity` entries of the log since the last put with a trail. */
  audit: AuditTrail;
  /** The whole durable log, seq 1..n. */
  readonly log: ChainedEntry[];
}

/**
 * Keeps everything in this process's memory. Atomic because a change runs from read to write without
 * yielding to the event loop. Lost when the process ends: use a durable store to keep state.
 */
export class MemoryStore implements GuardrailStore {
  readonly auditCapacity: number;
  readonly #plans = new Map<string, Entry>();
  readonly #approvals = new Map<string, Approval>();
  #closed = false;

  constructor(options?: { auditCapacity?: number }) {
    // AuditTrail validates the capacity and names the field.
    this.auditCapacity = new AuditTrail({
      maxEntries: options?.auditCapacity ?? DEFAULT_AUDIT_CAPACITY,
    }).maxEntries;
  }

  // Not `async`: an async frame would add microtask hops to the hottest path of every check.
  update<T>(planId: string, change: PlanChangeFn<T>, options?: { readonly approvalId?: string }): Promise<T> {
    try {
      this.#open();
      const entry = this.#plans.get(planId);
      const wanted = options?.approvalId === undefined ? undefined : this.#approvals.get(options.approvalId);
      const out = change(entry ? entry.guardrails : null, wanted?.planId === planId ? wanted : null);
      if (!writesState(out)) {
        return Promise.resolve(out.result);
      }
      if (!entry) {
        throw new GuardrailError(
          'STORE_CONTRACT',
          `cannot record a change for unconfigured plan "${planId}"`,
        );
      }
      const approval = out.approval ?? out.newApproval;
      if (approval !== undefined && approval.planId !== planId) {
        throw new GuardrailError('STORE_CONTRACT', `approval "${approval.id}" belongs to another plan`);
      }
      const holder = approval === undefined ? undefined : this.#approvals.get(approval.id);
      if (out.newApproval !== undefined && holder !== undefined) {
        throw new GuardrailError('APPROVAL_ID_TAKEN', `approval id "${out.newApproval.id}" is already used`);
      }
      if (out.approval !== undefined && holder?.planId !== undefined && holder.planId !== planId) {
        throw new GuardrailError('STORE_CONTRACT', `approval "${out.approval.id}" belongs to another plan`);
      }
      // Chained first: an entry that cannot be chained leaves everything as it was.
      const chained =
        out.audit === undefined ? undefined : chainEntry(planId, entry.log.at(-1) ?? null, out.audit);
      let guardrails = out.replace !== undefined ? out.replace.clone() : entry.guardrails;
      if (out.mutation !== undefined) guardrails = applyMutation(guardrails, out.mutation);
      entry.guardrails = guardrails;
      if (approval !== undefined) this.#approvals.set(approval.id, Object.freeze({ ...approval }));
      if (out.audit !== undefined && chained !== undefined) {
        entry.log.push(chained);
        entry.audit.add(out.audit);
      }
      return Promise.resolve(out.result);
    } catch (error) {
      return Promise.reject(error);
    }
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
    return [...this.#approvals.values()]
      .filter(
        (a) =>
          (filter?.planId === undefined || a.planId === filter.planId) &&
          (filter?.status === undefined || a.status === filter.status),
      )
      .sort((a, b) => compareRequests(a, b));
  }

  async put(planId: string, guardrails: AutonomyGuardrails, audit?: AuditTrail): Promise<void> {
    this.#open();
    const existing = this.#plans.get(planId);
    const log = existing?.log ?? [];
    let window = existing?.audit ?? new AuditTrail({ maxEntries: this.auditCapacity });
    if (audit !== undefined) {
      window = audit.withCapacity(this.auditCapacity);
      const appended: ChainedEntry[] = [];
      let last = log.at(-1) ?? null;
      for (const e of window.entries) {
        last = chainEntry(planId, last, e);
        appended.push(last);
      }
      log.push(...appended);
    }
    this.#plans.set(planId, { guardrails: guardrails.clone(), audit: window, log });
  }

  async get(planId: string): Promise<PlanRecord | null> {
    this.#open();
    const entry = this.#plans.get(planId);
    return entry ? { guardrails: entry.guardrails.clone(), audit: entry.audit.clone() } : null;
  }

  async readAuditLog(planId: string): Promise<readonly ChainedEntry[]> {
    this.#open();
    return (this.#plans.get(planId)?.log ?? []).slice();
  }

  async delete(planId: string): Promise<boolean> {
    this.#open();
    for (const [id, a] of this.#approvals) if (a.planId === planId) this.#approvals.delete(id);
    return this.#plans.delete(planId);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#plans.clear();
    this.#approvals.clear();
  }

  #open(): void {
    if (this.#closed) throw new GuardrailError('STORE_CLOSED', 'the store is closed');
  }
}

/** Oldest request first; ties (and clocks that went back) broken by id so the order is stable. */
function compareRequests(a: Approval, b: Approval): number {
  if (a.requestedAt !== b.requestedAt) return a.requestedAt < b.requestedAt ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
