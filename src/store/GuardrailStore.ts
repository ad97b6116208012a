import type { AuditEntry } from '../audit/AuditEntry.js';
import type { AuditTrail } from '../audit/AuditTrail.js';
import type { AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';

/** What a change does to a plan's counters; the store applies it atomically with the audit entry. */
export interface PlanMutation {
  /** Steps to add to `step_count`. */
  readonly steps?: number;
  /** Micro-units to add to `budget_spent`. */
  readonly spendMicros?: number;
  /** Sets `start_time` (ISO-8601 UTC) if it is still unset. */
  readonly startTime?: string;
}

/** The outcome of a change: what to return, what to record, what to change. */
export interface PlanChange<T> {
  readonly result: T;
  /** Recorded together with the mutation, or not at all. Only for a configured plan. */
  readonly audit?: AuditEntry;
  /** Only for a configured plan. */
  readonly mutation?: PlanMutation;
  /** New guardrails for a configured plan (a reconfiguration), applied before `mutation`. */
  readonly replace?: AutonomyGuardrails;
}

/**
 * Decides a change from a plan's current guardrails (null when the plan is not configured). It must be
 * synchronous and must not modify its argument: it describes the change, the store applies it. (A store
 * may hand it the stored object itself rather than a copy, so a change that modifies it would change the
 * state without an audit entry.)
 */
export type PlanChangeFn<T> = (guardrails: AutonomyGuardrails | null) => PlanChange<T>;

/** A plan's state as read from a store: independent copies the caller may keep. */
export interface PlanRecord {
  readonly guardrails: AutonomyGuardrails;
  readonly audit: AuditTrail;
}

/**
 * Where guardrail state and audit entries live. The service talks to nothing else. Every implementation
 * must pass the contract suite in `store/contract.ts`.
 */
export interface GuardrailStore {
  /** How many audit entries a new plan's trail keeps. */
  readonly auditCapacity: number;

  /**
   * Reads the plan, decides with `change`, and commits the mutation and its audit entry as one atomic
   * step: concurrent updates of one plan never interleave between the read and the write.
   */
  update<T>(planId: string, change: PlanChangeFn<T>): Promise<T>;

  /**
   * Stores a plan's guardrails, creating the plan if needed. With `audit`, the plan's audit trail is
   * replaced by its newest `auditCapacity` entries; without, an existing plan keeps its trail and a new
   * one starts an empty one. The trail's capacity is always the store's, whatever `audit` came with.
   */
  put(planId: string, guardrails: AutonomyGuardrails, audit?: AuditTrail): Promise<void>;

  /** The plan's state, or null when it is not configured. */
  get(planId: string): Promise<PlanRecord | null>;

  /** Forgets a plan; true if it existed. */
  delete(planId: string): Promise<boolean>;

  /** Releases connections and files. The store is not used afterwards. */
  close(): Promise<void>;
}
