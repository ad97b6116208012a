import { describe, expect, it } from 'vitest';
import {
  approvalRules,
  DEFAULT_APPROVAL_RULE,
  mayDecide,
  ruleFor,
  snapshotOf,
  voteProblem,
  type ApprovalRuleInit,
} from '../../src/identity/rules.js';
import type { Approval } from '../../src/store/GuardrailStore.js';
import type { ApprovalRule, DeciderIdentity } from '../../src/store/people.js';
import { thrown } from '../support/thrown.js';

const T0 = Date.parse('2026-11-30T10:00:00.000Z');
const LATER = T0 + 120_000;

const rules = (inits: Record<string, ApprovalRuleInit>) => approvalRules(inits);

/** A person signed in with a personal token. */
function person(principal: string, roles: string[] = []): DeciderIdentity {
  return { kind: 'token', subject: principal, name: principal, principal, roles };
}

const ANN = person('ann', ['release']);
const BOB = person('bob', ['release']);
const EVE = person('eve', ['finance']);
const OPERATOR: DeciderIdentity = { kind: 'operator', subject: 'ann', name: 'ann' };
const FORM: DeciderIdentity = { kind: 'elicitation', subject: 'session-1', name: 'MCP client user' };

const DEPLOY: ApprovalRule = snapshotOf(
  rules({ deploy: { approvers: ['role:release'], quorum: 2 } }).tools.get('deploy')!,
);

/** A pending approval of `deploy`, asked by `requester`, under `rule`. */
function approval(rule: ApprovalRule | undefined, extra: Partial<Approval> = {}): Approval {
  return {
    id: 'a1',
    planId: 'plan',
    decisionId: 'd1',
    operation: 'deploy',
    inputHash: '0'.repeat(64),
    requestedAt: new Date(T0).toISOString(),
    expiresAt: new Date(T0 + 60_000).toISOString(),
    status: 'pending',
    requester: 'carol',
    ...(rule === undefined ? {} : { rule }),
    ...extra,
  };
}

const context = { hasPrincipals: true, now: T0 };
const codeOf = (a: Approval, who: DeciderIdentity, c: Parameters<typeof voteProblem>[2] = context) =>
  voteProblem(a, who, c)?.code ?? null;

describe('ruleFor', () => {
  const set = rules({
    Deploy: { approvers: ['role:release'] },
    migrate: { approvers: ['role:dba', 'user:ann'], quorum: 2, ttlMs: 5000 },
    '*': { approvers: ['*'] },
  });

  it('takes the tool’s rule, as written, first', () => {
    expect(ruleFor(set, { toolName: 'Deploy', operations: ['shell'] })?.name).toBe('Deploy');
  });

  it('takes an operation’s rule by its normalized name', () => {
    expect(ruleFor(set, { operations: ['deploy'] })?.name).toBe('Deploy');
  });

  it('takes the * rule for an operation without a rule of its own', () => {
    expect(ruleFor(set, { operations: ['shell'] })?.name).toBe('*');
  });

  it('finds no rule when nothing matches and there is no * rule', () => {
    expect(ruleFor(rules({ deploy: { approvers: ['*'] } }), { operations: ['shell'] })).toBeUndefined();
  });

  it('combines the rules of several operations into the strictest', () => {
    expect(ruleFor(set, { operations: ['deploy', 'migrate'] })).toEqual({
      name: 'Deploy + migrate',
      approvers: [],
      quorum: 2,
      selfApproval: false,
      onTimeout: 'deny',
      elicitation: 'deny',
      ttlMs: 5000,
    });
  });

  it('keeps the approvers every combined rule names, a * rule restricting nothing', () => {
    const combined = ruleFor(set, { operations: ['migrate', 'shell'] });
    expect(combined?.approvers).toEqual(['role:dba', 'user:ann']);
  });
});

describe('approvalRules', () => {
  it.each([
    ['no approvers', { x: { approvers: [] } }, 'approvalRules.x.approvers'],
    ['a bad approver', { x: { approvers: ['admin'] } }, 'approvalRules.x.approvers[0]'],
    ['a quorum of 0', { x: { approvers: ['*'], quorum: 0 } }, 'approvalRules.x.quorum'],
    ['a quorum above the users named', { x: { approvers: ['user:a'], quorum: 2 } }, 'approvalRules.x.quorum'],
    ['a ttl of 0', { x: { approvers: ['*'], ttlMs: 0 } }, 'approvalRules.x.ttlMs'],
    ['an invisible key', { 'a\u200bb': { approvers: ['*'] } }, 'approvalRules["a\u200bb"]'],
  ])('refuses %s, naming the field', (_label, inits, field) => {
    expect(thrown(() => approvalRules(inits as Record<string, ApprovalRuleInit>)).field).toBe(field);
  });
});

