import type { Pool, PoolClient } from 'pg';
import type { SpendCap } from '../../guardrails/caps.js';
import { refKey, type CapRef, type CapWindowState } from '../../guardrails/capLedger.js';
import { checkedCap, compareRefs, type CapWindows } from '../caps.js';
import type { CapWindowRecord, CapWrite } from '../GuardrailStore.js';
import { capOfRow, capText, windowOfRow, windowText } from '../sql/capRows.js';
import { query, transaction } from './connection.js';
import type { Tables } from './schema.js';
import { emptyWindow } from '../../guardrails/capLedger.js';

// The spend caps of the PostgreSQL store: installed and listed in transactions of their own, read and
// locked in an update's transaction, and the version a write decided from cached caps checks.

const STORE = 'PostgresStore';

/** The caps as read, with the version they were read at. */
export interface CapsRead {
  readonly version: string;
  readonly caps: readonly SpendCap[];
}

interface WindowRow {
  cap_id: string;
  scope: string;
  window_key: string;
  state: string;
}

export class PostgresCaps {
  readonly #t: Tables;
  readonly #pool: Pool;
  /** The caps as this store last read them: what a write from cache is decided from, checked by version. */
  cached: CapsRead | undefined;

  constructor(t: Tables, pool: Pool) {
    this.#t = t;
    this.#pool = pool;
  }

  /**
   * Reads the caps and their version (in `client`'s transaction, when given), and keeps them. The
   * definitions are sent only when the version is not the one kept: caps change rarely, and are read by
   * every transaction of a capped plan.
   */
  async read(client: Pool | PoolClient = this.#pool): Promise<CapsRead> {
    const t = this.#t;
    const kept = this.cached;
    const found = await query<{ version: string | null; id: string | null; definition: string | null }>(
      client,
      'read the spend caps',
      // Two plain scans, not a join: a join of tables without statistics is costed high enough for
      // the server to compile it (JIT) on every run, which took 3 ms here.
      `SELECT version::text AS version, NULL AS id, NULL AS definition FROM ${t.capsVersion}
       UNION ALL
       SELECT NULL, id, definition FROM ${t.spendCaps}
        WHERE (SELECT version FROM ${t.capsVersion}) IS DISTINCT FROM $1::bigint`,
      [kept?.version ?? null],
    );
    const version = found.rows.find((r) => r.version !== null)?.version ?? '0';
    if (kept !== undefined && version === kept.version) return kept;
    const caps = found.rows
      .filter((r) => r.id !== null)
      .map((r) => capOfRow(r.id as string, r.definition as string, STORE))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const read = { version, caps };
    this.cached = read;
    return read;
  }

  /**
   * Locks the windows an update reads, in `client`'s transaction, and reads their states: the windows
   * of the caps that apply are made (empty) when missing; those only the plan's reservations hold are
   * locked if they are still there. Locks are taken in one order (cap, scope, window) so that two
   * updates wait for each other rather than deadlock.
   */
  async lock(client: PoolClient, windows: CapWindows): Promise<Map<string, CapWindowState>> {
    const t = this.#t;
    const doing = 'lock spend cap windows';
    const states = new Map<string, CapWindowState>();
    const slots = [...windows.slots].sort((a, b) => compareRefs(a.ref, b.ref));
    if (slots.length > 0) {
      const made = await query<WindowRow>(
        client,
        doing,
        `INSERT INTO ${t.capWindows} (cap_id, scope, window_key, state)
           SELECT w.cap_id, w.scope, w.window_key, w.state
             FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS w(cap_id, scope, window_key, state, n)
             ORDER BY w.n
         ON CONFLICT (cap_id, scope, window_key) DO UPDATE SET state = ${t.capWindows}.state
         RETURNING cap_id, scope, window_key, state`,
        [
          slots.map((s) => s.ref.cap),
          slots.map((s) => s.ref.scope),
          slots.map((s) => s.ref.window),
          slots.map((s) => windowText(emptyWindow(s.span.startMs, s.span.endMs))),
        ],
      );
      for (const row of made.rows) states.set(rowKey(row), stateOf(row));
    }
    const others = windows.refs.filter((r) => !states.has(refKey(r))).sort(compareRefs);
    if (others.length > 0) {
      const held = await query<WindowRow>(
        client,
        doing,
        `SELECT c.cap_id, c.scope, c.window_key, c.state FROM ${t.capWindows} c
           JOIN unnest($1::text[], $2::text[], $3::text[]) AS w(cap_id, scope, window_key)
             ON c.cap_id = w.cap_id AND c.scope = w.scope AND c.window_key = w.window_key
           ORDER BY c.cap_id COLLATE "C", c.scope COLLATE "C", c.window_key COLLATE "C" FOR UPDATE OF c`,
        [others.map((r) => r.cap), others.map((r) => r.scope), others.map((r) => r.window)],
      );
      for (const row of held.rows) states.set(rowKey(row), stateOf(row));
    }
    return states;
  }

