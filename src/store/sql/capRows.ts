import { GuardrailError, isGuardrailError } from '../../errors.js';
import { spendCapFromJson, spendCapToJson, type SpendCap } from '../../guardrails/caps.js';
import { capWindowFromJson, capWindowToJson, type CapWindowState } from '../../guardrails/capLedger.js';

// How the SQL stores keep spend caps and their windows: each as JSON text in a row of its own.

/** A cap as a row keeps it. */
export function capText(cap: SpendCap): string {
  return JSON.stringify(spendCapToJson(cap));
}

/** A window's state as a row keeps it. */
export function windowText(state: CapWindowState): string {
  return JSON.stringify(capWindowToJson(state));
}

/** Reads back what {@link capText} wrote; a row that does not read is `STORE_CORRUPT`. */
export function capOfRow(id: string, text: string, store: string): SpendCap {
  return readRow(() => spendCapFromJson(JSON.parse(text) as unknown, `cap "${id}"`), store);
}

/** Reads back what {@link windowText} wrote; a row that does not read is `STORE_CORRUPT`. */
export function windowOfRow(what: string, text: string, store: string): CapWindowState {
  return readRow(() => capWindowFromJson(JSON.parse(text) as unknown, what), store);
}

function readRow<T>(read: () => T, store: string): T {
  try {
    return read();
  } catch (error) {
    const why = isGuardrailError(error) || error instanceof SyntaxError ? error.message : String(error);
    throw new GuardrailError('STORE_CORRUPT', `${store} holds a spend cap row it cannot read: ${why}`, {
      cause: error,
    });
  }
}
