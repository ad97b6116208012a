import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  AutonomyGuardrailService,
  canonicalJson,
  GuardrailValidationError,
  isGuardrailError,
  ManualClock,
  type ApprovalDecision,
  type ApprovalStatus,
  type GuardrailsInit,
} from '../../src/index.js';
import { thrown } from '../support/thrown.js';

const T0 = Date.parse('2026-11-30T10:00:00.000Z');
const iso = (ms: number): string => new Date(ms).toISOString();
const TTL = 60_000;
const INPUT = { target: 'prod', replicas: 3, tags: { team: 'core', tier: 1 } };
const REQUEST = { decisionId: 'd1', operation: 'deploy', input: INPUT, ttlMs: TTL };
const USE = { decisionId: 'd1', operation: 'deploy', input: INPUT };
const ANN: ApprovalDecision = { by: 'ann', reason: 'change reviewed' };

/** A service on a manual clock whose approval ids are a1, a2, …, with `plan` configured. */
async function configured(init: GuardrailsInit = { requiredConfirmations: ['deploy'] }) {
  const clock = new ManualClock(T0);
  let n = 0;
  const service = new AutonomyGuardrailService({ clock, ids: () => `a${++n}` });
  await service.configureGuardrails('plan', init);
  return { clock, service };
}

/** A plan with a pending approval a1 for REQUEST. */
async function requested(init?: GuardrailsInit) {
  const s = await configured(init);
  await s.service.requestConfirmation('plan', REQUEST);
  return s;
}

/** A plan whose approval a1 for REQUEST was approved by ann. */
async function approved(init?: GuardrailsInit) {
  const s = await requested(init);
  await s.service.approve('a1', ANN);
  return s;
}

/** The `code` of the GuardrailError a call throws or rejects with. */
async function codeOf(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
  } catch (e) {
    if (isGuardrailError(e)) return e.code;
    throw e;
  }
  throw new Error('expected a GuardrailError, the call succeeded');
}

/** The `field` of the GuardrailValidationError a call throws or rejects with. */
async function fieldOf(call: () => Promise<unknown>): Promise<string | undefined> {
  try {
    await call();
  } catch (e) {
    if (e instanceof GuardrailValidationError) return e.field;
    throw e;
  }
  throw new Error('expected a GuardrailValidationError, the call succeeded');
}

async function trailOf(service: AutonomyGuardrailService, planId = 'plan') {
  const trail = await service.getAuditTrail(planId);
  if (!trail) throw new Error(`plan ${planId} should have an audit trail`);
  return trail;
}

async function lastEntry(service: AutonomyGuardrailService) {
  const entry = (await trailOf(service)).entries.at(-1);
  if (!entry) throw new Error('the audit trail should not be empty');
  return entry;
}

async function eventTypes(service: AutonomyGuardrailService): Promise<string[]> {
  return (await trailOf(service)).entries.map((e) => e.eventType);
}

async function statusOf(service: AutonomyGuardrailService, id = 'a1'): Promise<ApprovalStatus | undefined> {
  return (await service.getApproval(id))?.status;
}

/** Elapsed seconds the plan's wall clock shows now. */
async function elapsed(service: AutonomyGuardrailService): Promise<number | undefined> {
  return (await service.checkWallClock('plan')).observed;
}

