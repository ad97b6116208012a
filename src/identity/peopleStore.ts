// The methods a store keeps principals and personal tokens with: optional in GuardrailStore for now, so
// a store written before them still works for everything else, and is refused here with a clear error.
import { GuardrailError } from '../errors.js';
import type { GuardrailStore } from '../store/GuardrailStore.js';

const METHODS = [
  'putPrincipal',
  'getPrincipal',
  'listPrincipals',
  'putToken',
  'findToken',
  'listTokens',
] as const;

/** A store with every method of principals and personal tokens. */
export type PeopleStore = GuardrailStore & Required<Pick<GuardrailStore, (typeof METHODS)[number]>>;

/** True when `store` has every method of principals and personal tokens. */
export function keepsPeople(store: GuardrailStore): store is PeopleStore {
  return METHODS.every((m) => typeof store[m] === 'function');
}

/** `store` as a {@link PeopleStore}; `STORE_UNSUPPORTED` naming what it lacks when it is not one. */
export function peopleStore(store: GuardrailStore): PeopleStore {
  if (keepsPeople(store)) return store;
  const missing = METHODS.filter((m) => typeof store[m] !== 'function');
  throw new GuardrailError(
    'STORE_UNSUPPORTED',
    `this store keeps no principals or personal tokens: it has no ${missing.join(', ')}`,
  );
}
