import { describeValue, GuardrailValidationError, invalid } from '../errors.js';
import { normalizeOperation } from '../guardrails/operation.js';
import { parseIsoMs } from '../iso.js';
import { PRINCIPAL_ID, ROLE } from './principals.js';
import { isPlainObject } from '../json.js';
import type { Approval } from '../store/GuardrailStore.js';
import type { ApprovalRule, ApprovalVote, DeciderIdentity } from '../store/people.js';
import { optionField } from '../validation.js';

// Who may decide an approval: the rules a policy's `approvals:` block sets per operation or tool, and the
// checks of one person's decision against the rule the approval was opened under. Pure: the service
// reads the store and the clock, and records what these say.

/** The pattern of a whole string `p`, without its anchors, to put inside another. */
const inner = (p: RegExp): string => p.source.slice(1, -1);
/** `*`, `role:NAME` or `user:ID`, as principals' roles and ids are written. */
export const APPROVER_PATTERN = new RegExp(`^(\\*|role:${inner(ROLE)}|user:${inner(PRINCIPAL_ID)})$`);
export const APPROVER_RULE =
  'an approver: "*", "role:NAME" (a role: a lower-case letter, then lower-case letters, digits, "_" or "-", at most 64) or "user:ID" (a principal\'s id: 1 to 128 lower-case letters, digits, ".", "_", "-" or "@")';
/** Most approvers one rule names. */
export const MAX_APPROVERS = 64;

/** A rule as configured: what an approval snapshots, and how long approvals opened under it stay open. */
export interface ConfiguredApprovalRule extends ApprovalRule {
  /** Overrides the time a confirmation request stays open, in milliseconds. */
  readonly ttlMs?: number;
}

/** One rule as given to {@link approvalRules}; defaults: quorum 1, no self-approval, no elicitation. */
export interface ApprovalRuleInit {
  readonly approvers: readonly string[];
  readonly quorum?: number;
  readonly selfApproval?: boolean;
  readonly ttlMs?: number;
  readonly onTimeout?: 'deny';
  readonly elicitation?: 'allow' | 'deny';
}

/** Rules compiled by {@link approvalRules}, for the service's `approvalRules` option. */
export interface ApprovalRules {
  /** By tool name, as written. */
  readonly tools: ReadonlyMap<string, ConfiguredApprovalRule>;
  /** By operation name, normalized as the service compares operations. */
  readonly operations: ReadonlyMap<string, ConfiguredApprovalRule>;
  /** The `*` rule: every operation without a rule of its own. */
  readonly fallback: ConfiguredApprovalRule | undefined;
}

const COMPILED = new WeakSet<object>();

/** True for rules made by {@link approvalRules}. */
export function isApprovalRules(value: unknown): value is ApprovalRules {
  return typeof value === 'object' && value !== null && COMPILED.has(value);
}

/**
 * Compiles rules keyed by operation, tool name or `*`. A key is a tool's name as written and an operation
 * after normalization; two keys naming one operation are refused.
 * @throws GuardrailValidationError naming the field under `field`: `approvals.deploy.quorum`
 */
export function approvalRules(
  inits: Readonly<Record<string, ApprovalRuleInit>>,
  field = 'approvalRules',
): ApprovalRules {
  if (!isPlainObject(inits)) invalid(field, 'an object of rules keyed by operation or tool name', inits);
  const tools = new Map<string, ConfiguredApprovalRule>();
  const operations = new Map<string, ConfiguredApprovalRule>();
  const keyOf = new Map<string, string>();
  let fallback: ConfiguredApprovalRule | undefined;
  for (const name of Object.keys(inits)) {
    const at = optionField([field, name]);
    const rule = compileRule(name, inits[name], at);
    if (name === '*') {
      fallback = rule;
      continue;
    }
    const op = normalizeOperation(name, at);
    const earlier = keyOf.get(op);
    if (earlier !== undefined) {
      throw new GuardrailValidationError(
        at,
        `${at} names operation "${op}", as ${describeValue(earlier)} does`,
      );
    }
    keyOf.set(op, name);
    tools.set(name, rule);
    operations.set(op, rule);
  }
  const rules: ApprovalRules = Object.freeze({ tools, operations, fallback });
  COMPILED.add(rules);
  return rules;
}

