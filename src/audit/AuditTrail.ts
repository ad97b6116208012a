import { invalid } from '../errors.js';
import type { AuditEntry } from './AuditEntry.js';

/** Default number of entries a trail keeps. */
export const DEFAULT_AUDIT_CAPACITY = 1000;

/**
 * The newest `maxEntries` audit entries of a plan, in a ring buffer: adding is O(1) and, when full, evicts
 * the oldest entry in O(1). `allowedCount` and `deniedCount` describe the entries held now and are kept
 * up to date on every add and eviction. Pure: no clock, no I/O.
 */
export class AuditTrail {
  readonly maxEntries: number;
  #ring: AuditEntry[] = [];
  /**
   * Whether each slot's entry was allowed (1) or denied (0), beside the ring: an eviction reads this
   * compact array instead of the evicted entry, which was last touched `maxEntries` adds ago and is out of
   * the CPU's caches by then.
   */
  #allowedAt: number[] = [];
  #head = 0; // index of the oldest entry once the ring is full
  #allowed = 0;
  #denied = 0;

  constructor(options?: { maxEntries?: number }) {
    const max = options?.maxEntries === undefined ? DEFAULT_AUDIT_CAPACITY : options.maxEntries;
    if (!Number.isSafeInteger(max) || max < 1) invalid('max_entries', 'an integer >= 1', max);
    this.maxEntries = max;
  }

  add(entry: AuditEntry): void {
    const ring = this.#ring;
    const allowed = entry.result === 'allowed' ? 1 : 0;
    if (ring.length < this.maxEntries) {
      ring.push(entry);
      this.#allowedAt.push(allowed);
    } else {
      const head = this.#head;
      if (this.#allowedAt[head] === 1) this.#allowed--;
      else this.#denied--;
      ring[head] = entry;
      this.#allowedAt[head] = allowed;
      this.#head = head + 1 === this.maxEntries ? 0 : head + 1;
    }
    if (allowed === 1) this.#allowed++;
    else this.#denied++;
  }

  /** The entries held, oldest first (a fresh array). */
  get entries(): readonly AuditEntry[] {
    const ring = this.#ring;
    return this.#head === 0 ? ring.slice() : [...ring.slice(this.#head), ...ring.slice(0, this.#head)];
  }

  get size(): number {
    return this.#ring.length;
  }

  get allowedCount(): number {
    return this.#allowed;
  }

  get deniedCount(): number {
    return this.#denied;
  }

  /** An independent copy holding the same entries (entries are immutable and shared). */
  clone(): AuditTrail {
    // The ring as it is, copied whole: a store copies its trail on every read of a plan.
    const copy = new AuditTrail({ maxEntries: this.maxEntries });
    copy.#ring = this.#ring.slice();
    copy.#allowedAt = this.#allowedAt.slice();
    copy.#head = this.#head;
    copy.#allowed = this.#allowed;
    copy.#denied = this.#denied;
    return copy;
  }

  /** An independent copy that keeps `maxEntries` entries: the newest of these, when it holds fewer. */
  withCapacity(maxEntries: number): AuditTrail {
    const copy = new AuditTrail({ maxEntries });
    const entries = this.entries;
    for (let i = Math.max(0, entries.length - maxEntries); i < entries.length; i++)
      copy.add(entries[i] as AuditEntry);
    return copy;
  }
}
