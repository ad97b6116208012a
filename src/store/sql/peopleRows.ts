import type { PersonalToken, Principal } from '../people.js';
import { checkedPrincipal, checkedToken } from '../peopleRecords.js';
import { readRecord } from './rows.js';

// How the SQL stores keep principals and personal tokens: one column a field, NULL for an absent one,
// a principal's roles as a JSON array.

/** The columns of a principal's row, in the order {@link principalRowValues} gives their values. */
export const PRINCIPAL_COLUMNS = 'id, name, roles, email, created_at, revoked_at';

export interface PrincipalRow {
  id: string;
  name: string;
  roles: string;
  email: string | null;
  created_at: string;
  revoked_at: string | null;
}

export type PrincipalRowValues = [string, string, string, string | null, string, string | null];

/** The row values of a principal, checked. */
export function principalRowValues(principal: Principal): PrincipalRowValues {
  const p = checkedPrincipal(principal);
  return [p.id, p.name, JSON.stringify(p.roles), p.email ?? null, p.createdAt, p.revokedAt ?? null];
}

/** The principal a row holds; one its writer would have refused makes the store refuse (`STORE_CORRUPT`). */
export function principalFromRow(row: PrincipalRow, store: string): Principal {
  return readRecord(store, `principal "${row.id}"`, () =>
    checkedPrincipal({
      id: row.id,
      name: row.name,
      roles: JSON.parse(row.roles) as unknown,
      ...(row.email === null ? {} : { email: row.email }),
      createdAt: row.created_at,
      ...(row.revoked_at === null ? {} : { revokedAt: row.revoked_at }),
    }),
  );
}

/** The columns of a token's row, in the order {@link tokenRowValues} gives their values. */
export const TOKEN_COLUMNS = 'id, principal_id, hash, label, created_at, expires_at, revoked_at';

export interface TokenRow {
  id: string;
  principal_id: string;
  hash: string;
  label: string | null;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
}

export type TokenRowValues = [string, string, string, string | null, string, string | null, string | null];

/** The row values of a personal token, checked. */
export function tokenRowValues(token: PersonalToken): TokenRowValues {
  const t = checkedToken(token);
  return [
    t.id,
    t.principalId,
    t.hash,
    t.label ?? null,
    t.createdAt,
    t.expiresAt ?? null,
    t.revokedAt ?? null,
  ];
}

/** The token a row holds; one its writer would have refused makes the store refuse (`STORE_CORRUPT`). */
export function tokenFromRow(row: TokenRow, store: string): PersonalToken {
  return readRecord(store, `token "${row.id}"`, () =>
    checkedToken({
      id: row.id,
      principalId: row.principal_id,
      hash: row.hash,
      ...(row.label === null ? {} : { label: row.label }),
      createdAt: row.created_at,
      ...(row.expires_at === null ? {} : { expiresAt: row.expires_at }),
      ...(row.revoked_at === null ? {} : { revokedAt: row.revoked_at }),
    }),
  );
}

/** `column = excluded.column` for every column of `columns` but the first (the id). */
export function upsertSet(columns: string): string {
  return columns
    .split(', ')
    .slice(1)
    .map((c) => `${c} = excluded.${c}`)
    .join(', ');
}
