// The service's principals and personal tokens: its store, its clock, and a token shown once.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { AutonomyGuardrailService } from '../../src/service/AutonomyGuardrailService.js';
import { MemoryStore } from '../../src/store/memory/MemoryStore.js';
import { rejection, storeWithoutPeople } from '../support/people.js';
import { T0 } from '../support/service.js';

function service(clock = new ManualClock(T0)): AutonomyGuardrailService {
  return new AutonomyGuardrailService({ store: new MemoryStore(), clock });
}

describe('the service', () => {
  it('authenticates a token it made into the identity of its principal', async () => {
    const s = service();
    await s.addPrincipal({ id: 'ann', name: 'Ann Lee', roles: ['release'] });
    const { token } = await s.createToken('ann');
    expect(await s.authenticate(token)).toEqual({
      kind: 'token',
      subject: 'ann',
      name: 'Ann Lee',
      principal: 'ann',
      roles: ['release'],
    });
  });

  it('refuses a token past its expiry on its own clock', async () => {
    const clock = new ManualClock(T0);
    const s = service(clock);
    await s.addPrincipal({ id: 'ann', name: 'Ann Lee', roles: [] });
    const { token } = await s.createToken('ann', { expiresInSeconds: 3600 });
    clock.advance(3_600_000);
    expect((await rejection(s.authenticate(token))).code).toBe('TOKEN_EXPIRED');
  });

  it('has principals once one is added, and none once it is revoked', async () => {
    const s = service();
    await s.addPrincipal({ id: 'ann', name: 'Ann Lee', roles: [] });
    const before = await s.hasPrincipals();
    await s.revokePrincipal('ann');
    expect([before, await s.hasPrincipals()]).toEqual([true, false]);
  });

  it('lists the tokens of a principal without their text', async () => {
    const s = service();
    await s.addPrincipal({ id: 'ann', name: 'Ann Lee', roles: [] });
    const { token, record } = await s.createToken('ann', { label: 'laptop' });
    const listed = await s.listTokens({ principalId: 'ann' });
    expect([listed, JSON.stringify(listed).includes(token)]).toEqual([[record], false]);
  });

  it('refuses principals with STORE_UNSUPPORTED over a store without their methods', async () => {
    const s = new AutonomyGuardrailService({ store: storeWithoutPeople() });
    expect((await rejection(s.addPrincipal({ id: 'ann', name: 'Ann', roles: [] }))).code).toBe(
      'STORE_UNSUPPORTED',
    );
  });
});
