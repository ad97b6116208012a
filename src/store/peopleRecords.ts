import { GuardrailError, invalid } from '../errors.js';
import { objectWithKeys } from '../guardrails/validate.js';
import { oneOf, optional, storedInteger, storedName, storedNames, storedText, storedTime } from './fields.js';
import type { ApprovalRule, ApprovalVote, DeciderIdentity, PersonalToken, Principal } from './people.js';

// The records of people as every store checks and copies them: principals, personal tokens, and the
// identities, rules and votes approvals carry. What they mean is for `identity/` to decide; a store only
// refuses what it could not keep, or could not have written.

const PRINCIPAL_KEYS = ['id', 'name', 'roles', 'email', 'createdAt', 'revokedAt'] as const;
const TOKEN_KEYS = ['id', 'principalId', 'hash', 'label', 'createdAt', 'expiresAt', 'revokedAt'] as const;
const IDENTITY_KEYS = ['kind', 'subject', 'name', 'issuer', 'principal', 'roles'] as const;
const RULE_KEYS = ['name', 'approvers', 'quorum', 'selfApproval', 'onTimeout', 'elicitation'] as const;
const VOTE_KEYS = ['by', 'at', 'reason'] as const;

/** Every kind of {@link DeciderIdentity}. */
export const DECIDER_KINDS = Object.freeze(['token', 'oidc', 'operator', 'elicitation', 'system'] as const);

/** Most approvers a rule names, and most people a quorum asks for. */
export const MAX_APPROVERS = 1000;

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** `value` as an object of `keys` only: anything else is refused, naming `field`. */
function record(value: unknown, field: string, keys: readonly string[]): Record<string, unknown> {
  if (value === undefined) invalid(field, 'an object', value);
  return objectWithKeys(value, field, keys);
}

/** A principal as a store keeps it: checked, and copied into a frozen object. */
export function checkedPrincipal(value: unknown, field = 'principal'): Principal {
  const p = record(value, field, PRINCIPAL_KEYS);
  return Object.freeze({
    id: storedName(p['id'], `${field}.id`),
    name: storedText(p['name'], `${field}.name`),
    roles: storedNames(p['roles'], `${field}.roles`),
    ...optional('email', p['email'], (v) => storedName(v, `${field}.email`)),
    createdAt: storedTime(p['createdAt'], `${field}.createdAt`),
    ...optional('revokedAt', p['revokedAt'], (v) => storedTime(v, `${field}.revokedAt`)),
  });
}

/** A personal token as a store keeps it: checked (its hash a SHA-256 in lower-case hex), copied, frozen. */
export function checkedToken(value: unknown, field = 'token'): PersonalToken {
  const t = record(value, field, TOKEN_KEYS);
  return Object.freeze({
    id: storedName(t['id'], `${field}.id`),
    principalId: storedName(t['principalId'], `${field}.principalId`),
    hash: tokenHash(t['hash'], `${field}.hash`),
    ...optional('label', t['label'], (v) => storedText(v, `${field}.label`)),
    createdAt: storedTime(t['createdAt'], `${field}.createdAt`),
    ...optional('expiresAt', t['expiresAt'], (v) => storedTime(v, `${field}.expiresAt`)),
    ...optional('revokedAt', t['revokedAt'], (v) => storedTime(v, `${field}.revokedAt`)),
  });
}

/** A token's hash: 64 lower-case hex digits. Never the token itself. */
export function tokenHash(value: unknown, field = 'hash'): string {
  if (typeof value !== 'string' || !SHA256_HEX.test(value)) {
    invalid(field, 'a SHA-256 in lower-case hex (64 digits)', value);
  }
  return value;
}

/** Who decided, checked and copied. */
export function checkedIdentity(value: unknown, field: string): DeciderIdentity {
  const d = record(value, field, IDENTITY_KEYS);
  return Object.freeze({
    kind: oneOf(d['kind'], `${field}.kind`, DECIDER_KINDS),
    subject: storedName(d['subject'], `${field}.subject`),
    name: storedText(d['name'], `${field}.name`),
    ...optional('issuer', d['issuer'], (v) => storedName(v, `${field}.issuer`)),
    ...optional('principal', d['principal'], (v) => storedName(v, `${field}.principal`)),
    ...optional('roles', d['roles'], (v) => storedNames(v, `${field}.roles`)),
  });
}

/** The rule an approval was opened under, checked and copied. */
export function checkedRule(value: unknown, field: string): ApprovalRule {
  const r = record(value, field, RULE_KEYS);
  const approvers = storedNames(r['approvers'], `${field}.approvers`);
  if (approvers.length > MAX_APPROVERS) invalid(`${field}.approvers`, `at most ${MAX_APPROVERS}`, approvers);
  if (typeof r['selfApproval'] !== 'boolean')
    invalid(`${field}.selfApproval`, 'a boolean', r['selfApproval']);
  return Object.freeze({
    name: storedName(r['name'], `${field}.name`),
    approvers,
    quorum: storedInteger(r['quorum'], `${field}.quorum`, 1, MAX_APPROVERS),
    selfApproval: r['selfApproval'],
    onTimeout: oneOf(r['onTimeout'], `${field}.onTimeout`, ['deny'] as const),
    elicitation: oneOf(r['elicitation'], `${field}.elicitation`, ['allow', 'deny'] as const),
  });
}

/** One approval towards a quorum, checked and copied. */
export function checkedVote(value: unknown, field: string): ApprovalVote {
  const v = record(value, field, VOTE_KEYS);
  return Object.freeze({
    by: checkedIdentity(v['by'], `${field}.by`),
    at: storedText(v['at'], `${field}.at`),
    ...optional('reason', v['reason'], (r) => storedText(r, `${field}.reason`)),
  });
}

/** The error of a token whose hash another token has; it names the token stored, not the other. */
export function hashTaken(id: string): GuardrailError {
  return new GuardrailError('TOKEN_HASH_TAKEN', `token "${id}" has the hash of another token`);
}

/** The principal a token listing asks for, checked; undefined for every principal's. */
export function tokenFilter(filter: unknown): string | undefined {
  const principalId = objectWithKeys(filter, 'filter', ['principalId'])['principalId'];
  return principalId === undefined ? undefined : storedName(principalId, 'filter.principalId');
}