describe('requestConfirmation', () => {
  it('opens a pending approval for an operation that needs confirmation', async () => {
    const { service } = await configured();
    const { check, approval } = await service.requestConfirmation('plan', REQUEST);
    expect([check.allowed, check.eventType]).toEqual([false, 'confirmation_required']);
    expect(approval).toEqual({
      id: 'a1',
      planId: 'plan',
      decisionId: 'd1',
      operation: 'deploy',
      inputHash: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown,
      requestedAt: iso(T0),
      expiresAt: iso(T0 + TTL),
      status: 'pending',
    });
  });

  it('binds the approval to the SHA-256 of the input as canonical JSON', async () => {
    const { service } = await configured();
    const { approval } = await service.requestConfirmation('plan', REQUEST);
    const expected = createHash('sha256').update(canonicalJson(INPUT)).digest('hex');
    expect(approval?.inputHash).toBe(expected);
  });

  it('hashes an absent input as null', async () => {
    const { service } = await configured();
    const { approval } = await service.requestConfirmation('plan', { ...REQUEST, input: undefined });
    expect(approval?.inputHash).toBe(createHash('sha256').update('null').digest('hex'));
  });

  it('stores the approval it opens', async () => {
    const { service } = await configured();
    const { approval } = await service.requestConfirmation('plan', REQUEST);
    expect(await service.getApproval('a1')).toEqual(approval);
  });

  it('records confirmation_required with the operation, decision, approval id, expiry and reason', async () => {
    const { service } = await configured();
    const { check } = await service.requestConfirmation('plan', REQUEST);
    const entry = await lastEntry(service);
    expect([entry.eventType, entry.result, entry.timestamp]).toEqual(['confirmation_required', 'denied', T0]);
    expect(entry.details).toEqual({
      operation: 'deploy',
      decision_id: 'd1',
      approval_id: 'a1',
      expires_at: iso(T0 + TTL),
      reason: check.reason,
    });
  });

  it('keeps the normalized operation name in the approval', async () => {
    const { service } = await configured();
    const { approval } = await service.requestConfirmation('plan', { ...REQUEST, operation: '  DEPLOY ' });
    expect(approval?.operation).toBe('deploy');
  });

  it('opens a new approval, with a new id, for each request', async () => {
    const { service } = await configured();
    await service.requestConfirmation('plan', REQUEST);
    const { approval } = await service.requestConfirmation('plan', { ...REQUEST, decisionId: 'd2' });
    expect(approval?.id).toBe('a2');
    expect((await service.listApprovals()).map((a) => a.id)).toEqual(['a1', 'a2']);
  });

  it('opens no approval for an operation that needs no confirmation', async () => {
    const { service } = await configured();
    const result = await service.requestConfirmation('plan', { ...REQUEST, operation: 'read' });
    expect([result.check.allowed, result.check.eventType]).toEqual([true, 'confirmation_not_required']);
    expect(result.approval).toBeUndefined();
    expect(await service.listApprovals()).toEqual([]);
  });

  it('records confirmation_not_required for an operation that needs no confirmation', async () => {
    const { service } = await configured();
    await service.requestConfirmation('plan', { ...REQUEST, operation: 'read' });
    expect(await eventTypes(service)).toEqual(['confirmation_not_required']);
  });

  it('opens no approval for an unconfigured plan', async () => {
    const { service } = await configured();
    const result = await service.requestConfirmation('unknown', REQUEST);
    expect(result.check.eventType).toBe('confirmation_not_required');
    expect(result.approval).toBeUndefined();
    expect(await service.listApprovals()).toEqual([]);
  });

  it('requires confirmation, opening no approval, for an unconfigured plan under unconfiguredPlans "deny"', async () => {
    const service = new AutonomyGuardrailService({ clock: new ManualClock(T0), unconfiguredPlans: 'deny' });
    const result = await service.requestConfirmation('unknown', REQUEST);
    expect(result.check.eventType).toBe('confirmation_required');
    expect(result.approval).toBeUndefined();
  });

  it.each([
    ['zero', 0],
    ['fractional', 1.5],
  ])('refuses a ttlMs that is %s, naming ttlMs', async (_label, ttlMs) => {
    const { service } = await configured();
    expect(await fieldOf(() => service.requestConfirmation('plan', { ...REQUEST, ttlMs }))).toBe('ttlMs');
  });

  it('refuses an empty decision id, naming decisionId', async () => {
    const { service } = await configured();
    const call = () => service.requestConfirmation('plan', { ...REQUEST, decisionId: '' });
    expect(await fieldOf(call)).toBe('decisionId');
  });

  it('refuses an input that is not plain JSON, naming where', async () => {
    const { service } = await configured();
    const call = () => service.requestConfirmation('plan', { ...REQUEST, input: { when: new Date(T0) } });
    expect(await fieldOf(call)).toBe('input.when');
  });

  it('records nothing and opens nothing for a refused request', async () => {
    const { service } = await configured();
    await fieldOf(() => service.requestConfirmation('plan', { ...REQUEST, ttlMs: 0 }));
    expect((await trailOf(service)).size).toBe(0);
    expect(await service.listApprovals()).toEqual([]);
  });
});

describe('what the person asked is shown', () => {
  const SHOWN = { ...REQUEST, toolName: 'deploy_service', preview: { to: 'prod', note: 'a\u202eb' } };

  it('keeps the tool name and a preview of the value given in the approval', async () => {
    const { service } = await configured();
    const { approval } = await service.requestConfirmation('plan', SHOWN);
    expect([approval?.toolName, approval?.inputPreview]).toEqual([
      'deploy_service',
      '{"note":"a\\u202eb","to":"prod"}',
    ]);
  });

  it('previews the input when a tool name comes without a preview', async () => {
    const { service } = await configured();
    const { approval } = await service.requestConfirmation('plan', { ...REQUEST, toolName: 'deploy' });
    expect(approval?.inputPreview).toBe(canonicalJson(INPUT));
  });

  it('previews a preview given without a tool name', async () => {
    const { service } = await configured();
    const { approval } = await service.requestConfirmation('plan', { ...REQUEST, preview: [1] });
    expect([approval?.inputPreview, approval !== undefined && 'toolName' in approval]).toEqual([
      '[1]',
      false,
    ]);
  });

  it('opens an approval without a tool name or a preview when the request gives neither', async () => {
    const { service } = await configured();
    const { approval } = await service.requestConfirmation('plan', REQUEST);
    expect(approval !== undefined && ('toolName' in approval || 'inputPreview' in approval)).toBe(false);
  });

  it('binds the grant to the input, whatever the preview shows', async () => {
    const { service } = await configured();
    await service.requestConfirmation('plan', { ...SHOWN, preview: 'something else' });
    await service.approve('a1', ANN);
    expect((await service.useGrant('plan', 'a1', USE)).outcome).toBe('granted');
  });

  it.each([
    ['empty', ''],
    ['only space', '  '],
    ['longer than 256 characters', 't'.repeat(257)],
    ['holding a control character', 'deploy\u001b[2J'],
    ['holding a bidi override', 'deploy\u202e'],
    ['holding a zero-width space', 'dep\u200bloy'],
    ['holding a lone surrogate', 'deploy\ud800'],
    ['a number', 7],
  ])('refuses a tool name that is %s, naming toolName', async (_label, toolName) => {
    const { service } = await configured();
    const call = () => service.requestConfirmation('plan', { ...REQUEST, toolName: toolName as string });
    expect(await fieldOf(call)).toBe('toolName');
  });

  it('refuses a preview that is not plain JSON, naming where', async () => {
    const { service } = await configured();
    const call = () => service.requestConfirmation('plan', { ...REQUEST, preview: { at: new Date(T0) } });
    expect(await fieldOf(call)).toBe('preview.at');
  });

  it('opens nothing for a refused tool name', async () => {
    const { service } = await configured();
    await fieldOf(() => service.requestConfirmation('plan', { ...REQUEST, toolName: '' }));
    expect(await service.listApprovals()).toEqual([]);
  });
});

