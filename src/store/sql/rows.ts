import type { Checkpoint } from '../../audit/chain.js';
import { describeValue, errorText, GuardrailError } from '../../errors.js';
import { AutonomyGuardrails } from '../../guardrails/AutonomyGuardrails.js';

// How the SQL stores read a plan's guardrails and its checkpoints back from their rows: one rule for both.

/**
 * The guardrails a plan's row holds (as JSON text), validated as they are read: a damaged row makes the
 * store refuse (`STORE_CORRUPT`), never allow.
 */
export function guardrailsFromRow(planId: string, json: string, store: string): AutonomyGuardrails {
  try {
    return AutonomyGuardrails.fromJSON(JSON.parse(json));
  } catch (error) {
    throw new GuardrailError(
      'STORE_CORRUPT',
      `${store} holds guardrails of plan ${describeValue(planId)}, which cannot be read: ${errorText(error)}`,
      { cause: error },
    );
  }
}

/** A checkpoint row as it is stored (a size as a driver returns a big integer: a number or its text). */
export interface CheckpointRow {
  readonly size: number | string;
  readonly head: string;
  readonly ts: string;
  readonly signature: string | null;
}

/** A stored checkpoint as it is: a tampered one is for the verifier to find. */
export function checkpointFromRow(planId: string, row: CheckpointRow): Checkpoint {
  const cp = { plan: planId, size: Number(row.size), head: row.head, ts: row.ts };
  return Object.freeze(row.signature === null ? cp : { ...cp, signature: row.signature });
}

/**
 * What `read` makes of a row, read with the checks its writer made: a row that fails them, which no
 * writer could have written, makes the store refuse (`STORE_CORRUPT`), naming `what` it holds.
 */
export function readRecord<T>(store: string, what: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    throw new GuardrailError('STORE_CORRUPT', `${store} holds ${what} it cannot read: ${errorText(error)}`, {
      cause: error,
    });
  }
}
