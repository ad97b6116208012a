// What `leash users` and `leash tokens` print, and how `--expires-in` reads a lifetime.
import { invalid } from '../errors.js';
import { parseIsoMs } from '../iso.js';
import type { PersonalToken, Principal } from '../store/people.js';
import { safe, table } from './format.js';

const UNIT_SECONDS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86_400 };
const LIFETIME = /^([1-9][0-9]{0,9})([smhd])$/;

/** `90d`, `12h`, `30m` or `3600s` as seconds. */
export function parseExpiresIn(text: string): number {
  return parseLifetime(text, '--expires-in');
}

/** `90d`, `12h`, `30m` or `3600s` as seconds; `field` names the option in the error. */
export function parseLifetime(text: string, field: string): number {
  const m = LIFETIME.exec(text);
  if (m === null) invalid(field, 'a whole number and a unit: s, m, h or d (like 90d, 12h, 3600s)', text);
  return Number(m[1]) * (UNIT_SECONDS[m[2] as string] as number);
}

/** `leash users list` as a table. */
export function principalsTable(list: readonly Principal[]): string {
  return table(
    ['ID', 'NAME', 'ROLES', 'EMAIL', 'CREATED', 'REVOKED'],
    list.map((p) => [
      p.id,
      safe(p.name),
      p.roles.length === 0 ? '-' : p.roles.join(','),
      p.email === undefined ? '-' : safe(p.email),
      p.createdAt,
      p.revokedAt ?? '-',
    ]),
  );
}

/** A token as `leash tokens` prints it for scripts: its record without the hash. */
export function tokenJson(t: PersonalToken): Omit<PersonalToken, 'hash'> {
  const { hash: _hash, ...shown } = t;
  return shown;
}

/** `leash tokens list` as a table; an expiry passed at `nowMs` is marked so. */
export function tokensTable(list: readonly PersonalToken[], nowMs: number): string {
  return table(
    ['ID', 'USER', 'LABEL', 'CREATED', 'EXPIRES', 'REVOKED'],
    list.map((t) => [
      t.id,
      t.principalId,
      t.label === undefined ? '-' : safe(t.label),
      t.createdAt,
      t.expiresAt === undefined
        ? 'never'
        : `${t.expiresAt}${parseIsoMs(t.expiresAt) > nowMs ? '' : ' (expired)'}`,
      t.revokedAt ?? '-',
    ]),
  );
}