function compileRule(name: string, init: unknown, at: string): ConfiguredApprovalRule {
  if (!isPlainObject(init)) invalid(at, 'a rule: an object with approvers', init);
  const approvers = init['approvers'];
  if (!Array.isArray(approvers) || approvers.length === 0 || approvers.length > MAX_APPROVERS) {
    invalid(`${at}.approvers`, `a list of 1 to ${MAX_APPROVERS} approvers`, approvers);
  }
  approvers.forEach((a: unknown, i) => {
    if (typeof a !== 'string' || !APPROVER_PATTERN.test(a))
      invalid(`${at}.approvers[${i}]`, APPROVER_RULE, a);
  });
  const list = [...new Set(approvers as string[])];
  const quorum = init['quorum'] ?? 1;
  if (!Number.isSafeInteger(quorum) || (quorum as number) < 1 || (quorum as number) > MAX_APPROVERS) {
    invalid(`${at}.quorum`, `an integer from 1 to ${MAX_APPROVERS}`, quorum);
  }
  // Named people alone can make no larger quorum: such a rule could never grant anything.
  if (!list.some((a) => !a.startsWith('user:')) && (quorum as number) > list.length) {
    invalid(`${at}.quorum`, `at most ${list.length}, the number of users its approvers name`, quorum);
  }
  const selfApproval = init['selfApproval'] ?? false;
  if (typeof selfApproval !== 'boolean') invalid(`${at}.selfApproval`, 'a boolean', selfApproval);
  const ttlMs = init['ttlMs'];
  if (ttlMs !== undefined && (!Number.isSafeInteger(ttlMs) || (ttlMs as number) < 1)) {
    invalid(`${at}.ttlMs`, 'an integer >= 1', ttlMs);
  }
  const onTimeout = init['onTimeout'] ?? 'deny';
  if (onTimeout !== 'deny') invalid(`${at}.onTimeout`, '"deny"', onTimeout);
  const elicitation = init['elicitation'] ?? 'deny';
  if (elicitation !== 'allow' && elicitation !== 'deny')
    invalid(`${at}.elicitation`, '"allow" or "deny"', elicitation);
  return Object.freeze({
    name,
    approvers: Object.freeze(list),
    quorum: (quorum as number) + 0,
    selfApproval,
    onTimeout,
    elicitation,
    ...(ttlMs === undefined ? {} : { ttlMs: ttlMs as number }),
  });
}

/**
 * The rule an approval for these operations (normalized) of this tool is opened under, or undefined.
 * The tool's own rule first: it also stands for operations without a rule of their own; else each
 * operation's rule, or the `*` rule.
 *
 * Several operations under different rules are combined into the strictest rule all of them would
 * accept: only approvers every rule names (a rule naming `*` restricts nothing; names are compared as
 * written, so `role:a` and `role:b` leave nobody, even a person holding both), the largest quorum,
 * self-approval and elicitation only when every rule allows them, the shortest time to live. Sound, if
 * strict: an approval no single rule would grant is never granted.
 */
export function ruleFor(
  rules: ApprovalRules,
  ask: { readonly toolName?: string | undefined; readonly operations: readonly string[] },
): ConfiguredApprovalRule | undefined {
  const tool = ask.toolName === undefined ? undefined : rules.tools.get(ask.toolName);
  const fallback = tool ?? rules.fallback;
  const picked: ConfiguredApprovalRule[] = tool === undefined ? [] : [tool];
  for (const op of ask.operations) {
    const rule = rules.operations.get(op) ?? fallback;
    if (rule !== undefined && !picked.includes(rule)) picked.push(rule);
  }
  return picked.length <= 1 ? picked[0] : combined(picked);
}