  /** Writes windows' new states in `client`'s transaction (their rows are locked). */
  async write(client: PoolClient, writes: readonly CapWrite[]): Promise<void> {
    if (writes.length === 0) return;
    const t = this.#t;
    await query(
      client,
      'write spend cap windows',
      `UPDATE ${t.capWindows} c SET state = w.state
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS w(cap_id, scope, window_key, state)
        WHERE c.cap_id = w.cap_id AND c.scope = w.scope AND c.window_key = w.window_key`,
      [
        writes.map((w) => w.ref.cap),
        writes.map((w) => w.ref.scope),
        writes.map((w) => w.ref.window),
        writes.map((w) => windowText(w.state)),
      ],
    );
  }

  /** Installs caps, all or nothing, and gives the caps a new version. */
  async put(caps: readonly SpendCap[]): Promise<void> {
    const checked = caps.map((c, i) => checkedCap(c, `caps[${i}]`));
    const t = this.#t;
    const doing = 'install spend caps';
    await transaction(this.#pool, doing, async (client) => {
      await query(
        client,
        doing,
        `INSERT INTO ${t.spendCaps} (id, definition)
           SELECT * FROM unnest($1::text[], $2::text[])
         ON CONFLICT (id) DO UPDATE SET definition = EXCLUDED.definition`,
        [checked.map((c) => c.id), checked.map(capText)],
      );
      await query(client, doing, `UPDATE ${t.capsVersion} SET version = version + 1`, []);
    });
    this.cached = undefined;
  }

  /** Removes a cap and its windows; true if it existed. */
  async delete(id: string): Promise<boolean> {
    const t = this.#t;
    const doing = `remove spend cap "${id}"`;
    const removed = await transaction(this.#pool, doing, async (client) => {
      await query(client, doing, `DELETE FROM ${t.capWindows} WHERE cap_id = $1`, [id]);
      const gone = await query(client, doing, `DELETE FROM ${t.spendCaps} WHERE id = $1`, [id]);
      await query(client, doing, `UPDATE ${t.capsVersion} SET version = version + 1`, []);
      return (gone.rowCount ?? 0) > 0;
    });
    this.cached = undefined;
    return removed;
  }

  async list(): Promise<SpendCap[]> {
    return [...(await this.read()).caps];
  }

  async windows(capId: string | undefined): Promise<CapWindowRecord[]> {
    const t = this.#t;
    const where = capId === undefined ? '' : 'WHERE cap_id = $1';
    const found = await query<WindowRow>(
      this.#pool,
      'list spend cap windows',
      `SELECT cap_id, scope, window_key, state FROM ${t.capWindows} ${where}
        ORDER BY cap_id COLLATE "C", scope COLLATE "C", window_key COLLATE "C"`,
      capId === undefined ? [] : [capId],
    );
    return found.rows.map((r) => ({
      cap: r.cap_id,
      scope: r.scope,
      window: r.window_key,
      state: stateOf(r),
    }));
  }
}

function rowKey(row: WindowRow): string {
  const ref: CapRef = { cap: row.cap_id, scope: row.scope, window: row.window_key };
  return refKey(ref);
}

function stateOf(row: WindowRow): CapWindowState {
  return windowOfRow(`window ${row.window_key} of cap "${row.cap_id}"`, row.state, STORE);
}
