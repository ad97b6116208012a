import { describe, expect, it } from 'vitest';
import { as, codeOf, eventsOf, lastOf, REQUEST, team, TTL, USE } from '../support/team.js';

const RULES = { deploy: { approvers: ['role:release'] } };

/** A team with a pending approval a1 under `rules`, the clock past its expiry. */
async function expired(rules: Parameters<typeof team>[0] = RULES, options?: Parameters<typeof team>[1]) {
  const t = await team(rules, options);
  await t.service.requestConfirmation('plan', REQUEST);
  t.clock.advance(TTL + 1);
  return t;
}

describe('an approval nobody decided in time', () => {
  it('is denied by leash when its grant is asked for', async () => {
    const { service } = await expired();
    const use = await service.useGrant('plan', 'a1', USE);
    expect([use.outcome, use.approval?.status, use.approval?.decider]).toEqual([
      'denied',
      'denied',
      { kind: 'system', subject: 'leash', name: 'leash' },
    ]);
  });

  it('is recorded as confirmation_expired', async () => {
    const { service } = await expired();
    await service.useGrant('plan', 'a1', USE);
    expect(await lastOf(service, 'confirmation_expired')).toMatchObject({
      approval_id: 'a1',
      rule: 'deploy',
    });
  });

  it('refuses a late approval with APPROVAL_EXPIRED and is denied', async () => {
    const { service } = await expired();
    expect(await codeOf(() => service.approve('a1', as('ann')))).toBe('APPROVAL_EXPIRED');
    expect((await service.getApproval('a1'))?.status).toBe('denied');
  });

  it('records the expiry and the refused decision together', async () => {
    const { service } = await expired();
    await codeOf(() => service.approve('a1', as('ann')));
    expect((await eventsOf(service)).slice(-2)).toEqual([
      'confirmation_expired',
      'confirmation_vote_refused',
    ]);
  });

  it('is denied by a sweep, which returns it', async () => {
    const { service } = await expired();
    const swept = await service.expireApprovals();
    expect(swept.map((a) => [a.id, a.status, a.decidedBy])).toEqual([['a1', 'denied', 'leash']]);
  });

  it('is swept once', async () => {
    const { service } = await expired();
    await service.expireApprovals();
    expect(await service.expireApprovals()).toEqual([]);
  });

  it('is not swept before its expiry', async () => {
    const { service, clock } = await team(RULES);
    await service.requestConfirmation('plan', REQUEST);
    clock.advance(TTL);
    expect(await service.expireApprovals()).toEqual([]);
  });

  it('is swept under the default rule once the store has principals', async () => {
    const { service } = await expired(null);
    expect((await service.expireApprovals()).map((a) => a.id)).toEqual(['a1']);
  });

  it('stays pending under no rule while the store has no principals, as before', async () => {
    const { service } = await expired(null, { people: false });
    expect(await service.expireApprovals()).toEqual([]);
    expect((await service.getApproval('a1'))?.status).toBe('pending');
  });

  it('is refused, not denied, when its grant is asked for under no rule, as before', async () => {
    const { service } = await expired(null, { people: false });
    expect((await service.useGrant('plan', 'a1', USE)).outcome).toBe('refused');
  });
});