describe('approve', () => {
  it('records who approved, when and why in the approval', async () => {
    const { service, clock } = await requested();
    clock.advance(5_000);
    const decided = await service.approve('a1', ANN);
    expect(decided).toMatchObject({
      id: 'a1',
      status: 'approved',
      decidedBy: 'ann',
      decidedAt: iso(T0 + 5_000),
      reason: 'change reviewed',
    });
    expect(await service.getApproval('a1')).toEqual(decided);
  });

  it('approves without a reason', async () => {
    const { service } = await requested();
    const decided = await service.approve('a1', { by: 'ann' });
    expect(decided.status).toBe('approved');
    expect(decided).not.toHaveProperty('reason');
  });

  it('keeps who decided and why without surrounding space', async () => {
    const { service } = await requested();
    const decided = await service.approve('a1', { by: '  ann ', reason: ' fine\n' });
    expect([decided.decidedBy, decided.reason]).toEqual(['ann', 'fine']);
  });

  it('records confirmation_approved with who approved and why', async () => {
    const { service, clock } = await requested();
    clock.advance(5_000);
    await service.approve('a1', ANN);
    const entry = await lastEntry(service);
    expect([entry.eventType, entry.result, entry.timestamp]).toEqual([
      'confirmation_approved',
      'allowed',
      T0 + 5_000,
    ]);
    expect(entry.details).toEqual({
      approval_id: 'a1',
      decision_id: 'd1',
      operation: 'deploy',
      by: 'ann',
      reason: 'change reviewed',
    });
  });

  it('records a null reason for an approval given without one', async () => {
    const { service } = await requested();
    await service.approve('a1', { by: 'ann' });
    expect((await lastEntry(service)).details['reason']).toBeNull();
  });

  it('refuses to approve twice with APPROVAL_NOT_PENDING', async () => {
    const { service } = await approved();
    expect(await codeOf(() => service.approve('a1', { by: 'bob' }))).toBe('APPROVAL_NOT_PENDING');
    expect((await service.getApproval('a1'))?.decidedBy).toBe('ann');
  });

  it('refuses to approve a denied approval with APPROVAL_NOT_PENDING', async () => {
    const { service } = await requested();
    await service.deny('a1', { by: 'bob', reason: 'not today' });
    expect(await codeOf(() => service.approve('a1', ANN))).toBe('APPROVAL_NOT_PENDING');
    expect(await statusOf(service)).toBe('denied');
  });

  it('refuses to approve after the approval expired with APPROVAL_EXPIRED', async () => {
    const { service, clock } = await requested();
    clock.advance(TTL + 1);
    expect(await codeOf(() => service.approve('a1', ANN))).toBe('APPROVAL_EXPIRED');
    expect(await statusOf(service)).toBe('pending');
  });

  it('approves at the very moment the approval expires', async () => {
    const { service, clock } = await requested();
    clock.advance(TTL);
    expect((await service.approve('a1', ANN)).status).toBe('approved');
  });

  it('refuses an unknown approval id with APPROVAL_NOT_FOUND', async () => {
    const { service } = await requested();
    expect(await codeOf(() => service.approve('a9', ANN))).toBe('APPROVAL_NOT_FOUND');
  });

  it('records nothing for a refused approval', async () => {
    const { service } = await approved();
    await codeOf(() => service.approve('a1', ANN));
    expect(await eventTypes(service)).toEqual(['confirmation_required', 'confirmation_approved']);
  });

  it('lets exactly one of two concurrent approvals through', async () => {
    const { service } = await requested();
    const outcomes = await Promise.allSettled([
      service.approve('a1', { by: 'ann' }),
      service.approve('a1', { by: 'bob' }),
    ]);
    expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(await eventTypes(service)).toEqual(['confirmation_required', 'confirmation_approved']);
  });
});

