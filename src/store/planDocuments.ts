import { GuardrailError, invalid } from '../errors.js';
import { intField, objectWithKeys } from '../guardrails/validate.js';
import { isPlainText } from '../unicode.js';
import { canonicalIso } from '../iso.js';
import { copyJsonObject } from '../json.js';
import { validatePlanId } from '../ids.js';
import type { PlanDocument, PlanDocumentInput, PlanListing } from './GuardrailStore.js';

/** Longest phase name a store keeps. */
export const MAX_PHASE_LENGTH = 64;
/** Largest plan document body a store keeps, as JSON text in UTF-8. */
export const MAX_PLAN_DOCUMENT_BYTES = 8 * 1024 * 1024;

/** A document ready to write: every field checked, the body as JSON text. */
export interface CheckedDocument {
  readonly planId: string;
  readonly phase: string;
  readonly body: string;
  readonly updatedAt: string;
  /** undefined: write whatever is stored; null: only if nothing is; n: only over revision n. */
  readonly expected: number | null | undefined;
}

/**
 * Checks a document before any write, so a store never half-applies one: the plan id, the phase (plain
 * text), the body (plain JSON within the size limit), the time (canonical ISO-8601) and the expected
 * revision.
 */
export function checkDocument(
  doc: PlanDocumentInput,
  options?: { expectedRevision?: number | null },
): CheckedDocument {
  const d = objectWithKeys(doc, 'document', ['planId', 'phase', 'body', 'updatedAt']);
  const planId = validatePlanId(d['planId']);
  const phase = d['phase'];
  if (
    typeof phase !== 'string' ||
    phase.length === 0 ||
    phase.length > MAX_PHASE_LENGTH ||
    !isPlainText(phase)
  ) {
    invalid(
      'document.phase',
      `a string of 1 to ${MAX_PHASE_LENGTH} characters without control characters`,
      phase,
    );
  }
  const { value, bytes } = copyJsonObject(d['body'], 'document.body');
  if (bytes > MAX_PLAN_DOCUMENT_BYTES) {
    invalid('document.body', `at most ${MAX_PLAN_DOCUMENT_BYTES} bytes of JSON`, `${bytes} bytes`);
  }
  const updatedAt = canonicalIso(d['updatedAt'], 'document.updatedAt');
  const o = objectWithKeys(options, 'options', ['expectedRevision']);
  const e = o['expectedRevision'];
  const expected =
    e === undefined || e === null ? e : (intField(e, 'options.expectedRevision', 1, false) as number);
  return { planId, phase, body: JSON.stringify(value), updatedAt, expected };
}

/** The revision a write over `current` (null: none stored) gets, or the conflict it is. */
export function nextRevision(doc: CheckedDocument, current: number | null): number {
  if (doc.expected !== undefined && doc.expected !== current) throw documentConflict(doc, current);
  return (current ?? 0) + 1;
}

/** The error of a conditional save that found another revision than it expected. */
export function documentConflict(doc: CheckedDocument, current: number | null): GuardrailError {
  const found = current === null ? 'has no saved document' : `document is at revision ${current}`;
  const expected = doc.expected === null ? 'none' : `revision ${doc.expected}`;
  return new GuardrailError(
    'PLAN_DOCUMENT_CONFLICT',
    `plan "${doc.planId}" ${found}, not ${expected} as expected: another writer saved it first`,
  );
}

/** A plan document as a SQL store keeps it. */
export interface DocumentRow {
  plan_id: string;
  phase: string;
  body: string;
  updated_at: string;
  /** PostgreSQL returns a bigint as text. */
  revision: number | string;
}

/** A stored document row as read back; a body that is not a JSON object makes the store refuse. */
export function documentFromRow(row: DocumentRow, store: string): PlanDocument {
  let body: unknown;
  try {
    body = JSON.parse(row.body);
  } catch (error) {
    throw new GuardrailError(
      'STORE_CORRUPT',
      `${store} holds an unreadable document for plan "${row.plan_id}"`,
      {
        cause: error,
      },
    );
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new GuardrailError(
      'STORE_CORRUPT',
      `${store} holds a document for plan "${row.plan_id}" that is not an object`,
    );
  }
  return Object.freeze({
    planId: row.plan_id,
    phase: row.phase,
    body: body as PlanDocument['body'],
    updatedAt: row.updated_at,
    revision: Number(row.revision),
  });
}

/** Plan listings in plan id order, merged from the configured plans and the saved documents. */
export function mergeListings(
  configured: Iterable<string>,
  documents: Iterable<{ planId: string; phase: string; updatedAt: string; revision: number | string }>,
): PlanListing[] {
  const configuredIds = new Set(configured);
  const byId = new Map<string, PlanListing>();
  for (const planId of configuredIds) byId.set(planId, { planId, configured: true, document: null });
  for (const d of documents) {
    const document = Object.freeze({ phase: d.phase, updatedAt: d.updatedAt, revision: Number(d.revision) });
    byId.set(d.planId, { planId: d.planId, configured: configuredIds.has(d.planId), document });
  }
  return [...byId.values()]
    .sort((a, b) => (a.planId < b.planId ? -1 : a.planId > b.planId ? 1 : 0))
    .map((l) => Object.freeze(l));
}
