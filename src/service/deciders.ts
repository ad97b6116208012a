import { invalid } from '../errors.js';
import type { VoteProblem } from '../identity/rules.js';
import { isPlainObject } from '../json.js';
import type { DeciderIdentity } from '../store/people.js';
import { checkedIdentity } from '../store/peopleRecords.js';
import { validPersonName, type Decision } from './approvals.js';
import type { ServiceCore } from './core.js';

// Who decides an approval, as the service knows them before reading it: whether the store knows people
// at all, and the decider's identity checked against the principal the store holds now.

/** Who decides: their identity, and why it cannot count when that is known before reading the approval. */
export interface Voter {
  readonly identity: DeciderIdentity;
  readonly problem: VoteProblem | null;
}

/** The identity a decision gives, checked: a verified one, never leash's own. */
export function identityOf(decision: Decision): DeciderIdentity | undefined {
  const value: unknown = decision.identity;
  if (value === undefined) return undefined;
  if (!isPlainObject(value)) invalid('identity', 'an object', value);
  const identity = checkedIdentity(value, 'identity');
  if (identity.kind === 'system')
    invalid('identity.kind', 'a person’s kind of identity, not "system"', 'system');
  validPersonName(identity.name, 'identity.name', 'who decided');
  return identity;
}

/**
 * The decider as the store knows them now: a principal's roles as they stand (not as a session or a
 * token remembered them), and a problem when the principal is gone or revoked.
 */
export async function voterOf(
  core: ServiceCore,
  by: string,
  given: DeciderIdentity | undefined,
): Promise<Voter> {
  if (given === undefined) return { identity: { kind: 'operator', subject: by, name: by }, problem: null };
  if (given.principal === undefined) return { identity: given, problem: null };
  const p = await core.store.getPrincipal(given.principal);
  if (p === null || p.revokedAt !== undefined) {
    const message = `principal "${given.principal}" ${p === null ? 'is not known' : 'was revoked'}: it decides nothing`;
    return { identity: given, problem: { code: 'APPROVAL_NOT_ALLOWED', message } };
  }
  // A token's roles are its principal's; a provider's sign-in keeps the roles its groups gave too.
  const roles = given.kind === 'oidc' ? [...new Set([...p.roles, ...(given.roles ?? [])])].sort() : p.roles;
  return { identity: Object.freeze({ ...given, roles }), problem: null };
}
