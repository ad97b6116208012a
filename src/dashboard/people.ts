import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { GuardrailValidationError } from '../errors.js';
import { parseIsoMs } from '../iso.js';
import type { Approval, DeciderIdentity, GuardrailStore, Principal } from '../store/GuardrailStore.js';

// What the dashboard asks the store about the people who decide: whether there are any (then everyone
// signs in), who a personal token belongs to, and which approvals a signed-in identity may decide.

const ROLE = /^[a-z0-9][a-z0-9._@-]{0,127}$/;

export function isRoleName(value: unknown): value is string {
  return typeof value === 'string' && ROLE.test(value);
}

/** The principals that are not revoked. */
export async function activePrincipals(store: GuardrailStore): Promise<Principal[]> {
  return ((await store.listPrincipals?.()) ?? []).filter((p) => p.revokedAt === undefined);
}

/** Whether the store has a principal that is not revoked: then the dashboard signs people in. */
export async function hasPrincipals(store: GuardrailStore): Promise<boolean> {
  return (await activePrincipals(store)).length > 0;
}

/** The identity a personal token stands for; a GuardrailError when it stands for none. */
export async function authenticate(
  store: GuardrailStore,
  clock: Clock,
  token: string,
): Promise<DeciderIdentity> {
  const refused = () => new GuardrailValidationError('token', 'token is not a valid personal token');
  const record = await store.findToken?.(createHash('sha256').update(token, 'utf8').digest('hex'));
  if (record === undefined || record === null || record.revokedAt !== undefined) throw refused();
  if (record.expiresAt !== undefined && clock.now() >= parseIsoMs(record.expiresAt)) throw refused();
  const principal = await store.getPrincipal?.(record.principalId);
  if (principal === undefined || principal === null || principal.revokedAt !== undefined) throw refused();
  return {
    kind: 'token',
    subject: principal.id,
    name: principal.name,
    principal: principal.id,
    roles: principal.roles,
  };
}

/** Whether `identity` is among the approvers of `approval`'s rule (anyone, without a rule). */
export function mayDecide(approval: Approval, identity: DeciderIdentity): boolean {
  const rule = approval.rule;
  if (rule === undefined) return true;
  return rule.approvers.some(
    (a) =>
      a === '*' ||
      (a.startsWith('role:') && (identity.roles ?? []).includes(a.slice(5))) ||
      (a.startsWith('user:') && identity.principal === a.slice(5)),
  );
}
