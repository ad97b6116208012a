import type { PersonalToken, Principal } from '../people.js';
import { checkedPrincipal, checkedToken, hashTaken } from '../peopleRecords.js';

// The principals and personal tokens of a MemoryStore, in this process's memory.

export class MemoryPeople {
  readonly #principals = new Map<string, Principal>();
  /** By id. */
  readonly #tokens = new Map<string, PersonalToken>();
  /** The id of the token with each hash. */
  readonly #byHash = new Map<string, string>();

  putPrincipal(principal: Principal): void {
    const p = checkedPrincipal(principal);
    this.#principals.set(p.id, p);
  }

  getPrincipal(id: string): Principal | null {
    return this.#principals.get(id) ?? null;
  }

  listPrincipals(): Principal[] {
    return [...this.#principals.values()].sort((a, b) => compare(a.id, b.id));
  }

  putToken(token: PersonalToken): void {
    const t = checkedToken(token);
    const holder = this.#byHash.get(t.hash);
    if (holder !== undefined && holder !== t.id) throw hashTaken(t.id);
    const replaced = this.#tokens.get(t.id);
    if (replaced !== undefined) this.#byHash.delete(replaced.hash);
    this.#tokens.set(t.id, t);
    this.#byHash.set(t.hash, t.id);
  }

  findToken(hash: string): PersonalToken | null {
    const id = this.#byHash.get(hash);
    return id === undefined ? null : (this.#tokens.get(id) ?? null);
  }

  listTokens(principalId: string | undefined): PersonalToken[] {
    return [...this.#tokens.values()]
      .filter((t) => principalId === undefined || t.principalId === principalId)
      .sort((a, b) => compare(a.createdAt, b.createdAt) || compare(a.id, b.id));
  }

  clear(): void {
    this.#principals.clear();
    this.#tokens.clear();
    this.#byHash.clear();
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
