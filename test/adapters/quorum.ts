// What each adapter's test of an approval rule starts from: a plan run for ann, whose `write` needs two
// different people of the release role (ann, bob and carol hold it), signed in with personal tokens.
import { approvalRules, type Approval, type GuardrailsInit } from '../../src/index.js';
import { guarded, type GuardOptions } from '../agent/support.js';
import { codeOf, PEOPLE } from '../support/team.js';

/** The rule: two different people of the release role approve a `write`; the requester may not. */
export const QUORUM_RULES = { write: { approvers: ['role:release'], quorum: 2 } };

/**
 * A run guard as {@link guarded} makes it, over a service with {@link QUORUM_RULES} whose store knows
 * {@link PEOPLE}; the plan labelled user=ann. `vote(approvalId, id)` approves as person `id`, with a
 * personal token of theirs.
 */
export async function quorumGuard(
  makeStore: Parameters<typeof guarded>[0],
  init: GuardrailsInit,
  options: GuardOptions = {},
) {
  const g = await guarded(makeStore, { ...init, labels: { user: 'ann' } }, options, {
    approvalRules: approvalRules(QUORUM_RULES),
  });
  for (const p of PEOPLE) await g.service.addPrincipal({ id: p.id, name: p.name, roles: [...p.roles] });
  const vote = async (approvalId: string, id: string): Promise<Approval> => {
    const { token } = await g.service.createToken(id);
    const identity = await g.service.authenticate(token);
    return g.service.approve(approvalId, { by: identity.name, identity });
  };
  /** The code of the refusal of person `id`'s vote. */
  const refused = (approvalId: string, id: string) => codeOf(() => vote(approvalId, id));
  return { ...g, vote, refused };
}
