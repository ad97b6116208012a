import type Database from 'better-sqlite3';
import type { AutonomyGuardrails } from '../../guardrails/AutonomyGuardrails.js';
import type { SpendCap } from '../../guardrails/caps.js';
import type { CapRef } from '../../guardrails/capLedger.js';
import { capWindowsFor, CapSession, checkedCap } from '../caps.js';
import type { CapView, CapWindowRecord, CapWrite } from '../GuardrailStore.js';
import { capOfRow, capText, windowOfRow, windowText } from '../sql/capRows.js';

// The spend caps of the SQLite store: their statements, the transactions that install and list them,
// and what an update transaction reads and writes of them.

type Stmt<P extends unknown[], R = unknown> = Database.Statement<P, R>;

interface CapRow {
  id: string;
  definition: string;
}

interface WindowRow {
  cap_id: string;
  scope: string;
  window_key: string;
  state: string;
}

export interface CapStatements {
  selectCaps: Stmt<[], CapRow>;
  upsertCap: Stmt<[string, string]>;
  deleteCap: Stmt<[string]>;
  deleteWindows: Stmt<[string]>;
  selectWindow: Stmt<[string, string, string], string>;
  upsertWindow: Stmt<[string, string, string, string]>;
  listWindows: Stmt<[], WindowRow>;
  listWindowsOf: Stmt<[string], WindowRow>;
}

export function prepareCapStatements(db: Database.Database, p: string): CapStatements {
  const listed = (where: string) =>
    `SELECT cap_id, scope, window_key, state FROM ${p}cap_windows ${where} ORDER BY cap_id, scope, window_key`;
  return {
    selectCaps: db.prepare(`SELECT id, definition FROM ${p}spend_caps ORDER BY id`),
    upsertCap: db.prepare(
      `INSERT INTO ${p}spend_caps (id, definition) VALUES (?, ?)
       ON CONFLICT (id) DO UPDATE SET definition = excluded.definition`,
    ),
    deleteCap: db.prepare(`DELETE FROM ${p}spend_caps WHERE id = ?`),
    deleteWindows: db.prepare(`DELETE FROM ${p}cap_windows WHERE cap_id = ?`),
    selectWindow: db
      .prepare<[string, string, string], string>(
        `SELECT state FROM ${p}cap_windows WHERE cap_id = ? AND scope = ? AND window_key = ?`,
      )
      .pluck(),
    upsertWindow: db.prepare(
      `INSERT INTO ${p}cap_windows (cap_id, scope, window_key, state) VALUES (?, ?, ?, ?)
       ON CONFLICT (cap_id, scope, window_key) DO UPDATE SET state = excluded.state`,
    ),
    listWindows: db.prepare(listed('')),
    listWindowsOf: db.prepare(listed('WHERE cap_id = ?')),
  };
}

const STORE = 'SqliteStore';

/** Installing, removing and listing caps, each in a transaction of its own. */
export type CapTransactions = ReturnType<typeof capTransactionsOf>;

export function capTransactionsOf(db: Database.Database, s: CapStatements) {
  const put = db.transaction((caps: readonly SpendCap[]) => {
    for (const cap of caps) s.upsertCap.run(cap.id, capText(cap));
  });
  const remove = db.transaction((id: string): boolean => {
    s.deleteWindows.run(id);
    return s.deleteCap.run(id).changes > 0;
  });
  return {
    put: (caps: readonly SpendCap[]) => put.immediate(caps.map((c, i) => checkedCap(c, `caps[${i}]`))),
    delete: (id: string) => remove.immediate(id),
    list: (): SpendCap[] => readCaps(s),
    windows: (capId: string | undefined): CapWindowRecord[] =>
      (capId === undefined ? s.listWindows.all() : s.listWindowsOf.all(capId)).map((r) => ({
        cap: r.cap_id,
        scope: r.scope,
        window: r.window_key,
        state: windowOfRow(`window ${r.window_key} of cap "${r.cap_id}"`, r.state, STORE),
      })),
  };
}

function readCaps(s: CapStatements): SpendCap[] {
  return s.selectCaps.all().map((r) => capOfRow(r.id, r.definition, STORE));
}

/**
 * The caps one update transaction works with: the stored caps (read once, and kept while no other
 * connection writes: `forget` drops them), the windows read and written by its updates, and the write
 * of those at its end.
 */
export class CapsInTransaction {
  readonly statements: CapStatements;
  readonly #s: CapStatements;
  #caps: SpendCap[] | undefined;
  #session: CapSession | undefined;

  constructor(s: CapStatements) {
    this.statements = s;
    this.#s = s;
  }

  /** Forgets the caps read, when another connection may have changed them. */
  forget(): void {
    this.#caps = undefined;
  }

  /** Starts a transaction's windows afresh. */
  begin(): void {
    this.#session = undefined;
  }

  /** The view an update of plan state `g` at `at` is given. */
  view(g: AutonomyGuardrails | null, at: number): CapView {
    this.#caps ??= readCaps(this.#s);
    const session = (this.#session ??= new CapSession((ref: CapRef) => {
      const text = this.#s.selectWindow.get(ref.cap, ref.scope, ref.window);
      return text === undefined
        ? undefined
        : windowOfRow(`window ${ref.window} of cap "${ref.cap}"`, text, STORE);
    }));
    return session.view(capWindowsFor(this.#caps, g, at), at);
  }

  /** Keeps what an update wrote, for the end of the transaction. */
  keep(writes: readonly CapWrite[]): void {
    if (writes.length > 0) this.#session?.keep(writes);
  }

  /** Writes every window the transaction's updates changed. */
  write(): void {
    for (const { ref, state } of this.#session?.written ?? []) {
      this.#s.upsertWindow.run(ref.cap, ref.scope, ref.window, windowText(state));
    }
    this.#session = undefined;
  }
}
