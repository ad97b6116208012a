import type { GuardrailStore } from '../../src/store/GuardrailStore.js';
import { MemoryStore } from '../../src/store/memory/MemoryStore.js';

/** A store without the methods of principals and personal tokens: one written before them. */
export function storeWithoutPeople(): GuardrailStore {
  const none = { value: undefined };
  return Object.create(new MemoryStore(), {
    putPrincipal: none,
    getPrincipal: none,
    listPrincipals: none,
    putToken: none,
    findToken: none,
    listTokens: none,
  }) as GuardrailStore;
}

/** What `promise` rejects with, for asserting its code and message; fails when it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (e) {
    return e as { code: string; message: string };
  }
  throw new Error('expected a rejection, but the promise resolved');
}
