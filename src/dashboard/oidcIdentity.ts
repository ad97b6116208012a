import { invalid } from '../errors.js';
import { hasHiddenCharacters, isWellFormed } from '../unicode.js';
import type { DeciderIdentity, Principal } from '../store/GuardrailStore.js';
import { validRoles } from '../identity/principals.js';

// Who a provider's claims make of a person signing in: the principal whose id or e-mail the user claim
// names, and the roles the roles claim gives; someone who is neither a principal nor holds a role is not
// let in.

/** How claims become an identity. */
export interface ClaimMapping {
  /** The claim naming the person, matched against a principal's id or e-mail; `email` unless given. */
  readonly userClaim?: string;
  /** A claim listing groups (an array of strings, or one string), each a role of the person. */
  readonly rolesClaim?: string;
  /**
   * Group → role. When given, only the groups it names become roles (as the roles it maps them to);
   * otherwise each group that is a valid role name is a role as it is.
   */
  readonly roles?: Readonly<Record<string, string>>;
}

export const DEFAULT_USER_CLAIM = 'email';

/** Checks a mapping, naming the option at fault; resolves the default user claim. */
export function claimMapping(m: ClaimMapping): Required<Omit<ClaimMapping, 'rolesClaim'>> & ClaimMapping {
  const userClaim = m.userClaim ?? DEFAULT_USER_CLAIM;
  if (typeof userClaim !== 'string' || userClaim.trim() === '')
    invalid('oidcUserClaim', 'a claim name', userClaim);
  if (m.rolesClaim !== undefined && (typeof m.rolesClaim !== 'string' || m.rolesClaim.trim() === '')) {
    invalid('oidcRolesClaim', 'a claim name', m.rolesClaim);
  }
  const roles = m.roles ?? {};
  for (const [group, role] of Object.entries(roles)) {
    if (group === '') invalid('oidcRole', 'GROUP=ROLE with a group', `=${role}`);
    if (!isRoleName(role))
      invalid('oidcRole', `GROUP=ROLE with a valid role name (for group "${group}")`, role);
  }
  if (Object.keys(roles).length > 0 && m.rolesClaim === undefined) {
    invalid('oidcRolesClaim', 'given when roles are mapped (the claim holding the groups)', undefined);
  }
  return { ...m, userClaim, roles };
}

/** The roles a roles claim gives, sorted, without repeats. */
export function rolesFromClaims(claims: Readonly<Record<string, unknown>>, m: ClaimMapping): string[] {
  if (m.rolesClaim === undefined) return [];
  const value = claims[m.rolesClaim];
  const groups = (Array.isArray(value) ? value : [value]).filter((g): g is string => typeof g === 'string');
  const mapped = m.roles !== undefined && Object.keys(m.roles).length > 0;
  const roles = groups.flatMap((g) => {
    if (!mapped) return isRoleName(g) ? [g] : [];
    return Object.hasOwn(m.roles ?? {}, g) ? [m.roles?.[g] as string] : [];
  });
  return [...new Set(roles)].sort();
}

/** What a sign-in with these claims comes to. */
export type ClaimsOutcome =
  | { readonly ok: true; readonly identity: DeciderIdentity; readonly claimRoles: readonly string[] }
  | { readonly ok: false; readonly user: string | null; readonly why: string };

/**
 * The identity of a person the provider signed in: the active principal whose id or e-mail (either case)
 * equals the user claim, with its roles and those of the roles claim. Without such a principal, the roles
 * claim alone; without a role either, refused.
 */
export function identityFromClaims(
  claims: Readonly<Record<string, unknown>>,
  principals: readonly Principal[],
  m: ClaimMapping,
): ClaimsOutcome {
  const userClaim = m.userClaim ?? DEFAULT_USER_CLAIM;
  const sub = claims['sub'];
  const iss = claims['iss'];
  const user = claims[userClaim];
  if (typeof sub !== 'string' || typeof iss !== 'string') {
    return { ok: false, user: null, why: 'the provider sent no subject or issuer' };
  }
  if (typeof user !== 'string' || user === '') {
    return { ok: false, user: null, why: `the provider sent no "${userClaim}" claim to know you by` };
  }
  const wanted = user.toLowerCase();
  const principal = principals.find(
    (p) => p.revokedAt === undefined && (p.id === wanted || p.email?.toLowerCase() === wanted),
  );
  const claimRoles = rolesFromClaims(claims, m);
  if (principal === undefined && claimRoles.length === 0) {
    return { ok: false, user, why: 'no leash user has this name or e-mail, and you hold no role here' };
  }
  const name = principal?.name ?? displayName(claims['name']) ?? displayName(user) ?? sub;
  const roles = [...new Set([...(principal?.roles ?? []), ...claimRoles])].sort();
  return {
    ok: true,
    claimRoles,
    identity: {
      kind: 'oidc',
      subject: sub,
      issuer: iss,
      name,
      ...(principal === undefined ? {} : { principal: principal.id }),
      roles,
    },
  };
}

/** Whether `value` is a role name a principal could hold. */
export function isRoleName(value: unknown): value is string {
  try {
    validRoles([value]);
    return true;
  } catch {
    return false;
  }
}

// The name is shown to people and recorded with each decision: one that could pass for another is not used.
function displayName(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const name = value.trim();
  return name === '' || name.length > 256 || hasHiddenCharacters(name) || !isWellFormed(name)
    ? undefined
    : name;
}