describe('deny', () => {
  it('records who denied, when and why in the approval', async () => {
    const { service, clock } = await requested();
    clock.advance(2_000);
    const decided = await service.deny('a1', { by: 'bob', reason: 'not today' });
    expect(decided).toMatchObject({
      status: 'denied',
      decidedBy: 'bob',
      decidedAt: iso(T0 + 2_000),
      reason: 'not today',
    });
    expect(await service.getApproval('a1')).toEqual(decided);
  });

  it('records confirmation_denied with who denied', async () => {
    const { service } = await requested();
    await service.deny('a1', { by: 'bob', reason: 'not today' });
    const entry = await lastEntry(service);
    expect([entry.eventType, entry.result]).toEqual(['confirmation_denied', 'denied']);
    expect(entry.details).toMatchObject({
      approval_id: 'a1',
      decision_id: 'd1',
      operation: 'deploy',
      by: 'bob',
    });
  });

  it('requires a reason to deny, naming reason', async () => {
    const { service } = await requested();
    expect(await fieldOf(() => service.deny('a1', { by: 'bob' }))).toBe('reason');
    expect(await statusOf(service)).toBe('pending');
  });

  it('refuses to deny an approved approval with APPROVAL_NOT_PENDING', async () => {
    const { service } = await approved();
    const code = await codeOf(() => service.deny('a1', { by: 'bob', reason: 'too late' }));
    expect(code).toBe('APPROVAL_NOT_PENDING');
    expect(await statusOf(service)).toBe('approved');
  });

  it('denies after the approval expired: a person may always say no', async () => {
    const { service, clock } = await requested();
    clock.advance(TTL + 1);
    expect((await service.deny('a1', { by: 'bob', reason: 'no' })).status).toBe('denied');
  });

  it('refuses an unknown approval id with APPROVAL_NOT_FOUND', async () => {
    const { service } = await requested();
    expect(await codeOf(() => service.deny('a9', { by: 'bob', reason: 'no' }))).toBe('APPROVAL_NOT_FOUND');
  });
});

describe('who decided and why', () => {
  it.each([
    ['empty', ''],
    ['only space', '   '],
    ['holding a control character', 'ann\u0007'],
    ['longer than 256 characters', 'a'.repeat(257)],
    ['a number', 7],
    ['missing', undefined],
  ])('refuses a decider that is %s, naming by', async (_label, by) => {
    const { service } = await requested();
    const decision = { by } as unknown as ApprovalDecision;
    expect(await fieldOf(() => service.approve('a1', decision))).toBe('by');
    expect(await statusOf(service)).toBe('pending');
  });

  it.each([
    ['empty', ''],
    ['only space', '  '],
    ['longer than 2048 characters', 'r'.repeat(2049)],
    ['a number', 7],
  ])('refuses a reason that is %s, naming reason', async (_label, reason) => {
    const { service } = await requested();
    const decision = { by: 'bob', reason } as unknown as ApprovalDecision;
    expect(await fieldOf(() => service.deny('a1', decision))).toBe('reason');
    expect(await statusOf(service)).toBe('pending');
  });

  it('refuses a decision that is not an object, naming decision', async () => {
    const { service } = await requested();
    const decision = 'ann' as unknown as ApprovalDecision;
    expect(await fieldOf(() => service.approve('a1', decision))).toBe('decision');
  });

  it('accepts a decider of exactly 256 characters', async () => {
    const { service } = await requested();
    expect((await service.approve('a1', { by: 'a'.repeat(256) })).decidedBy).toHaveLength(256);
  });
});

describe('requestConfirmation for a plan that is not configured', () => {
  it('denies a confirmation a rule always requires, since no approval can be kept', async () => {
    const { service } = await configured();
    const asked = await service.requestConfirmation('elsewhere', { ...REQUEST, alwaysRequire: ['deploy'] });
    expect([asked.check.allowed, asked.check.eventType]).toEqual([false, 'confirmation_required']);
    expect(asked.check.reason).toMatch(/not configured/);
    expect(asked.approval).toBeUndefined();
  });

  it('needs no confirmation the plan list alone would ask for', async () => {
    const { service } = await configured();
    expect((await service.requestConfirmation('elsewhere', REQUEST)).check.allowed).toBe(true);
  });
});