function combined(rules: readonly ConfiguredApprovalRule[]): ConfiguredApprovalRule {
  let approvers: string[] | undefined;
  for (const rule of rules) {
    if (rule.approvers.includes('*')) continue;
    approvers =
      approvers === undefined ? [...rule.approvers] : approvers.filter((a) => rule.approvers.includes(a));
  }
  const ttls = rules.flatMap((r) => (r.ttlMs === undefined ? [] : [r.ttlMs]));
  return Object.freeze({
    name: rules.map((r) => r.name).join(' + '),
    approvers: Object.freeze(approvers ?? ['*']),
    quorum: Math.max(...rules.map((r) => r.quorum)),
    selfApproval: rules.every((r) => r.selfApproval),
    onTimeout: 'deny',
    elicitation: rules.every((r) => r.elicitation === 'allow') ? 'allow' : 'deny',
    ...(ttls.length === 0 ? {} : { ttlMs: Math.min(...ttls) }),
  });
}

/** What an approval keeps of a configured rule: the rule without its time to live. */
export function snapshotOf(rule: ConfiguredApprovalRule): ApprovalRule {
  const { name, approvers, quorum, selfApproval, onTimeout, elicitation } = rule;
  return Object.freeze({ name, approvers, quorum, selfApproval, onTimeout, elicitation });
}

/** The rule of an approval opened under none, once the store knows people: any one of them, not the requester. */
export const DEFAULT_APPROVAL_RULE: ApprovalRule = Object.freeze({
  name: 'default',
  approvers: Object.freeze(['*']),
  quorum: 1,
  selfApproval: false,
  onTimeout: 'deny',
  elicitation: 'deny',
});

/**
 * The rule a decision of `approval` is checked against: its own, else the default once the store has
 * principals; undefined when neither (one operator decides, as a typed name).
 */
export function ruleInEffect(approval: Approval, hasPrincipals: boolean): ApprovalRule | undefined {
  return approval.rule ?? (hasPrincipals ? DEFAULT_APPROVAL_RULE : undefined);
}

/** Why a decision is refused: the code of the GuardrailError thrown, and its message. */
export interface VoteProblem {
  readonly code:
    | 'IDENTITY_REQUIRED'
    | 'APPROVAL_NOT_ALLOWED'
    | 'APPROVAL_SELF'
    | 'APPROVAL_ALREADY_VOTED'
    | 'APPROVAL_EXPIRED';
  readonly message: string;
}

/** What a decision is checked with. */
export interface VoteContext {
  /** Whether the store has principals that are not revoked. */
  readonly hasPrincipals: boolean;
  /** The time of the decision (epoch ms). */
  readonly now: number;
  /** An approval (the default) or a denial: a denial needs an approver, but not another person. */
  readonly vote?: 'approve' | 'deny';
}

/**
 * Why `identity` may not make this decision of the pending `approval` now, or null. In order: a rule
 * counts only verified people (`IDENTITY_REQUIRED`), in time (`APPROVAL_EXPIRED`), among its approvers
 * (`APPROVAL_NOT_ALLOWED`), not the requester unless it allows self-approval (`APPROVAL_SELF`), once each
 * (`APPROVAL_ALREADY_VOTED`). With no rule in effect only a yes must come in time.
 */
export function voteProblem(
  approval: Approval,
  identity: DeciderIdentity,
  context: VoteContext,
): VoteProblem | null {
  const rule = ruleInEffect(approval, context.hasPrincipals);
  const vote = context.vote ?? 'approve';
  const late = context.now > parseIsoMs(approval.expiresAt);
  if (rule === undefined) return vote === 'approve' && late ? expiredProblem(approval) : null;
  return (
    identityProblem(rule, identity) ??
    (late ? expiredProblem(approval) : whoProblem(rule, approval, identity, vote))
  );
}

/**
 * Whether `identity` may approve the pending `approval` (the dashboard's inbox shows it those it may).
 * Time is not considered: an expired approval is refused when decided.
 */
export function mayDecide(approval: Approval, identity: DeciderIdentity, hasPrincipals: boolean): boolean {
  if (approval.status !== 'pending') return false;
  const rule = ruleInEffect(approval, hasPrincipals);
  return (
    rule === undefined ||
    (identityProblem(rule, identity) ?? whoProblem(rule, approval, identity, 'approve')) === null
  );
}

