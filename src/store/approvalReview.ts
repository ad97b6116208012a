import { invalid } from '../errors.js';
import { objectWithKeys } from '../guardrails/validate.js';
import { optional, storedNames, storedText } from './fields.js';
import type { Approval } from './GuardrailStore.js';
import { checkedIdentity, checkedRule, checkedVote, MAX_APPROVERS } from './peopleRecords.js';

// What an approval carries for a team's review of it: the targets to tell, the requester, the rule, the
// votes and the decider. Every store checks and copies them with the approval; the SQL stores keep them
// together as one JSON text, absent (NULL) for an approval that has none, which reads back as it was.

/** The fields of an approval's review, in the order an approval has them. */
export const REVIEW_KEYS = Object.freeze(['notify', 'requester', 'rule', 'votes', 'decider'] as const);

/** The review fields of an approval, those it has. */
export type ApprovalReview = Pick<Approval, (typeof REVIEW_KEYS)[number]>;

/**
 * The review fields of `value` (an approval, or the object a row keeps), checked, copied and frozen:
 * only those given, in {@link REVIEW_KEYS} order. Refuses a field that is not storable, naming
 * `${field}.<key>`.
 */
export function checkedReview(given: object, field = 'approval'): ApprovalReview {
  const value = given as Readonly<Record<string, unknown>>;
  return Object.freeze({
    ...optional('notify', value['notify'], (v) => storedNames(v, `${field}.notify`)),
    // Any text: a plan's `user` label stands for the requester when no principal started the run.
    ...optional('requester', value['requester'], (v) => storedText(v, `${field}.requester`)),
    ...optional('rule', value['rule'], (v) => checkedRule(v, `${field}.rule`)),
    ...optional('votes', value['votes'], (v) => votes(v, `${field}.votes`)),
    ...optional('decider', value['decider'], (v) => checkedIdentity(v, `${field}.decider`)),
  });
}

function votes(value: unknown, field: string) {
  if (!Array.isArray(value)) invalid(field, 'an array of votes', value);
  if (value.length > MAX_APPROVERS) invalid(field, `at most ${MAX_APPROVERS} votes`, value);
  return Object.freeze(value.map((v: unknown, i) => checkedVote(v, `${field}[${i}]`)));
}

/**
 * `a` as a store keeps it: its review fields checked and copied, so that a caller changing its arrays
 * later changes nothing kept; frozen. An approval without them is copied as it is.
 */
export function keptApproval(a: Approval): Approval {
  const { notify, requester, rule, votes: given, decider, ...rest } = a;
  const review = checkedReview({ notify, requester, rule, votes: given, decider });
  return Object.freeze({ ...rest, ...review });
}

/** The review of `a` as a SQL row keeps it: JSON text, or null when `a` has none. Checked. */
export function reviewText(a: Approval): string | null {
  const review = checkedReview(a);
  return Object.keys(review).length === 0 ? null : JSON.stringify(review);
}

/** Reads back what {@link reviewText} wrote; throws (as a writer would refuse) for what it could not. */
export function reviewFromText(text: string): ApprovalReview {
  const value: unknown = JSON.parse(text);
  const review = objectWithKeys(value, 'review', REVIEW_KEYS);
  if (Object.keys(review).length === 0) invalid('review', 'an object with at least one field', text);
  return checkedReview(review, 'review');
}