describe('useGrant', () => {
  it('grants an approved approval for its decision, operation and input', async () => {
    const { service, clock } = await approved();
    clock.advance(1_000);
    const use = await service.useGrant('plan', 'a1', USE);
    expect(use.outcome).toBe('granted');
    expect([use.check.allowed, use.check.eventType]).toEqual([true, 'confirmation_grant_used']);
    expect(use.approval).toMatchObject({ id: 'a1', status: 'used', usedAt: iso(T0 + 1_000) });
  });

  it('records a use that finds the approval pending when asked to, naming the approval', async () => {
    const { service } = await requested();
    const use = await service.useGrant('plan', 'a1', { ...USE, recordRefusal: true });
    const entry = await lastEntry(service);
    expect(use.outcome).toBe('pending');
    expect([entry.eventType, entry.result]).toEqual(['confirmation_required', 'denied']);
    expect(entry.details).toMatchObject({ approval_id: 'a1', decision_id: 'd1' });
  });

  it('records a use that finds the approval denied when asked to', async () => {
    const { service } = await requested();
    await service.deny('a1', ANN);
    await service.useGrant('plan', 'a1', { ...USE, recordRefusal: true });
    expect((await lastEntry(service)).eventType).toBe('confirmation_denied');
    expect((await eventTypes(service)).filter((t) => t === 'confirmation_denied')).toHaveLength(2);
  });

  it('leaves a use that finds the approval pending out of the log by default', async () => {
    const { service } = await requested();
    const before = await eventTypes(service);
    await service.useGrant('plan', 'a1', USE);
    expect(await eventTypes(service)).toEqual(before);
  });

  it('refuses a recordRefusal that is not a boolean, naming the field', async () => {
    const { service } = await requested();
    const use = { ...USE, recordRefusal: 'yes' as unknown as boolean };
    expect(await fieldOf(() => service.useGrant('plan', 'a1', use))).toBe('recordRefusal');
  });

  it('marks the approval used in the store', async () => {
    const { service } = await approved();
    await service.useGrant('plan', 'a1', USE);
    expect(await statusOf(service)).toBe('used');
  });

  it('records confirmation_grant_used with who approved', async () => {
    const { service, clock } = await approved();
    clock.advance(1_000);
    await service.useGrant('plan', 'a1', USE);
    const entry = await lastEntry(service);
    expect([entry.eventType, entry.result, entry.timestamp]).toEqual([
      'confirmation_grant_used',
      'allowed',
      T0 + 1_000,
    ]);
    expect(entry.details).toEqual({ approval_id: 'a1', decision_id: 'd1', operation: 'deploy', by: 'ann' });
  });

  it('names each of several operations in the grant’s audit entry', async () => {
    const both = { requiredConfirmations: ['deploy', 'notify'] };
    const { service } = await configured(both);
    const operation = ['deploy', 'notify'];
    await service.requestConfirmation('plan', { ...REQUEST, operation });
    await service.approve('a1', ANN);
    await service.useGrant('plan', 'a1', { ...USE, operation });
    const entry = await lastEntry(service);
    expect(entry.details).toEqual({
      approval_id: 'a1',
      decision_id: 'd1',
      operations: ['deploy', 'notify'],
      by: 'ann',
    });
  });

  it('names each of several operations in the reason a confirmation is required', async () => {
    const { service } = await configured({ requiredConfirmations: ['deploy', 'notify'] });
    const request = await service.requestConfirmation('plan', {
      ...REQUEST,
      operation: ['notify', 'deploy'],
    });
    expect(request.check.reason).toBe('operations "deploy" and "notify" require confirmation');
  });

  it('refuses a grant that was used already', async () => {
    const { service } = await approved();
    await service.useGrant('plan', 'a1', USE);
    const again = await service.useGrant('plan', 'a1', USE);
    expect([again.outcome, again.check.eventType]).toEqual(['refused', 'confirmation_grant_refused']);
    expect(again.check.reason).toContain('used already');
  });

  it('grants only one of two concurrent uses', async () => {
    const { service } = await approved();
    const uses = await Promise.all([
      service.useGrant('plan', 'a1', USE),
      service.useGrant('plan', 'a1', USE),
    ]);
    expect(uses.map((u) => u.outcome).sort()).toEqual(['granted', 'refused']);
  });

  it('answers pending while nobody has decided, recording nothing', async () => {
    const { service } = await requested();
    const use = await service.useGrant('plan', 'a1', USE);
    expect([use.outcome, use.check.allowed, use.check.eventType]).toEqual([
      'pending',
      false,
      'confirmation_required',
    ]);
    expect(use.approval?.status).toBe('pending');
    expect(await eventTypes(service)).toEqual(['confirmation_required']);
  });

  it('answers denied, with who denied and why, for a denied approval', async () => {
    const { service } = await requested();
    await service.deny('a1', { by: 'bob', reason: 'not today' });
    const use = await service.useGrant('plan', 'a1', USE);
    expect([use.outcome, use.check.allowed, use.check.eventType]).toEqual([
      'denied',
      false,
      'confirmation_denied',
    ]);
    expect(use.check.reason).toContain('bob');
    expect(use.check.reason).toContain('not today');
  });

  it.each([
    ['another decision', { ...USE, decisionId: 'd2' }, 'decision "d1"'],
    ['another operation', { ...USE, operation: 'delete' }, 'operation "deploy"'],
    ['a changed input', { ...USE, input: { ...INPUT, replicas: 4 } }, 'input changed'],
    ['no input where one was given', { decisionId: 'd1', operation: 'deploy' }, 'input changed'],
  ])('refuses a grant for %s', async (_label, use, problem) => {
    const { service } = await approved();
    const result = await service.useGrant('plan', 'a1', use);
    expect([result.outcome, result.check.allowed]).toEqual(['refused', false]);
    expect(result.check.reason).toContain(problem);
  });

  it('refuses a grant after the approval expired', async () => {
    const { service, clock } = await approved();
    clock.advance(TTL + 1);
    const use = await service.useGrant('plan', 'a1', USE);
    expect(use.outcome).toBe('refused');
    expect(use.check.reason).toContain(`expired at ${iso(T0 + TTL)}`);
  });

  it('grants at the very moment the approval expires', async () => {
    const { service, clock } = await approved();
    clock.advance(TTL);
    expect((await service.useGrant('plan', 'a1', USE)).outcome).toBe('granted');
  });

  it.each([
    ['another decision', { ...USE, decisionId: 'd2' }, 0],
    ['another operation', { ...USE, operation: 'delete' }, 0],
    ['a changed input', { ...USE, input: { ...INPUT, replicas: 4 } }, 0],
    ['an expired approval', USE, TTL + 1],
  ])('records confirmation_grant_refused for %s', async (_label, use, wait) => {
    const { service, clock } = await approved();
    clock.advance(wait);
    const result = await service.useGrant('plan', 'a1', use);
    const entry = await lastEntry(service);
    expect([entry.eventType, entry.result, entry.timestamp]).toEqual([
      'confirmation_grant_refused',
      'denied',
      T0 + wait,
    ]);
    expect(entry.details).toEqual({
      approval_id: 'a1',
      decision_id: use.decisionId,
      operation: use.operation,
      reason: result.check.reason,
    });
  });

  it('records confirmation_grant_refused for a grant used already', async () => {
    const { service } = await approved();
    await service.useGrant('plan', 'a1', USE);
    await service.useGrant('plan', 'a1', USE);
    expect((await lastEntry(service)).eventType).toBe('confirmation_grant_refused');
  });

  it('keeps a grant it refused for other input usable for its own', async () => {
    const { service } = await approved();
    await service.useGrant('plan', 'a1', { ...USE, input: { target: 'staging' } });
    expect((await service.useGrant('plan', 'a1', USE)).outcome).toBe('granted');
  });

  it('grants whatever the key order of the input', async () => {
    const { service } = await approved();
    const reordered = { tags: { tier: 1, team: 'core' }, replicas: 3, target: 'prod' };
    expect((await service.useGrant('plan', 'a1', { ...USE, input: reordered })).outcome).toBe('granted');
  });

  it('grants for the operation written in another case and spacing', async () => {
    const { service } = await approved();
    expect((await service.useGrant('plan', 'a1', { ...USE, operation: ' Deploy ' })).outcome).toBe('granted');
  });

  it('grants an approval requested without input to a use without input', async () => {
    const { service } = await configured();
    await service.requestConfirmation('plan', { decisionId: 'd1', operation: 'deploy', ttlMs: TTL });
    await service.approve('a1', ANN);
    expect((await service.useGrant('plan', 'a1', { decisionId: 'd1', operation: 'deploy' })).outcome).toBe(
      'granted',
    );
  });

  it('refuses an approval of another plan, leaving it usable for its own', async () => {
    const { service } = await approved();
    await service.configureGuardrails('other', { requiredConfirmations: ['deploy'] });
    const use = await service.useGrant('other', 'a1', USE);
    expect([use.outcome, use.approval]).toEqual(['refused', null]);
    expect(await statusOf(service)).toBe('approved');
  });

  it('refuses an unknown approval id', async () => {
    const { service } = await approved();
    const use = await service.useGrant('plan', 'a9', USE);
    expect([use.outcome, use.check.eventType, use.approval]).toEqual([
      'refused',
      'confirmation_grant_refused',
      null,
    ]);
  });

  it('refuses an empty approval id, naming approval_id', async () => {
    const { service } = await approved();
    expect(await fieldOf(() => service.useGrant('plan', '', USE))).toBe('approval_id');
  });
});

