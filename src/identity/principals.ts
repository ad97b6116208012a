// What a principal may be: its id, name, roles and e-mail address, checked before the store sees them.
import { invalid } from '../errors.js';
import { isPlainObject, isWellFormed, notWellFormed } from '../json.js';
import { hasHiddenCharacters } from '../unicode.js';

export const MAX_PRINCIPAL_ID_LENGTH = 128;
export const MAX_PRINCIPAL_NAME_LENGTH = 256;
export const MAX_ROLES = 32;
export const MAX_EMAIL_LENGTH = 254;

/** A principal's id, and a role's name, as the whole of a string. */
export const PRINCIPAL_ID = /^[a-z0-9._@-]{1,128}$/;
export const ROLE = /^[a-z][a-z0-9_-]{0,63}$/;
// One `@` between a local part and a domain with a dot, no space: what an ID token's `email` claim holds.
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** What `addPrincipal` is given: a principal as a person describes it. */
export interface PrincipalInit {
  readonly id: string;
  readonly name: string;
  readonly roles?: readonly string[];
  readonly email?: string;
}

/** A principal's id: lower-case letters, digits, `.`, `_`, `-` and `@`, 1 to 128 characters. */
export function validPrincipalId(value: unknown, field = 'id'): string {
  if (typeof value !== 'string' || !PRINCIPAL_ID.test(value)) {
    invalid(
      field,
      `1 to ${MAX_PRINCIPAL_ID_LENGTH} lower-case letters, digits, ".", "_", "-" or "@" (like "ann" or "ann@example.com")`,
      value,
    );
  }
  return value;
}

/** The name shown to people: 1 to 256 characters, none control or invisible, trimmed. */
export function validPrincipalName(value: unknown, field = 'name'): string {
  if (
    typeof value !== 'string' ||
    value.trim().length === 0 ||
    value.length > MAX_PRINCIPAL_NAME_LENGTH ||
    hasHiddenCharacters(value)
  ) {
    invalid(
      field,
      `a name of 1 to ${MAX_PRINCIPAL_NAME_LENGTH} characters, none of them control or invisible`,
      value,
    );
  }
  if (!isWellFormed(value)) notWellFormed(value, field);
  return value.trim();
}

/** Role names (`[a-z][a-z0-9_-]*`, at most 64 characters), at most 32, returned sorted without repeats. */
export function validRoles(value: unknown, field = 'roles'): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) invalid(field, 'an array of role names', value);
  const roles = new Set<string>();
  value.forEach((role: unknown, i) => {
    if (typeof role !== 'string' || !ROLE.test(role)) {
      invalid(
        `${field}[${i}]`,
        'a role name: a lower-case letter, then up to 63 lower-case letters, digits, "_" or "-"',
        role,
      );
    }
    roles.add(role);
  });
  if (roles.size > MAX_ROLES) invalid(field, `at most ${MAX_ROLES} roles`, value);
  return [...roles].sort();
}

/** An e-mail address: `local@domain.tld`, no spaces, at most 254 characters. */
export function validEmail(value: unknown, field = 'email'): string {
  if (typeof value !== 'string' || value.length > MAX_EMAIL_LENGTH || !EMAIL.test(value)) {
    invalid(
      field,
      `an e-mail address of at most ${MAX_EMAIL_LENGTH} characters, like "ann@example.com"`,
      value,
    );
  }
  if (hasHiddenCharacters(value))
    invalid(field, 'an e-mail address without control or invisible characters', value);
  if (!isWellFormed(value)) notWellFormed(value, field);
  return value;
}

/** A principal as a person described it, checked in full: its fields as the store keeps them. */
export function validPrincipalInit(value: unknown): {
  id: string;
  name: string;
  roles: string[];
  email?: string;
} {
  if (!isPlainObject(value)) invalid('principal', 'an object with id, name and roles', value);
  const id = validPrincipalId(value['id']);
  const name = validPrincipalName(value['name']);
  const roles = validRoles(value['roles']);
  const email = value['email'];
  return email === undefined ? { id, name, roles } : { id, name, roles, email: validEmail(email) };
}