describe('voteProblem', () => {
  it('lets an approver approve', () => {
    expect(codeOf(approval(DEPLOY), ANN)).toBeNull();
  });

  it('refuses a typed name once principals exist', () => {
    expect(codeOf(approval(undefined), OPERATOR)).toBe('IDENTITY_REQUIRED');
  });

  it('refuses a typed name under a rule even without principals', () => {
    expect(codeOf(approval(DEPLOY), OPERATOR, { hasPrincipals: false, now: T0 })).toBe('IDENTITY_REQUIRED');
  });

  it('lets a typed name decide an approval under no rule while there are no principals', () => {
    expect(codeOf(approval(undefined), OPERATOR, { hasPrincipals: false, now: T0 })).toBeNull();
  });

  it('refuses a person the rule does not name, naming the rule and its approvers', () => {
    expect(voteProblem(approval(DEPLOY), EVE, context)).toEqual({
      code: 'APPROVAL_NOT_ALLOWED',
      message: '"eve" may not decide approval "a1": rule "deploy" allows role:release',
    });
  });

  it('lets a provider’s sign-in with a role the rule names approve without a principal', () => {
    const dana: DeciderIdentity = {
      kind: 'oidc',
      subject: 'sub-9',
      name: 'Dana',
      issuer: 'https://idp',
      roles: ['release'],
    };
    expect(codeOf(approval(DEPLOY), dana)).toBeNull();
  });

  it('refuses a provider’s sign-in with neither a principal nor a role', () => {
    const stranger: DeciderIdentity = {
      kind: 'oidc',
      subject: 'sub-7',
      name: 'Stranger',
      issuer: 'https://idp',
    };
    const anyone = snapshotOf(rules({ '*': { approvers: ['*'] } }).fallback!);
    expect(codeOf(approval(anyone), stranger)).toBe('APPROVAL_NOT_ALLOWED');
  });

  it('refuses the requester', () => {
    expect(codeOf(approval(DEPLOY, { requester: 'ann' }), ANN)).toBe('APPROVAL_SELF');
  });

  it('lets the requester approve where the rule allows self-approval', () => {
    const rule = { ...DEPLOY, selfApproval: true };
    expect(codeOf(approval(rule, { requester: 'ann' }), ANN)).toBeNull();
  });

  it('lets the requester deny', () => {
    const c = { ...context, vote: 'deny' as const };
    expect(codeOf(approval(DEPLOY, { requester: 'ann' }), ANN, c)).toBeNull();
  });

  it('refuses a second approval by the same person, under another token', () => {
    const votes = [{ by: { ...ANN, subject: 'tok_other' }, at: new Date(T0).toISOString() }];
    expect(codeOf(approval(DEPLOY, { votes }), ANN)).toBe('APPROVAL_ALREADY_VOTED');
  });

  it('refuses an approval after the expiry', () => {
    expect(codeOf(approval(DEPLOY), BOB, { ...context, now: LATER })).toBe('APPROVAL_EXPIRED');
  });

  it('refuses an answer to an elicitation form under a rule that does not allow it', () => {
    expect(codeOf(approval(DEPLOY), FORM)).toBe('IDENTITY_REQUIRED');
  });

  it('counts an answer to an elicitation form where the rule allows it', () => {
    expect(codeOf(approval({ ...DEPLOY, elicitation: 'allow' }), FORM)).toBeNull();
  });

  it('applies the default rule once principals exist: any principal but the requester', () => {
    expect([
      codeOf(approval(undefined), EVE),
      codeOf(approval(undefined, { requester: 'eve' }), EVE),
    ]).toEqual([null, 'APPROVAL_SELF']);
  });

  it('has the default rule allow any principal, once, and time out to a denial', () => {
    expect(DEFAULT_APPROVAL_RULE).toMatchObject({ approvers: ['*'], quorum: 1, onTimeout: 'deny' });
  });
});

describe('mayDecide', () => {
  it('is true for an approver of a pending approval', () => {
    expect(mayDecide(approval(DEPLOY), ANN, true)).toBe(true);
  });

  it('is false for a person the rule does not name', () => {
    expect(mayDecide(approval(DEPLOY), EVE, true)).toBe(false);
  });

  it('is false once the approval is decided', () => {
    expect(mayDecide(approval(DEPLOY, { status: 'approved' }), ANN, true)).toBe(false);
  });
});
