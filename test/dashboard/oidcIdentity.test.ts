import { describe, expect, it } from 'vitest';
import { claimMapping, identityFromClaims, rolesFromClaims } from '../../src/dashboard/oidcIdentity.js';
import type { Principal } from '../../src/store/people.js';

const ANN: Principal = {
  id: 'ann',
  name: 'Ann Lee',
  roles: ['release'],
  email: 'ann@example.com',
  createdAt: '2026-11-30T10:00:00.000Z',
};
const CLAIMS = { iss: 'https://idp.example.com', sub: 's-1' };

describe('who a provider’s claims sign in', () => {
  it('is the principal whose e-mail the user claim names, in any case, with its name and roles', () => {
    const outcome = identityFromClaims({ ...CLAIMS, email: 'ANN@example.com', name: 'A. Lee' }, [ANN], {});
    expect(outcome).toEqual({
      ok: true,
      claimRoles: [],
      identity: {
        kind: 'oidc',
        subject: 's-1',
        issuer: 'https://idp.example.com',
        name: 'Ann Lee',
        principal: 'ann',
        roles: ['release'],
      },
    });
  });

  it('is the principal whose id the user claim names, when the claim is another one', () => {
    const outcome = identityFromClaims({ ...CLAIMS, preferred_username: 'ann' }, [ANN], {
      userClaim: 'preferred_username',
    });
    expect(outcome.ok && outcome.identity.principal).toBe('ann');
  });

  it('is not a revoked principal', () => {
    const revoked = { ...ANN, revokedAt: '2026-11-30T11:00:00.000Z' };
    expect(identityFromClaims({ ...CLAIMS, email: 'ann@example.com' }, [revoked], {}).ok).toBe(false);
  });

  it('adds the roles of the groups claim to the principal’s', () => {
    const outcome = identityFromClaims({ ...CLAIMS, email: 'ann@example.com', groups: ['ops'] }, [ANN], {
      rolesClaim: 'groups',
    });
    expect(outcome.ok && outcome.identity.roles).toEqual(['ops', 'release']);
  });

  it('is someone with roles alone when no principal matches, named by the name claim', () => {
    const outcome = identityFromClaims(
      { ...CLAIMS, email: 'x@example.com', name: 'Xavier', groups: ['ops'] },
      [ANN],
      {
        rolesClaim: 'groups',
      },
    );
    expect(outcome.ok && outcome.identity).toEqual({
      kind: 'oidc',
      subject: 's-1',
      issuer: 'https://idp.example.com',
      name: 'Xavier',
      roles: ['ops'],
    });
  });

  it('is refused when no principal matches and no role is given', () => {
    expect(identityFromClaims({ ...CLAIMS, email: 'x@example.com' }, [ANN], {})).toEqual({
      ok: false,
      user: 'x@example.com',
      why: 'no leash user has this name or e-mail, and you hold no role here',
    });
  });

  it('is refused without the user claim, naming it', () => {
    expect(identityFromClaims(CLAIMS, [ANN], {})).toMatchObject({
      ok: false,
      why: expect.stringContaining('"email"'),
    });
  });

  it('does not take a name with invisible characters from the claims', () => {
    const outcome = identityFromClaims(
      { ...CLAIMS, email: 'x@example.com', name: 'Ann\u200b Lee', groups: ['ops'] },
      [],
      {
        rolesClaim: 'groups',
      },
    );
    expect(outcome.ok && outcome.identity.name).toBe('x@example.com');
  });
});

describe('the roles of a groups claim', () => {
  it('are the groups that are role names, when no mapping is given', () => {
    expect(
      rolesFromClaims({ groups: ['ops', 'Release Team', '/admins', 'ops', 7] }, { rolesClaim: 'groups' }),
    ).toEqual(['ops']);
  });

  it('are the mapped groups only, as the roles they map to, when a mapping is given', () => {
    const m = { rolesClaim: 'groups', roles: { 'Release Team': 'release', staff: 'release' } };
    expect(rolesFromClaims({ groups: ['Release Team', 'staff', 'ops'] }, m)).toEqual(['release']);
  });

  it('take a claim holding one group as a string', () => {
    expect(rolesFromClaims({ role: 'ops' }, { rolesClaim: 'role' })).toEqual(['ops']);
  });

  it('are none without a roles claim', () => {
    expect(rolesFromClaims({ groups: ['ops'] }, {})).toEqual([]);
  });
});

describe('a mapping of claims', () => {
  it('names email as the user claim unless told', () => {
    expect(claimMapping({}).userClaim).toBe('email');
  });

  it('refuses a role that is not a role name, naming oidcRole', () => {
    expect(() => claimMapping({ rolesClaim: 'groups', roles: { staff: 'Release' } })).toThrow(
      /^oidcRole must be/,
    );
  });

  it('refuses mapped roles without the claim that holds the groups', () => {
    expect(() => claimMapping({ roles: { staff: 'release' } })).toThrow(/^oidcRolesClaim must be given/);
  });
});
