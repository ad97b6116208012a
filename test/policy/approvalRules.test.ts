import { describe, expect, it } from 'vitest';
import { parsePolicy, policyApprovalRules, validatePolicy } from '../../src/policy/index.js';
import { thrown } from '../support/thrown.js';

/** A policy whose `approvals:` block is `approvals`. */
const policy = (approvals: Record<string, unknown>) => ({ version: 1, approvals });

describe('approval rules in a policy', () => {
  it('keeps the rules beside ttl_seconds', () => {
    const value = policy({ ttl_seconds: 60, deploy: { approvers: ['role:release'], quorum: 2 } });
    expect(validatePolicy(value)).toEqual(value);
  });

  it('compiles a rule with its defaults filled in', () => {
    const rules = policyApprovalRules(validatePolicy(policy({ deploy: { approvers: ['user:ann'] } })));
    expect(rules.operations.get('deploy')).toEqual({
      name: 'deploy',
      approvers: ['user:ann'],
      quorum: 1,
      selfApproval: false,
      onTimeout: 'deny',
      elicitation: 'deny',
    });
  });

  it('finds an operation key normalized and a tool key as written', () => {
    const rules = policyApprovalRules(validatePolicy(policy({ 'Deploy ': { approvers: ['*'] } })));
    expect([rules.operations.has('deploy'), rules.tools.has('Deploy ')]).toEqual([true, true]);
  });

  it('turns a rule’s ttl_seconds into whole milliseconds', () => {
    const rules = policyApprovalRules(
      validatePolicy(policy({ deploy: { approvers: ['*'], ttl_seconds: 1.1 } })),
    );
    expect(rules.operations.get('deploy')?.ttlMs).toBe(1100);
  });

  it('keeps the * rule apart from the operations', () => {
    const rules = policyApprovalRules(validatePolicy(policy({ '*': { approvers: ['role:ops'] } })));
    expect([rules.fallback?.approvers, rules.operations.size]).toEqual([['role:ops'], 0]);
  });

  it.each([
    ['approvers', { deploy: { approvers: [] } }, 'approvals.deploy.approvers'],
    ['an approver', { deploy: { approvers: ['team:x'] } }, 'approvals.deploy.approvers[0]'],
    ['quorum', { deploy: { approvers: ['*'], quorum: 0 } }, 'approvals.deploy.quorum'],
    ['quorum above 64', { deploy: { approvers: ['*'], quorum: 65 } }, 'approvals.deploy.quorum'],
    [
      'self_approval',
      { deploy: { approvers: ['*'], self_approval: 'no' } },
      'approvals.deploy.self_approval',
    ],
    ['ttl_seconds', { deploy: { approvers: ['*'], ttl_seconds: 0 } }, 'approvals.deploy.ttl_seconds'],
    ['on_timeout', { deploy: { approvers: ['*'], on_timeout: 'allow' } }, 'approvals.deploy.on_timeout'],
    ['elicitation', { deploy: { approvers: ['*'], elicitation: 'maybe' } }, 'approvals.deploy.elicitation'],
    ['an unknown key', { deploy: { approvers: ['*'], quorom: 2 } }, 'approvals.deploy.quorom'],
    ['a rule that is no object', { deploy: 2 }, 'approvals.deploy'],
  ])('names the field of a bad %s', (_label, approvals, field) => {
    expect(thrown(() => validatePolicy(policy(approvals))).field).toBe(field);
  });

  it('refuses a quorum larger than the users named when only users are named', () => {
    const e = thrown(() =>
      validatePolicy(policy({ deploy: { approvers: ['user:ann', 'user:bob'], quorum: 3 } })),
    );
    expect([e.field, e.message]).toEqual([
      'approvals.deploy.quorum',
      'approvals.deploy.quorum must be at most 2, the number of users its approvers name, got 3',
    ]);
  });

  it('accepts a quorum larger than the approvers named when a role is among them', () => {
    const value = policy({ deploy: { approvers: ['role:release'], quorum: 3 } });
    expect(validatePolicy(value)).toEqual(value);
  });

  it('refuses two keys naming one operation', () => {
    const approvals = { deploy: { approvers: ['*'] }, DEPLOY: { approvers: ['*'] } };
    expect(thrown(() => validatePolicy(policy(approvals))).field).toBe('approvals.DEPLOY');
  });

  it('names the file in a refusal of a rule read from one', () => {
    const text = 'version: 1\napprovals:\n  deploy: { approvers: [user:ann], quorum: 2 }\n';
    expect(thrown(() => parsePolicy(text, { source: 'leash.yaml' })).message).toMatch(
      /^leash\.yaml: approvals\.deploy\.quorum must be at most 1/,
    );
  });
});
