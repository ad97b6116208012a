import { describe, expect, it } from 'vitest';
import { as, codeOf, eventsOf, lastOf, REQUEST, team, USE } from '../support/team.js';

const RELEASE_TWO = { deploy: { approvers: ['role:release'], quorum: 2 } };

/** A team with `rules` and a pending approval a1 for REQUEST. */
async function requested(
  rules: Parameters<typeof team>[0] = RELEASE_TWO,
  options?: Parameters<typeof team>[1],
) {
  const t = await team(rules, options);
  await t.service.requestConfirmation('plan', REQUEST);
  return t;
}

describe('approvals under a rule', () => {
  it('keeps the rule and the requester in the approval it opens', async () => {
    const { service } = await requested();
    expect(await service.getApproval('a1')).toMatchObject({
      requester: 'carol',
      rule: { name: 'deploy', approvers: ['role:release'], quorum: 2, selfApproval: false },
    });
  });

  it('takes the requester from the request before the plan’s user label', async () => {
    const { service } = await team(RELEASE_TWO);
    await service.requestConfirmation('plan', { ...REQUEST, requester: 'bob' });
    expect((await service.getApproval('a1'))?.requester).toBe('bob');
  });

  it('opens an approval under the tool’s rule for a tool call', async () => {
    const { service } = await team({ Deploy: { approvers: ['user:ann'] } });
    const confirm = { ...REQUEST, toolName: 'Deploy' };
    await service.beginToolCall('plan', { confirm, estimate: 0, reservationId: 'r1' });
    expect((await service.getApproval('a1'))?.rule?.approvers).toEqual(['user:ann']);
  });

  it('gives an approval the rule’s time to live', async () => {
    const { service } = await team({ deploy: { approvers: ['*'], ttlMs: 5000 } });
    await service.requestConfirmation('plan', REQUEST);
    expect((await service.getApproval('a1'))?.expiresAt).toBe('2026-11-30T10:00:05.000Z');
  });

  it('keeps an approval pending after one vote of a quorum of two', async () => {
    const { service } = await requested();
    const a = await service.approve('a1', as('ann'));
    expect([a.status, a.votes?.map((v) => v.by.principal)]).toEqual(['pending', ['ann']]);
  });

  it('records a vote below the quorum as confirmation_vote', async () => {
    const { service } = await requested();
    await service.approve('a1', as('ann'));
    expect(await lastOf(service, 'confirmation_vote')).toMatchObject({ rule: 'deploy', votes: 1, quorum: 2 });
  });

  it('refuses the same person approving twice, and the approval stays pending', async () => {
    const { service } = await requested();
    await service.approve('a1', as('ann'));
    expect(await codeOf(() => service.approve('a1', as('ann')))).toBe('APPROVAL_ALREADY_VOTED');
    expect((await service.getApproval('a1'))?.status).toBe('pending');
  });

  it('grants once two people the rule names approved', async () => {
    const { service } = await requested();
    await service.approve('a1', as('ann'));
    const a = await service.approve('a1', as('bob'));
    expect([a.status, a.decidedBy, a.decider?.principal]).toEqual(['approved', 'Ann, Bob', 'bob']);
  });

  it('lets the grant of a quorum be used once', async () => {
    const { service } = await requested();
    await service.approve('a1', as('ann'));
    await service.approve('a1', as('bob'));
    const first = await service.useGrant('plan', 'a1', USE);
    const second = await service.useGrant('plan', 'a1', USE);
    expect([first.outcome, second.outcome]).toEqual(['granted', 'refused']);
  });

  it('refuses the requester approving their own run', async () => {
    const { service } = await requested();
    expect(await codeOf(() => service.approve('a1', as('carol')))).toBe('APPROVAL_SELF');
  });

  it('lets the requester approve where the rule allows self-approval', async () => {
    const { service } = await requested({ deploy: { approvers: ['role:release'], selfApproval: true } });
    expect((await service.approve('a1', as('carol'))).status).toBe('approved');
  });

  it('refuses a person the rule does not name, naming the rule', async () => {
    const { service } = await requested();
    await expect(service.approve('a1', as('eve'))).rejects.toThrow(
      '"Eve" may not decide approval "a1": rule "deploy" allows role:release',
    );
  });

  it('records in the audit log how the person who approved was proved, and who they are', async () => {
    const { service } = await requested();
    await service.approve('a1', as('ann'));
    const entry = await lastOf(service, 'confirmation_vote');
    expect(entry?.['identity']).toEqual({
      kind: 'token',
      subject: 'tok_ann',
      name: 'Ann',
      issuer: null,
      principal: 'ann',
    });
  });

  it('records a refused decision with its code and rule', async () => {
    const { service } = await requested();
    await codeOf(() => service.approve('a1', as('eve')));
    expect(await lastOf(service, 'confirmation_vote_refused')).toMatchObject({
      code: 'APPROVAL_NOT_ALLOWED',
      rule: 'deploy',
      principal: 'eve',
    });
  });

  it('ends the approval on one denial by a person the rule names', async () => {
    const { service } = await requested();
    await service.approve('a1', as('ann'));
    const a = await service.deny('a1', as('bob', 'not today'));
    expect([a.status, a.decidedBy, a.reason]).toEqual(['denied', 'Bob', 'not today']);
  });

  it('refuses a denial by a person the rule does not name', async () => {
    const { service } = await requested();
    expect(await codeOf(() => service.deny('a1', as('eve', 'no')))).toBe('APPROVAL_NOT_ALLOWED');
  });

  it('refuses a typed name once the store has principals', async () => {
    const { service } = await requested();
    expect(await codeOf(() => service.approve('a1', { by: 'ann' }))).toBe('IDENTITY_REQUIRED');
  });

  it('refuses a principal revoked since they signed in', async () => {
    const { service, store } = await requested();
    const ann = await store.getPrincipal('ann');
    await store.putPrincipal({ ...ann!, revokedAt: '2026-11-30T10:00:00.000Z' });
    expect(await codeOf(() => service.approve('a1', as('ann')))).toBe('APPROVAL_NOT_ALLOWED');
  });

  it('reads a principal’s roles from the store, not from the identity given', async () => {
    const { service } = await requested();
    const forged = { ...as('eve'), identity: { ...as('eve').identity, roles: ['release'] } };
    expect(await codeOf(() => service.approve('a1', forged))).toBe('APPROVAL_NOT_ALLOWED');
  });

  it('applies the default rule when principals exist and no rule matched: any person but the requester', async () => {
    const { service } = await requested(null);
    expect([
      await codeOf(() => service.approve('a1', as('carol'))),
      (await service.approve('a1', as('eve'))).status,
    ]).toEqual(['APPROVAL_SELF', 'approved']);
  });
});

describe('approvals with no principals and no rule', () => {
  it('are decided by one typed name, as before', async () => {
    const { service } = await requested(null, { people: false });
    const a = await service.approve('a1', { by: 'ann', reason: 'ok' });
    expect([a.status, a.decidedBy, a.votes, a.decider, a.rule]).toEqual([
      'approved',
      'ann',
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('record the decision as confirmation_approved', async () => {
    const { service } = await requested(null, { people: false });
    await service.approve('a1', { by: 'ann' });
    expect((await eventsOf(service)).at(-1)).toBe('confirmation_approved');
  });
});
