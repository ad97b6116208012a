// `leash approve` and `leash deny` deciding as a user proved by a personal token (--token or LEASH_TOKEN)
// once the store has users, and with --by as before when it has none. In this process, on a SQLite file.
import { beforeEach, describe, expect, it } from 'vitest';
import type { AutonomyGuardrailService } from '../../src/service/AutonomyGuardrailService.js';
import { cliOnSqlite } from '../support/cliStore.js';

const { leash, withService, clock } = cliOnSqlite('leash-approve-token-');

let approvalId: string;

beforeEach(async () => {
  approvalId = await withService(async (s) => {
    await s.configureGuardrails('release', { requiredConfirmations: ['deploy'] });
    const asked = await s.requestConfirmation('release', {
      decisionId: 'd1',
      operation: 'deploy',
      ttlMs: 86_400_000,
    });
    return asked.approval?.id ?? '';
  });
});

/** Adds Ann and makes her a token; resolves with it. */
async function annsToken(options: { expiresInSeconds?: number } = {}): Promise<string> {
  return withService(async (s) => {
    await s.addPrincipal({ id: 'ann', name: 'Ann Lee', roles: ['release'] });
    return (await s.createToken('ann', options)).token;
  });
}

function approval(s: AutonomyGuardrailService) {
  return s.getApproval(approvalId);
}

describe('with users in the store', () => {
  it('approves as the user of the token given with --token', async () => {
    const token = await annsToken();
    const { code } = await leash(['approve', approvalId, '--token', token, '--reason', 'checked']);
    const a = await withService(approval);
    expect([code, a?.status, a?.decidedBy]).toEqual([0, 'approved', 'Ann Lee']);
  });

  it('approves as the user of the token in LEASH_TOKEN', async () => {
    const token = await annsToken();
    const { code } = await leash(['approve', approvalId], { LEASH_TOKEN: token });
    expect([code, (await withService(approval))?.decidedBy]).toEqual([0, 'Ann Lee']);
  });

  it('denies as the user of the token', async () => {
    const token = await annsToken();
    const { code } = await leash(['deny', approvalId, '--reason', 'freeze'], { LEASH_TOKEN: token });
    const a = await withService(approval);
    expect([code, a?.status, a?.decidedBy]).toEqual([0, 'denied', 'Ann Lee']);
  });

  it('refuses --by alone with exit 2, saying to pass --token or set LEASH_TOKEN, and decides nothing', async () => {
    await annsToken();
    const { code, err } = await leash(['approve', approvalId, '--by', 'mallory']);
    expect([code, err, (await withService(approval))?.status]).toEqual([
      2,
      expect.stringMatching(/pass --token <token> or set LEASH_TOKEN/),
      'pending',
    ]);
  });

  it('decides as the token in LEASH_TOKEN when --by is given too, and says --by is ignored', async () => {
    const token = await annsToken();
    const { code, err } = await leash(['approve', approvalId, '--by', 'mallory'], { LEASH_TOKEN: token });
    expect([code, err, (await withService(approval))?.decidedBy]).toEqual([
      0,
      expect.stringContaining('--by is ignored'),
      'Ann Lee',
    ]);
  });

  it('refuses --by beside --token with exit 2', async () => {
    const token = await annsToken();
    const { code } = await leash(['approve', approvalId, '--by', 'mallory', '--token', token]);
    expect([code, (await withService(approval))?.status]).toEqual([2, 'pending']);
  });

  it('refuses a token the store does not know with exit 2, without printing it', async () => {
    await annsToken();
    const unknown = `leash_pat_${'Z'.repeat(43)}`;
    const { code, out, err } = await leash(['approve', approvalId, '--token', unknown]);
    expect([code, err.includes('ZZZZ') || out.includes('ZZZZ'), err]).toEqual([
      2,
      false,
      expect.stringContaining('not one this store knows'),
    ]);
  });

  it('refuses a revoked token with exit 2, saying it was revoked', async () => {
    const token = await annsToken();
    await withService(async (s) => s.revokeToken((await s.listTokens())[0]?.id ?? ''));
    const { code, err } = await leash(['approve', approvalId, '--token', token]);
    expect([code, err, err.includes(token)]).toEqual([2, expect.stringContaining('was revoked'), false]);
  });

  it('refuses an expired token with exit 2, saying it expired', async () => {
    const token = await annsToken({ expiresInSeconds: 60 });
    clock().advance(60_000);
    const { code, err } = await leash(['approve', approvalId, '--token', token]);
    expect([code, err]).toEqual([2, expect.stringContaining('expired at 2026-11-30T10:01:00.000Z')]);
  });

  it('refuses the token of a revoked user with exit 2', async () => {
    const token = await annsToken();
    await withService(async (s) => {
      await s.addPrincipal({ id: 'bob', name: 'Bob', roles: [] });
      await s.revokePrincipal('ann');
    });
    const { code, err } = await leash(['approve', approvalId, '--token', token]);
    expect([code, err]).toEqual([2, expect.stringContaining('principal "ann"')]);
  });
});

describe('with no users in the store', () => {
  it('approves with --by, as before', async () => {
    const { code } = await leash(['approve', approvalId, '--by', 'alice']);
    expect([code, (await withService(approval))?.decidedBy]).toEqual([0, 'alice']);
  });

  it('does not read LEASH_TOKEN', async () => {
    const { code } = await leash(['approve', approvalId, '--by', 'alice'], { LEASH_TOKEN: 'stale' });
    expect([code, (await withService(approval))?.decidedBy]).toEqual([0, 'alice']);
  });

  it('exits 2 without --by, saying who decides must be named', async () => {
    const { code, err } = await leash(['approve', approvalId]);
    expect([code, err]).toEqual([2, expect.stringContaining('--by <name>')]);
  });

  it('approves with --by once every user is revoked', async () => {
    await annsToken();
    await withService((s) => s.revokePrincipal('ann'));
    const { code } = await leash(['approve', approvalId, '--by', 'alice']);
    expect([code, (await withService(approval))?.decidedBy]).toEqual([0, 'alice']);
  });
});
