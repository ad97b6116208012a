import { GuardrailError, invalid } from '../../errors.js';
import { APPROVAL_STATUSES, type Approval, type ApprovalStatus } from '../GuardrailStore.js';
import { reviewFromText, reviewText } from '../approvalReview.js';
import { readRecord } from './rows.js';

/** The columns of an approval row, in the order {@link approvalRowValues} gives their values. */
export const APPROVAL_COLUMNS =
  'id, plan_id, decision_id, operation, input_hash, requested_at, expires_at, status, ' +
  'decided_by, decided_at, reason, used_at, tool_name, input_preview, review';

const COLUMN_NAMES = APPROVAL_COLUMNS.split(', ');

/** `column = excluded.column` for every column but the id: what replacing an approval's row sets. */
export const APPROVAL_UPDATES = COLUMN_NAMES.slice(1)
  .map((c) => `${c} = excluded.${c}`)
  .join(', ');

/** The placeholders of an approval row's values: `?, ?, …` (SQLite) or `$1, $2, …` (PostgreSQL). */
export function approvalPlaceholders(style: '?' | '$'): string {
  return COLUMN_NAMES.map((_c, i) => (style === '?' ? '?' : `$${i + 1}`)).join(', ');
}

/** An approval as a SQL store keeps it: one column a field, NULL for an absent one. */
export interface ApprovalRow {
  id: string;
  plan_id: string;
  decision_id: string;
  operation: string;
  input_hash: string;
  requested_at: string;
  expires_at: string;
  status: string;
  decided_by: string | null;
  decided_at: string | null;
  reason: string | null;
  used_at: string | null;
  tool_name: string | null;
  input_preview: string | null;
  /** The approval's review fields (notify, requester, rule, votes, decider) as JSON; NULL when it has none. */
  review: string | null;
}

export type ApprovalRowValues = [
  string,
  string,
  string,
  string,
  string,
  string,
  string,
  string,
  string | null,
  string | null,
  string | null,
  string | null,
  string | null,
  string | null,
  string | null,
];

const REQUIRED = [
  'id',
  'planId',
  'decisionId',
  'operation',
  'inputHash',
  'requestedAt',
  'expiresAt',
] as const;
const OPTIONAL = ['decidedBy', 'decidedAt', 'reason', 'usedAt', 'toolName', 'inputPreview'] as const;
// A lone surrogate is stored as U+FFFD and NUL ends a C string: either would change what is kept.
const LONE_SURROGATE = /\p{Cs}/u;

function storable(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.includes('\0') || LONE_SURROGATE.test(value)) {
    invalid(field, 'a string of well-formed Unicode without NUL', value);
  }
  return value;
}

/** The row values of an approval, in {@link APPROVAL_COLUMNS} order, each checked to be storable. */
export function approvalRowValues(a: Approval): ApprovalRowValues {
  const required = REQUIRED.map((key) => storable(a[key], `approval.${key}`));
  if (!APPROVAL_STATUSES.includes(a.status))
    invalid('approval.status', `one of ${APPROVAL_STATUSES.join(', ')}`, a.status);
  const optional = OPTIONAL.map((key) => (a[key] === undefined ? null : storable(a[key], `approval.${key}`)));
  return [...required, a.status, ...optional, reviewText(a)] as ApprovalRowValues;
}

/** The approval a row holds; a row no writer could have written makes the store refuse (`STORE_CORRUPT`). */
export function approvalFromRow(row: ApprovalRow, store: string): Approval {
  if (!APPROVAL_STATUSES.includes(row.status as ApprovalStatus)) {
    throw new GuardrailError(
      'STORE_CORRUPT',
      `${store} holds approval "${row.id}" with unknown status "${row.status}"`,
    );
  }
  const review =
    row.review === null
      ? {}
      : readRecord(store, `approval "${row.id}"`, () => reviewFromText(row.review as string));
  return Object.freeze({
    id: row.id,
    planId: row.plan_id,
    decisionId: row.decision_id,
    operation: row.operation,
    ...(row.tool_name === null ? {} : { toolName: row.tool_name }),
    ...(row.input_preview === null ? {} : { inputPreview: row.input_preview }),
    inputHash: row.input_hash,
    requestedAt: row.requested_at,
    expiresAt: row.expires_at,
    status: row.status as ApprovalStatus,
    ...(row.decided_by === null ? {} : { decidedBy: row.decided_by }),
    ...(row.decided_at === null ? {} : { decidedAt: row.decided_at }),
    ...(row.reason === null ? {} : { reason: row.reason }),
    ...(row.used_at === null ? {} : { usedAt: row.used_at }),
    ...review,
  });
}
