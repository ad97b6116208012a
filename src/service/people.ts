// The people who decide, as the service offers them: principals, personal tokens, and authenticating a
// token, all over the service's store and on its clock (see `identity/`).
import { authenticate as authenticateToken } from '../identity/authenticate.js';
import * as directory from '../identity/directory.js';
import type { PrincipalInit } from '../identity/principals.js';
import type { NewToken, TokenOptions } from '../identity/tokens.js';
import type { DeciderIdentity, PersonalToken, Principal } from '../store/people.js';
import type { ServiceCore } from './core.js';

export type { PrincipalInit } from '../identity/principals.js';
export type { NewToken, TokenOptions } from '../identity/tokens.js';

export function addPrincipal(core: ServiceCore, init: PrincipalInit): Promise<Principal> {
  return directory.addPrincipal(core.store, core.clock, init);
}

export function revokePrincipal(core: ServiceCore, id: string): Promise<Principal> {
  return directory.revokePrincipal(core.store, core.clock, id);
}

export function listPrincipals(core: ServiceCore): Promise<Principal[]> {
  return directory.listPrincipals(core.store);
}

export function hasPrincipals(core: ServiceCore): Promise<boolean> {
  return directory.hasPrincipals(core.store);
}

export function createToken(
  core: ServiceCore,
  principalId: string,
  options?: TokenOptions,
): Promise<NewToken> {
  return directory.createToken(core.store, core.clock, principalId, options);
}

export function revokeToken(core: ServiceCore, id: string): Promise<PersonalToken> {
  return directory.revokeToken(core.store, core.clock, id);
}

export function listTokens(
  core: ServiceCore,
  filter?: { readonly principalId?: string },
): Promise<PersonalToken[]> {
  return directory.listTokens(core.store, filter);
}

export function authenticate(core: ServiceCore, token: string): Promise<DeciderIdentity> {
  return authenticateToken(core.store, core.clock, token);
}
