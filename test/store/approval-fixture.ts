import type { Approval } from '../../src/index.js';

/** A pending approval of plan "p" as a store from before approvals named a tool kept it. */
export const OLD_APPROVAL: Approval = Object.freeze({
  id: 'old',
  planId: 'p',
  decisionId: 'd1',
  operation: 'deploy',
  inputHash: 'a'.repeat(64),
  requestedAt: '2026-11-30T10:00:00.000Z',
  expiresAt: '2026-11-30T11:00:00.000Z',
  status: 'pending',
});
