import { randomBytes } from 'node:crypto';
import type { Clock } from '../clock.js';
import { invalid } from '../errors.js';

// What the dashboard keeps in memory for a while under a random id: the sessions of the people signed in,
// and the sign-ins under way at an OpenID Connect provider. Nothing of it outlives the process.

/** A fresh id: 32 random bytes, base64url (43 characters). */
export function randomId(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * Values kept under random ids until they expire, read with the injected clock. At most `max` at a time:
 * past that, the ones closest to expiry make room, so that nobody can fill the memory by asking.
 */
export class Expiring<T> {
  readonly #items = new Map<string, { readonly value: T; readonly expiresAt: number }>();
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #max: number;

  constructor(o: { readonly clock: Clock; readonly ttlMs: number; readonly max: number }) {
    if (!Number.isInteger(o.ttlMs) || o.ttlMs <= 0) invalid('ttlMs', 'a positive integer', o.ttlMs);
    this.#clock = o.clock;
    this.#ttlMs = o.ttlMs;
    this.#max = o.max;
  }

  /** How long a value is kept, in milliseconds. */
  get ttlMs(): number {
    return this.#ttlMs;
  }

  /** Keeps `value` under a new random id; resolves with the id and when it expires (epoch ms). */
  add(value: T): { readonly id: string; readonly expiresAt: number } {
    const now = this.#clock.now();
    this.#sweep(now);
    const id = randomId();
    const expiresAt = now + this.#ttlMs;
    this.#items.set(id, { value, expiresAt });
    return { id, expiresAt };
  }

  /** The value under `id`, or null when there is none or it has expired (it is then forgotten). */
  get(id: string | undefined): T | null {
    if (id === undefined) return null;
    const item = this.#items.get(id);
    if (item === undefined) return null;
    if (this.#clock.now() >= item.expiresAt) {
      this.#items.delete(id);
      return null;
    }
    return item.value;
  }

  /** The value under `id`, forgotten as it is read: for what may be used once. */
  take(id: string | undefined): T | null {
    const value = this.get(id);
    if (id !== undefined) this.#items.delete(id);
    return value;
  }

  delete(id: string | undefined): void {
    if (id !== undefined) this.#items.delete(id);
  }

  get size(): number {
    return this.#items.size;
  }

  /** Forgets what has expired, then, while full, the values closest to expiry (the oldest: one ttl for all). */
  #sweep(now: number): void {
    for (const [id, item] of this.#items) if (now >= item.expiresAt) this.#items.delete(id);
    for (const id of this.#items.keys()) {
      if (this.#items.size < this.#max) break;
      this.#items.delete(id);
    }
  }
}
