import { AuditTrail, DEFAULT_AUDIT_CAPACITY } from '../../audit/AuditTrail.js';
import { GuardrailError } from '../../errors.js';
import type { AutonomyGuardrails } from '../../guardrails/AutonomyGuardrails.js';
import type { GuardrailStore, PlanChangeFn, PlanRecord } from '../GuardrailStore.js';
import { applyMutation } from '../mutation.js';

interface Entry {
  guardrails: AutonomyGuardrails;
  audit: AuditTrail;
}

/**
 * Keeps everything in this process's memory. Atomic because a change runs from read to write without
 * yielding to the event loop. Lost when the process ends: use a durable store to keep state.
 */
export class MemoryStore implements GuardrailStore {
  readonly auditCapacity: number;
  readonly #plans = new Map<string, Entry>();
  #closed = false;

  constructor(options?: { auditCapacity?: number }) {
    // AuditTrail validates the capacity and names the field.
    this.auditCapacity = new AuditTrail({
      maxEntries: options?.auditCapacity ?? DEFAULT_AUDIT_CAPACITY,
    }).maxEntries;
  }

  // Not `async`: an async frame would add microtask hops to the hottest path of every check.
  update<T>(planId: string, change: PlanChangeFn<T>): Promise<T> {
    try {
      this.#open();
      const entry = this.#plans.get(planId);
      const out = change(entry ? entry.guardrails : null);
      if (out.mutation === undefined && out.audit === undefined && out.replace === undefined) {
        return Promise.resolve(out.result);
      }
      if (!entry) {
        throw new GuardrailError(
          'STORE_CONTRACT',
          `cannot record a change for unconfigured plan "${planId}"`,
        );
      }
      if (out.replace !== undefined) entry.guardrails = out.replace.clone();
      if (out.mutation !== undefined) entry.guardrails = applyMutation(entry.guardrails, out.mutation);
      if (out.audit !== undefined) entry.audit.add(out.audit);
      return Promise.resolve(out.result);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async put(planId: string, guardrails: AutonomyGuardrails, audit?: AuditTrail): Promise<void> {
    this.#open();
    const existing = this.#plans.get(planId);
    this.#plans.set(planId, {
      guardrails: guardrails.clone(),
      audit:
        (audit ?? existing?.audit)?.withCapacity(this.auditCapacity) ??
        new AuditTrail({ maxEntries: this.auditCapacity }),
    });
  }

  async get(planId: string): Promise<PlanRecord | null> {
    this.#open();
    const entry = this.#plans.get(planId);
    return entry ? { guardrails: entry.guardrails.clone(), audit: entry.audit.clone() } : null;
  }

  async delete(planId: string): Promise<boolean> {
    this.#open();
    return this.#plans.delete(planId);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#plans.clear();
  }

  #open(): void {
    if (this.#closed) throw new GuardrailError('STORE_CLOSED', 'the store is closed');
  }
}
