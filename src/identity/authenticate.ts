// From a personal token to the verified identity of the person deciding. A refusal says why (unknown,
// revoked, expired, its principal revoked) and never repeats the token.
import type { Clock } from '../clock.js';
import { GuardrailError } from '../errors.js';
import { parseIsoMs } from '../iso.js';
import type { GuardrailStore } from '../store/GuardrailStore.js';
import type { DeciderIdentity } from '../store/people.js';
import { peopleStore } from './peopleStore.js';
import { hashToken, isTokenShaped, TOKEN_PREFIX } from './tokens.js';

/**
 * The identity `token` proves, at the clock's time: `{ kind: 'token', subject, name, principal, roles }`
 * of its principal. Refused with a GuardrailError: `TOKEN_INVALID` (not a token, or one the store does
 * not know), `TOKEN_REVOKED`, `TOKEN_EXPIRED`, `PRINCIPAL_REVOKED` (its principal was revoked or
 * removed); `STORE_UNSUPPORTED` for a store that keeps no tokens.
 */
export async function authenticate(
  store: GuardrailStore,
  clock: Clock,
  token: unknown,
): Promise<DeciderIdentity> {
  const people = peopleStore(store);
  if (!isTokenShaped(token)) {
    throw new GuardrailError(
      'TOKEN_INVALID',
      `not a personal token: one starts with "${TOKEN_PREFIX}" followed by 43 characters`,
    );
  }
  const record = await people.findToken(hashToken(token));
  if (record === null) {
    throw new GuardrailError('TOKEN_INVALID', 'this personal token is not one this store knows');
  }
  if (record.revokedAt !== undefined) {
    throw new GuardrailError(
      'TOKEN_REVOKED',
      `personal token ${record.id} was revoked at ${record.revokedAt}`,
    );
  }
  // An expiry that cannot be read counts as passed: a token is accepted only while it surely holds.
  if (record.expiresAt !== undefined && !(parseIsoMs(record.expiresAt) > clock.now())) {
    throw new GuardrailError('TOKEN_EXPIRED', `personal token ${record.id} expired at ${record.expiresAt}`);
  }
  const principal = await people.getPrincipal(record.principalId);
  if (principal === null || principal.revokedAt !== undefined) {
    const what = principal === null ? 'no longer exists' : `was revoked at ${principal.revokedAt}`;
    throw new GuardrailError(
      'PRINCIPAL_REVOKED',
      `principal "${record.principalId}" of personal token ${record.id} ${what}`,
    );
  }
  return Object.freeze({
    kind: 'token',
    subject: principal.id,
    name: principal.name,
    principal: principal.id,
    roles: Object.freeze([...principal.roles]),
  });
}
