import type Database from 'better-sqlite3';
import { driver } from '../drivers.js';
import type { PersonalToken, Principal } from '../people.js';
import { storedText } from '../fields.js';
import { hashTaken, tokenFilter } from '../peopleRecords.js';
import {
  PRINCIPAL_COLUMNS,
  principalFromRow,
  principalRowValues,
  TOKEN_COLUMNS,
  tokenFromRow,
  tokenRowValues,
  upsertSet,
  type PrincipalRow,
  type PrincipalRowValues,
  type TokenRow,
  type TokenRowValues,
} from '../sql/peopleRows.js';

// The principals and personal tokens of the SQLite store; each write in an immediate transaction.

const STORE = 'SqliteStore';

export type SqlitePeople = ReturnType<typeof sqlitePeople>;

/** The principals and tokens in the tables of `db` named with prefix `p`. */
export function sqlitePeople(db: Database.Database, p: string) {
  const placeholders = (columns: string) => columns.split(', ').map(() => '?');
  const upsertPrincipal = db.prepare<PrincipalRowValues>(
    `INSERT INTO ${p}principals (${PRINCIPAL_COLUMNS}) VALUES (${placeholders(PRINCIPAL_COLUMNS)})
     ON CONFLICT (id) DO UPDATE SET ${upsertSet(PRINCIPAL_COLUMNS)}`,
  );
  const selectPrincipal = db.prepare<[string], PrincipalRow>(
    `SELECT ${PRINCIPAL_COLUMNS} FROM ${p}principals WHERE id = ?`,
  );
  const listPrincipals = db.prepare<[], PrincipalRow>(
    `SELECT ${PRINCIPAL_COLUMNS} FROM ${p}principals ORDER BY id`,
  );
  const upsertToken = db.prepare<TokenRowValues>(
    `INSERT INTO ${p}tokens (${TOKEN_COLUMNS}) VALUES (${placeholders(TOKEN_COLUMNS)})
     ON CONFLICT (id) DO UPDATE SET ${upsertSet(TOKEN_COLUMNS)}`,
  );
  const selectToken = db.prepare<[string], TokenRow>(
    `SELECT ${TOKEN_COLUMNS} FROM ${p}tokens WHERE hash = ?`,
  );
  const listTokens = db.prepare<[], TokenRow>(
    `SELECT ${TOKEN_COLUMNS} FROM ${p}tokens ORDER BY created_at, id`,
  );
  const listTokensOf = db.prepare<[string], TokenRow>(
    `SELECT ${TOKEN_COLUMNS} FROM ${p}tokens WHERE principal_id = ? ORDER BY created_at, id`,
  );
  const putPrincipal = db.transaction((values: PrincipalRowValues) => upsertPrincipal.run(...values));
  const putToken = db.transaction((values: TokenRowValues) => upsertToken.run(...values));
  return {
    putPrincipal(principal: Principal): void {
      putPrincipal.immediate(principalRowValues(principal));
    },
    getPrincipal(id: string): Principal | null {
      const row = selectPrincipal.get(storedText(id, 'id'));
      return row === undefined ? null : principalFromRow(row, STORE);
    },
    listPrincipals(): Principal[] {
      return listPrincipals.all().map((r) => principalFromRow(r, STORE));
    },
    /** The table's unique index on the hash refuses one another token has. */
    putToken(token: PersonalToken): void {
      const values = tokenRowValues(token);
      try {
        putToken.immediate(values);
      } catch (error) {
        const { SqliteError } = driver('better-sqlite3');
        if (error instanceof SqliteError && error.code === 'SQLITE_CONSTRAINT_UNIQUE') {
          throw hashTaken(values[0]);
        }
        throw error;
      }
    },
    findToken(hash: string): PersonalToken | null {
      const row = selectToken.get(storedText(hash, 'hash'));
      return row === undefined ? null : tokenFromRow(row, STORE);
    },
    listTokens(filter: { readonly principalId?: string } | undefined): PersonalToken[] {
      const principalId = tokenFilter(filter);
      const rows = principalId === undefined ? listTokens.all() : listTokensOf.all(principalId);
      return rows.map((r) => tokenFromRow(r, STORE));
    },
  };
}
