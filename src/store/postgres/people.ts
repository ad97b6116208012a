import type { Pool } from 'pg';
import { describeValue } from '../../errors.js';
import { storedText } from '../fields.js';
import type { PersonalToken, Principal } from '../people.js';
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
  type TokenRow,
} from '../sql/peopleRows.js';
import { causeOf, query, write } from './connection.js';
import type { Tables } from './schema.js';

// The principals and personal tokens of the PostgreSQL store: each write one statement, atomic as it is.

const STORE = 'PostgresStore';
/** PostgreSQL's unique_violation: on the tokens table, only the index on the hash can raise it. */
const UNIQUE_VIOLATION = '23505';

export class PostgresPeople {
  readonly #pool: Pool;
  /** Resolves once the store may be used (open, its schema checked). */
  readonly #usable: () => Promise<void>;
  readonly #sql: ReturnType<typeof peopleStatements>;

  constructor(t: Tables, pool: Pool, usable: () => Promise<void>) {
    this.#pool = pool;
    this.#usable = usable;
    this.#sql = peopleStatements(t);
  }

  async putPrincipal(principal: Principal): Promise<void> {
    const values = principalRowValues(principal);
    await this.#usable();
    await write(this.#pool, `store principal ${describeValue(values[0])}`, this.#sql.upsertPrincipal, values);
  }

  async getPrincipal(id: string): Promise<Principal | null> {
    storedText(id, 'id');
    await this.#usable();
    const found = await query<PrincipalRow>(this.#pool, 'read a principal', this.#sql.getPrincipal, [id]);
    return found.rows[0] === undefined ? null : principalFromRow(found.rows[0], STORE);
  }

  async listPrincipals(): Promise<Principal[]> {
    await this.#usable();
    const found = await query<PrincipalRow>(this.#pool, 'list principals', this.#sql.listPrincipals, []);
    return found.rows.map((r) => principalFromRow(r, STORE));
  }

  async putToken(token: PersonalToken): Promise<void> {
    const values = tokenRowValues(token);
    await this.#usable();
    try {
      await write(this.#pool, `store token ${describeValue(values[0])}`, this.#sql.upsertToken, values);
    } catch (error) {
      const code = (causeOf(error) as { code?: unknown } | null)?.code;
      throw code === UNIQUE_VIOLATION ? hashTaken(values[0]) : error;
    }
  }

  async findToken(hash: string): Promise<PersonalToken | null> {
    storedText(hash, 'hash');
    await this.#usable();
    const found = await query<TokenRow>(this.#pool, 'find a personal token', this.#sql.findToken, [hash]);
    return found.rows[0] === undefined ? null : tokenFromRow(found.rows[0], STORE);
  }

  async listTokens(filter: { readonly principalId?: string } | undefined): Promise<PersonalToken[]> {
    const principalId = tokenFilter(filter);
    await this.#usable();
    const doing = 'list personal tokens';
    const found =
      principalId === undefined
        ? await query<TokenRow>(this.#pool, doing, this.#sql.listTokens, [])
        : await query<TokenRow>(this.#pool, doing, this.#sql.listTokensOf, [principalId]);
    return found.rows.map((r) => tokenFromRow(r, STORE));
  }
}

function peopleStatements(t: Tables) {
  const placeholders = (columns: string) => columns.split(', ').map((_c, i) => `$${i + 1}`);
  const tokensInOrder = 'ORDER BY created_at COLLATE "C", id COLLATE "C"';
  return {
    upsertPrincipal: `INSERT INTO ${t.principals} (${PRINCIPAL_COLUMNS})
      VALUES (${placeholders(PRINCIPAL_COLUMNS).join(', ')})
      ON CONFLICT (id) DO UPDATE SET ${upsertSet(PRINCIPAL_COLUMNS)}`,
    getPrincipal: `SELECT ${PRINCIPAL_COLUMNS} FROM ${t.principals} WHERE id = $1`,
    listPrincipals: `SELECT ${PRINCIPAL_COLUMNS} FROM ${t.principals} ORDER BY id COLLATE "C"`,
    upsertToken: `INSERT INTO ${t.tokens} (${TOKEN_COLUMNS}) VALUES (${placeholders(TOKEN_COLUMNS).join(', ')})
      ON CONFLICT (id) DO UPDATE SET ${upsertSet(TOKEN_COLUMNS)}`,
    findToken: `SELECT ${TOKEN_COLUMNS} FROM ${t.tokens} WHERE hash = $1`,
    listTokens: `SELECT ${TOKEN_COLUMNS} FROM ${t.tokens} ${tokensInOrder}`,
    listTokensOf: `SELECT ${TOKEN_COLUMNS} FROM ${t.tokens} WHERE principal_id = $1 ${tokensInOrder}`,
  };
}
