// Who may decide, kept in the store: principals added, changed and revoked, and their personal tokens
// made, listed and revoked. Every input is checked before the store sees it.
import type { Clock } from '../clock.js';
import { GuardrailError, GuardrailValidationError } from '../errors.js';
import { formatIso } from '../iso.js';
import type { GuardrailStore } from '../store/GuardrailStore.js';
import type { PersonalToken, Principal } from '../store/people.js';
import { keepsPeople, peopleStore, type PeopleStore } from './peopleStore.js';
import { validPrincipalId, validPrincipalInit } from './principals.js';
import { newToken, validTokenId, type NewToken, type TokenOptions } from './tokens.js';

/**
 * Adds a principal, or changes the name, roles and e-mail address of one with its id (keeping when it
 * was added): how roles change. An id that was revoked is refused: ids are not reused, so the audit log
 * never names two people with one id, and a revoked principal's tokens stay refused.
 */
export async function addPrincipal(store: GuardrailStore, clock: Clock, init: unknown): Promise<Principal> {
  const fields = validPrincipalInit(init);
  const people = peopleStore(store);
  const existing = await people.getPrincipal(fields.id);
  if (existing?.revokedAt !== undefined) {
    throw new GuardrailValidationError(
      'id',
      `id "${fields.id}" is of a principal revoked at ${existing.revokedAt}: ids are not reused, choose another`,
    );
  }
  const principal: Principal = { ...fields, createdAt: existing?.createdAt ?? formatIso(clock.now()) };
  await people.putPrincipal(principal);
  return principal;
}

/**
 * Revokes a principal: it may no longer decide, and its tokens are refused from now on. Revoking one that
 * is revoked already changes nothing (it keeps the first time) and returns it as it is.
 */
export async function revokePrincipal(store: GuardrailStore, clock: Clock, id: unknown): Promise<Principal> {
  const people = peopleStore(store);
  const principal = await principalOf(people, validPrincipalId(id));
  if (principal.revokedAt !== undefined) return principal;
  const revoked: Principal = { ...principal, revokedAt: formatIso(clock.now()) };
  await people.putPrincipal(revoked);
  return revoked;
}

/** Every principal, revoked ones too, in id order. */
export async function listPrincipals(store: GuardrailStore): Promise<Principal[]> {
  return peopleStore(store).listPrincipals();
}

/**
 * True when the store has a principal that is not revoked: decisions must then be made by one of them.
 * A store without the methods of principals has none.
 */
export async function hasPrincipals(store: GuardrailStore): Promise<boolean> {
  if (!keepsPeople(store)) return false;
  return (await store.listPrincipals()).some((p) => p.revokedAt === undefined);
}

/**
 * Makes a personal token for a principal that exists and is not revoked. Resolves with the token, which
 * nothing keeps (show it once), and the record the store keeps: its id and hash.
 */
export async function createToken(
  store: GuardrailStore,
  clock: Clock,
  principalId: unknown,
  options: TokenOptions = {},
): Promise<NewToken> {
  const people = peopleStore(store);
  const principal = await principalOf(people, validPrincipalId(principalId, 'principal_id'));
  if (principal.revokedAt !== undefined) {
    throw new GuardrailError(
      'PRINCIPAL_REVOKED',
      `principal "${principal.id}" was revoked at ${principal.revokedAt}: it gets no new tokens`,
    );
  }
  const taken = new Set((await people.listTokens()).map((t) => t.id));
  let made = newToken(principal.id, options, clock.now());
  // 48 random bits make a clash unlikely, but a token stored under a taken id would replace another.
  while (taken.has(made.record.id)) made = newToken(principal.id, options, clock.now());
  await people.putToken(made.record);
  return made;
}

/**
 * Revokes a personal token by id: it is refused from now on. Revoking one that is revoked already changes
 * nothing (it keeps the first time) and returns it as it is.
 */
export async function revokeToken(store: GuardrailStore, clock: Clock, id: unknown): Promise<PersonalToken> {
  const tokenId = validTokenId(id);
  const people = peopleStore(store);
  const token = (await people.listTokens()).find((t) => t.id === tokenId);
  if (token === undefined) {
    throw new GuardrailError('TOKEN_NOT_FOUND', `no personal token "${tokenId}"`);
  }
  if (token.revokedAt !== undefined) return token;
  const revoked: PersonalToken = { ...token, revokedAt: formatIso(clock.now()) };
  await people.putToken(revoked);
  return revoked;
}

/** Personal tokens (revoked and expired ones too), oldest first, optionally of one principal. */
export async function listTokens(
  store: GuardrailStore,
  filter: { readonly principalId?: string } = {},
): Promise<PersonalToken[]> {
  const people = peopleStore(store);
  if (filter.principalId === undefined) return people.listTokens();
  return people.listTokens({ principalId: validPrincipalId(filter.principalId, 'principal_id') });
}

async function principalOf(people: PeopleStore, id: string): Promise<Principal> {
  const principal = await people.getPrincipal(id);
  if (principal === null) throw new GuardrailError('PRINCIPAL_NOT_FOUND', `no principal "${id}"`);
  return principal;
}