describe('the wall clock while waiting for a person', () => {
  const init: GuardrailsInit = { requiredConfirmations: ['deploy'], maxWallClockSeconds: 60 };

  /** Started at T0, ran 10 s, then asked for confirmation of REQUEST (approval a1). */
  async function waiting() {
    const s = await configured(init);
    await s.service.markStarted('plan');
    s.clock.advance(10_000);
    await s.service.requestConfirmation('plan', { ...REQUEST, ttlMs: 2 * 3_600_000 });
    return s;
  }

  it('stops while a confirmation is pending', async () => {
    const { service, clock } = await waiting();
    clock.advance(3_600_000);
    expect(await elapsed(service)).toBe(10);
  });

  it('stays stopped from the approval until the grant is used', async () => {
    const { service, clock } = await waiting();
    clock.advance(3_600_000);
    await service.approve('a1', ANN);
    clock.advance(30_000);
    expect(await elapsed(service)).toBe(10);
  });

  it('does not count the time between requestConfirmation and useGrant', async () => {
    const { service, clock } = await waiting();
    clock.advance(3_600_000);
    await service.approve('a1', ANN);
    clock.advance(1_000);
    await service.useGrant('plan', 'a1', USE);
    clock.advance(2_000);
    const check = await service.checkWallClock('plan');
    expect([check.allowed, check.observed]).toEqual([true, 12]);
  });

  it('restarts when a denial ends the wait', async () => {
    const { service, clock } = await waiting();
    clock.advance(3_600_000);
    await service.deny('a1', { by: 'bob', reason: 'not today' });
    clock.advance(3_000);
    expect(await elapsed(service)).toBe(13);
  });

  it('keeps running while a confirmation asked with pauseClock false is pending', async () => {
    const { service, clock } = await configured(init);
    await service.markStarted('plan');
    await service.requestConfirmation('plan', { ...REQUEST, pauseClock: false });
    clock.advance(61_000);
    expect((await service.checkWallClock('plan')).allowed).toBe(false);
  });

  it('stays stopped for another wait when a grant is used with pauseClock false', async () => {
    const { service, clock } = await waiting();
    await service.requestConfirmation('plan', { ...REQUEST, decisionId: 'd2', pauseClock: false });
    await service.approve('a2', ANN);
    await service.useGrant('plan', 'a2', { ...USE, decisionId: 'd2', pauseClock: false });
    clock.advance(3_600_000);
    expect(await elapsed(service)).toBe(10);
  });

  it('refuses a pauseClock that is not a boolean, naming it', async () => {
    const { service } = await configured(init);
    const bad = { ...REQUEST, pauseClock: 'no' as unknown as boolean };
    expect(await fieldOf(() => service.requestConfirmation('plan', bad))).toBe('pauseClock');
  });

  it('keeps the time waited in the plan state', async () => {
    const { service, clock } = await waiting();
    clock.advance(3_600_000);
    await service.deny('a1', { by: 'bob', reason: 'not today' });
    const g = await service.getGuardrails('plan');
    expect([g?.pausedMs, g?.pausedSince]).toEqual([3_600_000, null]);
  });

  it('writes the wait going on under the wire key paused_since', async () => {
    const { service } = await waiting();
    const metadata = JSON.parse(JSON.stringify(await service.toMetadata('plan'))) as {
      autonomy_guardrails: { guardrails: Record<string, unknown> };
    };
    expect(metadata.autonomy_guardrails.guardrails['paused_since']).toBe(iso(T0 + 10_000));
  });

  it('writes the time waited under the wire key paused_ms and reads it back', async () => {
    const { service, clock } = await waiting();
    clock.advance(3_600_000);
    await service.deny('a1', { by: 'bob', reason: 'not today' });
    const metadata: unknown = JSON.parse(JSON.stringify(await service.toMetadata('plan')));
    expect(metadata).toMatchObject({ autonomy_guardrails: { guardrails: { paused_ms: 3_600_000 } } });
    const copy = new AutonomyGuardrailService({ clock });
    await copy.loadFromMetadata('plan', metadata);
    expect(await elapsed(copy)).toBe(10);
  });
});