/** One person, however they signed in: the principal, else the identity provider's subject. */
export function samePerson(a: DeciderIdentity, b: DeciderIdentity): boolean {
  if (a.principal !== undefined || b.principal !== undefined) return a.principal === b.principal;
  return a.kind === b.kind && a.issuer === b.issuer && a.subject === b.subject;
}

/** Whether `votes` (of distinct people) make the rule's quorum. */
export function quorumReached(rule: ApprovalRule, votes: readonly ApprovalVote[]): boolean {
  return votes.length >= rule.quorum;
}

/** How a message names a rule: `rule "deploy"`. */
export function ruleName(rule: ApprovalRule): string {
  return `rule "${rule.name}"`;
}

function expiredProblem(approval: Approval): VoteProblem {
  return { code: 'APPROVAL_EXPIRED', message: `approval "${approval.id}" expired at ${approval.expiresAt}` };
}

function identityProblem(rule: ApprovalRule, identity: DeciderIdentity): VoteProblem | null {
  if (identity.kind === 'token' || identity.kind === 'oidc') return null;
  if (identity.kind === 'elicitation') {
    if (rule.elicitation === 'allow') return null;
    const message = `${ruleName(rule)} does not count an answer to an elicitation form (elicitation: deny); a person must sign in to decide`;
    return { code: 'IDENTITY_REQUIRED', message };
  }
  const message = `${ruleName(rule)} counts only people who signed in (a personal token or single sign-on), not the name "${identity.name}"`;
  return { code: 'IDENTITY_REQUIRED', message };
}

function whoProblem(
  rule: ApprovalRule,
  approval: Approval,
  identity: DeciderIdentity,
  vote: 'approve' | 'deny',
): VoteProblem | null {
  // An answer to an elicitation form names nobody: the rule lets it decide, once.
  if (identity.kind !== 'elicitation' && !isApprover(rule, identity)) {
    const message = `"${identity.name}" may not decide approval "${approval.id}": ${ruleName(rule)} allows ${approversText(rule)}`;
    return { code: 'APPROVAL_NOT_ALLOWED', message };
  }
  if (vote === 'deny') return null;
  const person = identity.principal ?? identity.subject;
  if (identity.kind !== 'elicitation' && !rule.selfApproval && person === approval.requester) {
    const message = `"${identity.name}" asked for approval "${approval.id}" and may not approve it: ${ruleName(rule)} does not allow self-approval`;
    return { code: 'APPROVAL_SELF', message };
  }
  if ((approval.votes ?? []).some((v) => samePerson(v.by, identity))) {
    const message = `"${identity.name}" approved approval "${approval.id}" already; ${ruleName(rule)} needs ${rule.quorum} different people`;
    return { code: 'APPROVAL_ALREADY_VOTED', message };
  }
  return null;
}

/**
 * Whether a verified identity is among the rule's approvers: `user:` needs the principal it maps to;
 * `role:` a role it holds, from its principal or from the identity provider that signed it in; `*` a
 * known person (a principal, or a sign-in the provider gave a role).
 */
function isApprover(rule: ApprovalRule, identity: DeciderIdentity): boolean {
  const principal = identity.principal;
  const roles = identity.roles ?? [];
  if (principal === undefined && (identity.kind !== 'oidc' || roles.length === 0)) return false;
  return rule.approvers.some(
    (a) =>
      a === '*' ||
      (principal !== undefined && a === `user:${principal}`) ||
      (a.startsWith('role:') && roles.includes(a.slice(5))),
  );
}

/** The approvers of a rule as a message lists them: at most ten, then how many more. */
function approversText(rule: ApprovalRule): string {
  const list = rule.approvers;
  if (list.length === 0) return 'nobody (its rules name no approver in common)';
  if (list.includes('*')) return 'any person known to leash (*)';
  const shown = list.slice(0, 10).join(', ');
  return list.length > 10 ? `${shown} and ${list.length - 10} more` : shown;
}
