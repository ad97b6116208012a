import type { AuditTrail } from '../audit/AuditTrail.js';
import type { AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';

/** The seq and hash of a plan's last audit entry: what the next entry chains to. */
export interface ChainHead {
  readonly seq: number;
  readonly hash: string;
}

/**
 * A plan's state as this store last committed or read it: what a SQL store decides the next change from
 * without reading the row back and parsing it again. The store owns `guardrails`: change functions get
 * the object itself (they must not modify it), and the store may change it in place while it commits.
 */
export interface CachedPlan {
  readonly guardrails: AutonomyGuardrails;
  readonly head: ChainHead | null;
  /** What tells the store the row is still as cached (PostgreSQL: the row's version); '' when unused. */
  readonly version: string;
}

/** How many plans a store keeps cached; the least recently used go first. */
export const PLAN_CACHE_CAPACITY = 1_024;

/**
 * How many cached plans also keep their audit window (see {@link PlanCache.trail}); the least recently
 * kept go first. A window holds up to the store's `auditCapacity` entries.
 */
export const TRAIL_CACHE_CAPACITY = 32;

/** The most queued updates a SQL store writes with one transaction or statement. */
export const MAX_UPDATES_PER_WRITE = 256;

/**
 * The cached state of recently used plans, least recently used evicted first. Only a hint: every store
 * confirms, in the transaction or statement that writes, that nothing changed the plan since (SQLite:
 * the connection's data version and change count; PostgreSQL: the row's version), and drops what a
 * failed write may have changed in place.
 */
export class PlanCache {
  readonly #plans = new Map<string, CachedPlan>();
  /** The audit windows of some of the cached plans, least recently kept first. */
  readonly #trails = new Map<string, AuditTrail>();
  readonly #capacity: number;
  readonly #trailCapacity: number;
  /**
   * The most recently used plan, last in the map's order. Moving it to the end again would cost a
   * delete and a set (and, with one plan used over and over, the map's rehashing of deleted slots) on
   * every update of it, which is most updates.
   */
  #newest: string | undefined;

  constructor(capacity = PLAN_CACHE_CAPACITY, trailCapacity = TRAIL_CACHE_CAPACITY) {
    this.#capacity = capacity;
    this.#trailCapacity = trailCapacity;
  }

  get(planId: string): CachedPlan | undefined {
    const found = this.#plans.get(planId);
    if (found !== undefined && planId !== this.#newest) {
      this.#plans.delete(planId);
      this.#plans.set(planId, found);
      this.#newest = planId;
    }
    return found;
  }

  set(planId: string, plan: CachedPlan): void {
    if (planId === this.#newest) {
      this.#plans.set(planId, plan);
      return;
    }
    this.#plans.delete(planId);
    this.#plans.set(planId, plan);
    this.#newest = planId;
    if (this.#plans.size > this.#capacity) {
      const oldest = this.#plans.keys().next().value as string;
      if (oldest === this.#newest) this.#newest = undefined;
      this.#plans.delete(oldest);
      this.#trails.delete(oldest);
    }
  }

  /**
   * The audit window kept for a cached plan: its newest entries, as the store committed them, which the
   * store adds to as it commits more (the plan's later states continue its log). Valid as long as the
   * plan is, and dropped with it; the store owns it, so hand out copies.
   */
  trail(planId: string): AuditTrail | undefined {
    return this.#trails.get(planId);
  }

  /** Keeps `trail` as the audit window of plan `planId`, if that plan is cached. */
  keepTrail(planId: string, trail: AuditTrail): void {
    if (!this.#plans.has(planId)) return;
    this.#trails.delete(planId);
    this.#trails.set(planId, trail);
    if (this.#trails.size > this.#trailCapacity) {
      this.#trails.delete(this.#trails.keys().next().value as string);
    }
  }

  delete(planId: string): void {
    if (planId === this.#newest) this.#newest = undefined;
    this.#plans.delete(planId);
    this.#trails.delete(planId);
  }

  clear(): void {
    this.#newest = undefined;
    this.#plans.clear();
    this.#trails.clear();
  }
}