describe('getApproval and listApprovals', () => {
  /** Approvals a1 (plan, approved), a2 (other, pending), a3 (plan, pending), requested a second apart. */
  async function three() {
    const s = await configured();
    await s.service.configureGuardrails('other', { requiredConfirmations: ['deploy'] });
    await s.service.requestConfirmation('plan', REQUEST);
    s.clock.advance(1_000);
    await s.service.requestConfirmation('other', REQUEST);
    s.clock.advance(1_000);
    await s.service.requestConfirmation('plan', { ...REQUEST, decisionId: 'd3' });
    await s.service.approve('a1', ANN);
    return s;
  }

  const idsOf = (approvals: { id: string }[]): string[] => approvals.map((a) => a.id);

  it('returns null for an unknown approval id', async () => {
    const { service } = await configured();
    expect(await service.getApproval('a9')).toBeNull();
  });

  it('refuses an empty approval id, naming approval_id', async () => {
    const { service } = await configured();
    expect(await fieldOf(() => service.getApproval(''))).toBe('approval_id');
  });

  it('lists every approval, oldest request first', async () => {
    const { service } = await three();
    expect(idsOf(await service.listApprovals())).toEqual(['a1', 'a2', 'a3']);
  });

  it('lists the approvals of one plan', async () => {
    const { service } = await three();
    expect(idsOf(await service.listApprovals({ planId: 'plan' }))).toEqual(['a1', 'a3']);
  });

  it('lists the approvals in one status', async () => {
    const { service } = await three();
    expect(idsOf(await service.listApprovals({ status: 'pending' }))).toEqual(['a2', 'a3']);
  });

  it('lists the approvals of one plan in one status', async () => {
    const { service } = await three();
    expect(idsOf(await service.listApprovals({ planId: 'plan', status: 'pending' }))).toEqual(['a3']);
  });

  it('refuses an unknown status, naming status', async () => {
    const { service } = await three();
    const filter = { status: 'maybe' as ApprovalStatus };
    expect(await fieldOf(() => service.listApprovals(filter))).toBe('status');
  });

  it('refuses a bad plan id, naming plan_id', async () => {
    const { service } = await three();
    expect(await fieldOf(() => service.listApprovals({ planId: '' }))).toBe('plan_id');
  });

  it('forgets the approvals of a removed plan', async () => {
    const { service } = await three();
    await service.removePlan('plan');
    expect(idsOf(await service.listApprovals())).toEqual(['a2']);
    expect(await service.getApproval('a1')).toBeNull();
  });

  it('keeps approvals out of plan metadata', async () => {
    const { service } = await three();
    const metadata = JSON.stringify(await service.toMetadata('plan'));
    expect(metadata).not.toContain('inputHash');
    expect(metadata).not.toContain('input_hash');
  });
});

