import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { slackMessage } from '../../src/notify/slack.js';
import { parsePolicy } from '../../src/policy/policy.js';
import { policyNotifyTargets } from '../../src/policy/notify.js';
import { approvalPayload } from '../../src/service/notifications.js';
import type { Approval } from '../../src/store/GuardrailStore.js';

// docs/teams.md shows a policy and the Slack message it posts: both must be what leash reads and sends.

const page = readFileSync(new URL('../../docs/teams.md', import.meta.url), 'utf8');
const blockAfter = (marker: string, lang: string): string => {
  const start = page.indexOf('```' + lang + '\n', page.indexOf(marker)) + lang.length + 4;
  return page.slice(start, page.indexOf('\n```', start));
};

const ANN_VOTED: Approval = {
  id: 'apr_7f3c2a',
  planId: 'release-2026-12-03',
  decisionId: 'deploy-1',
  operation: 'deploy',
  toolName: 'deploy',
  inputPreview: '{"service":"billing","version":"4.2.0"}',
  inputHash: '0'.repeat(64),
  requestedAt: '2026-12-03T14:00:00.000Z',
  expiresAt: '2026-12-03T14:15:00.000Z',
  status: 'pending',
  requester: 'carol',
  rule: {
    name: 'deploy',
    approvers: ['role:release'],
    quorum: 2,
    selfApproval: false,
    onTimeout: 'deny',
    elicitation: 'deny',
  },
  votes: [
    {
      by: { kind: 'token', subject: 'ann', name: 'Ann Lee', principal: 'ann', roles: ['release'] },
      at: '2026-12-03T14:03:00.000Z',
    },
  ],
};

describe('docs/teams.md', () => {
  it('shows a policy leash reads, with its two notify targets', () => {
    const policy = parsePolicy(blockAfter('## Rules', 'yaml'), { format: 'yaml' });
    const env = { LEASH_OPS_WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 7).toString('base64')}` };
    expect(policyNotifyTargets(policy, env).targets.map((t) => t.name)).toEqual(['ops', 'release-channel']);
  });

  it('shows the Slack message leash posts for a first vote of two', () => {
    const payload = {
      type: 'approval.voted',
      timestamp: '2026-12-03T14:03:00.000Z',
      data: { approval: approvalPayload(ANN_VOTED) },
    };
    const sent = slackMessage('approval.voted', payload, { publicUrl: 'https://leash.example.com' });
    expect(JSON.parse(blockAfter('<!-- slack-example', 'json'))).toEqual(sent);
  });
});
