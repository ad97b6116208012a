import { GuardrailError } from '../../errors.js';
import { keptApproval } from '../approvalReview.js';
import type { Approval, ApprovalStatus } from '../GuardrailStore.js';

// The approvals of a MemoryStore, in this process's memory, with the newest of each plan's decision at
// hand: a run guard asks for it before every call.

export class MemoryApprovals {
  readonly #approvals = new Map<string, Approval>();
  /** The newest approval per plan and decision (findApproval's answer), by {@link decisionKey}. */
  readonly #newest = new Map<string, Approval>();

  get(id: string): Approval | undefined {
    return this.#approvals.get(id);
  }

  list(filter?: { readonly planId?: string; readonly status?: ApprovalStatus }): Approval[] {
    return [...this.#approvals.values()]
      .filter(
        (a) =>
          (filter?.planId === undefined || a.planId === filter.planId) &&
          (filter?.status === undefined || a.status === filter.status),
      )
      .sort(compareRequests);
  }

  newest(planId: string, decisionId: string): Approval | null {
    return this.#newest.get(decisionKey(planId, decisionId)) ?? null;
  }

  /**
   * Refuses, before anything of an update changes, the approvals of its change that could not be kept:
   * one whose fields are not storable, a new one with an id in use, one with the id of another plan's.
   */
  claim(approval: Approval | undefined, newApproval: Approval | undefined): void {
    if (approval !== undefined) keptApproval(approval);
    if (newApproval !== undefined) keptApproval(newApproval);
    const id = (approval ?? newApproval)?.id;
    const holder = id === undefined ? undefined : this.#approvals.get(id);
    if (holder === undefined) return;
    if (newApproval !== undefined) {
      throw new GuardrailError('APPROVAL_ID_TAKEN', `approval id "${newApproval.id}" is already used`);
    }
    if (holder.planId !== (approval as Approval).planId) {
      throw new GuardrailError('STORE_CONTRACT', `approval "${id}" belongs to another plan`);
    }
  }

  /** Keeps an approval, new or changed (a copy), as the newest of its decision when it is. */
  keep(given: Approval): void {
    const approval = keptApproval(given);
    this.#approvals.set(approval.id, approval);
    const key = decisionKey(approval.planId, approval.decisionId);
    const newest = this.#newest.get(key);
    if (newest === undefined || newest.id === approval.id || compareRequests(approval, newest) > 0) {
      this.#newest.set(key, approval);
    }
  }

  /** Forgets the approvals of a plan. */
  deletePlan(planId: string): void {
    for (const [id, a] of this.#approvals) {
      if (a.planId !== planId) continue;
      this.#approvals.delete(id);
      this.#newest.delete(decisionKey(planId, a.decisionId));
    }
  }

  clear(): void {
    this.#approvals.clear();
    this.#newest.clear();
  }
}

/** A plan and a decision as one key: ids hold no control character, so none can hold the separator. */
function decisionKey(planId: string, decisionId: string): string {
  return `${planId}\u0000${decisionId}`;
}

/** Oldest request first; ties (and clocks that went back) broken by id so the order is stable. */
function compareRequests(a: Approval, b: Approval): number {
  if (a.requestedAt !== b.requestedAt) return a.requestedAt < b.requestedAt ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