describe('approval ids', () => {
  it('refuses an id that ids() makes empty, naming ids()', async () => {
    const service = new AutonomyGuardrailService({ clock: new ManualClock(T0), ids: () => '' });
    await service.configureGuardrails('plan', { requiredConfirmations: ['deploy'] });
    expect(await fieldOf(() => service.requestConfirmation('plan', REQUEST))).toBe('ids()');
    expect(await service.listApprovals()).toEqual([]);
  });

  it('refuses ids that is not a function, naming ids', () => {
    const options = { ids: 'a1' } as unknown as { ids: () => string };
    expect(thrown(() => new AutonomyGuardrailService(options)).field).toBe('ids');
  });
});

describe('approvals at their edges', () => {
  it('keeps the reason a person gave for a denial in the audit entry', async () => {
    const { service } = await requested();
    await service.deny('a1', { by: 'bob', reason: 'not today' });
    const last = (await service.getAuditTrail('plan'))?.entries.at(-1);
    expect(last?.details['reason']).toBe('not today');
  });

  it('rejects, rather than throws, a decision without a decider', async () => {
    const { service } = await requested();
    const pending = service.approve('a1', { by: '' });
    await expect(pending).rejects.toBeInstanceOf(GuardrailValidationError);
  });

  it('records the refusal of an unknown approval id on a configured plan', async () => {
    const { service } = await configured();
    await service.useGrant('plan', 'nope', USE);
    expect((await service.getAuditTrail('plan'))?.entries.at(-1)?.eventType).toBe(
      'confirmation_grant_refused',
    );
  });

  it('refuses a pending approval whose time ran out rather than waiting on it', async () => {
    const { service, clock } = await requested();
    clock.advance(TTL + 1);
    expect((await service.useGrant('plan', 'a1', USE)).outcome).toBe('refused');
  });

  it('refuses a lifetime past ten years, naming ttlMs', async () => {
    const { service } = await configured();
    const request = { ...REQUEST, ttlMs: 9e15 };
    expect(await fieldOf(() => service.requestConfirmation('plan', request))).toBe('ttlMs');
  });

  it('refuses an id that is taken rather than replacing the approval that has it', async () => {
    const clock = new ManualClock(T0);
    const service = new AutonomyGuardrailService({ clock, ids: () => 'same' });
    await service.configureGuardrails('plan', { requiredConfirmations: ['deploy'] });
    await service.requestConfirmation('plan', REQUEST);
    await service.approve('same', ANN);
    expect(await codeOf(() => service.requestConfirmation('plan', REQUEST))).toBe('APPROVAL_ID_TAKEN');
    expect((await service.getApproval('same'))?.status).toBe('approved');
  });

  it('lists approvals by request time even when the clock went back', async () => {
    const { service, clock } = await configured();
    clock.advance(60_000);
    await service.requestConfirmation('plan', REQUEST);
    clock.set(T0);
    await service.requestConfirmation('plan', REQUEST);
    expect((await service.listApprovals()).map((a) => a.id)).toEqual(['a2', 'a1']);
  });

  it('refuses a decider holding an invisible character, naming by', async () => {
    const { service } = await requested();
    expect(await fieldOf(() => service.approve('a1', { by: 'ann\u200b' }))).toBe('by');
  });

  it('refuses a reason holding a terminal escape, naming reason', async () => {
    const { service } = await requested();
    expect(await fieldOf(() => service.deny('a1', { by: 'bob', reason: 'no\u001b[2J' }))).toBe('reason');
  });

  it('keeps line breaks in a reason', async () => {
    const { service } = await requested();
    expect((await service.deny('a1', { by: 'bob', reason: 'no:\n- risky' })).reason).toBe('no:\n- risky');
  });

  it('refuses a missing request object, naming request', async () => {
    const { service } = await configured();
    expect(await fieldOf(() => service.requestConfirmation('plan', undefined as never))).toBe('request');
  });
});

describe('findApproval', () => {
  it('finds the newest approval asked for a decision of the plan', async () => {
    const { service, clock } = await requested();
    await service.deny('a1', { by: 'ann', reason: 'not now' });
    clock.advance(1000);
    await service.requestConfirmation('plan', REQUEST);
    expect((await service.findApproval('plan', 'd1'))?.id).toBe('a2');
  });

  it('finds nothing for a decision no approval was asked for', async () => {
    const { service } = await requested();
    expect(await service.findApproval('plan', 'd2')).toBeNull();
  });

  it('refuses a decision id that is not a key, naming the field', async () => {
    const { service } = await configured();
    expect(await fieldOf(() => service.findApproval('plan', ''))).toBe('decisionId');
  });
});
