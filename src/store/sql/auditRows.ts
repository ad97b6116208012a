import { AuditEntry } from '../../audit/AuditEntry.js';
import { isSerializableTimestamp } from '../../iso.js';
import type { ChainedEntry, MalformedEntry } from '../../audit/chain.js';
import { describeValue, errorText, GuardrailError } from '../../errors.js';
import { isGuardrailEventType } from '../../events.js';
import { copyJsonObject } from '../../json.js';

/**
 * An audit entry as a store keeps it, one column a field. The stores that keep rows read their entries
 * back through {@link entryFromRow}, {@link chainedFromRow} and {@link logEntryFromRow}, so each decodes
 * what it wrote by the same rule: a known event type, whole epoch milliseconds within the years 0000-9999,
 * and details that are JSON text of an object. Limits on what comes in (the 4 KiB of `AuditEntry.create`,
 * the metadata limits) are not applied again: an entry the store accepted reads back as it was written,
 * as it does from MemoryStore, which keeps the entries themselves.
 */
export interface EntryRow {
  readonly seq: number;
  readonly eventType: unknown;
  /** Epoch milliseconds. */
  readonly timestamp: unknown;
  /** The details as JSON text. */
  readonly details: unknown;
}

/** An entry row with the chain fields it was stored with (NULL for rows written before the chain). */
export interface LogRow extends EntryRow {
  readonly prev: string | null;
  readonly hash: string | null;
}

/** The entry a row holds; throws a plain Error saying what is wrong with it. */
function decode(row: EntryRow): AuditEntry {
  const { eventType, timestamp, details } = row;
  if (!isGuardrailEventType(eventType)) throw new Error(`unknown event type ${describeValue(eventType)}`);
  if (!isSerializableTimestamp(timestamp) || !Number.isInteger(timestamp)) {
    throw new Error(
      `timestamp must be whole epoch milliseconds within the years 0000-9999, got ${describeValue(timestamp)}`,
    );
  }
  if (typeof details !== 'string') throw new Error('details are not JSON text');
  let parsed: unknown;
  try {
    parsed = JSON.parse(details);
  } catch {
    throw new Error('details are not valid JSON');
  }
  return AuditEntry.trusted(eventType, timestamp, copyJsonObject(parsed, 'details').value);
}

/** The entry a stored row holds; a row that cannot be decoded makes the store refuse (`STORE_CORRUPT`). */
export function entryFromRow(planId: string, row: EntryRow, store: string): AuditEntry {
  try {
    return decode(row);
  } catch (error) {
    throw new GuardrailError(
      'STORE_CORRUPT',
      `${store} holds audit entry ${row.seq} of plan ${describeValue(planId)}, which cannot be read: ${errorText(error)}`,
      { cause: error },
    );
  }
}

/** A stored entry of the log as it is: a tampered prev or hash is for the verifier to find. */
export function chainedFromRow(planId: string, row: LogRow, store: string): ChainedEntry {
  return chainedOf(planId, row, entryFromRow(planId, row, store));
}

/**
 * A stored row of the log for a verifier: the entry it holds, or, for a row that cannot be decoded, a
 * {@link MalformedEntry} saying why, with the chain fields as stored so that the rows around it still link.
 */
export function logEntryFromRow(planId: string, row: LogRow): ChainedEntry | MalformedEntry {
  let entry: AuditEntry;
  try {
    entry = decode(row);
  } catch (error) {
    return Object.freeze({
      planId,
      seq: row.seq,
      prev: row.prev ?? '',
      hash: row.hash ?? '',
      malformed: errorText(error),
    });
  }
  return chainedOf(planId, row, entry);
}

function chainedOf(planId: string, row: LogRow, entry: AuditEntry): ChainedEntry {
  return { planId, seq: row.seq, prev: row.prev ?? '', hash: row.hash ?? '', entry: entry.toJSON() };
}
