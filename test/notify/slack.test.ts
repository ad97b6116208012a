import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/json.js';
import { codeSpan, escapeMrkdwn, slackMessage } from '../../src/notify/slack.js';

const approval = {
  id: 'ap-1',
  plan_id: 'release 7',
  tool_name: 'deploy',
  operation: 'deploy',
  input_preview: '{"env":"prod","note":"<!channel> & `rm -rf`"}',
  requested_at: '2026-12-01T10:00:00.000Z',
  expires_at: '2026-12-02T10:00:00.000Z',
  status: 'pending',
  requester: 'ann',
  rule: { name: 'deploy', approvers: ['role:release'], quorum: 2 },
  votes: [{ by: { kind: 'token', subject: 'bob', name: 'Bob <b@x>' }, at: '2026-12-01T10:05:00.000Z' }],
};

function payload(event: string, data: JsonObject): JsonObject {
  return { type: event, timestamp: '2026-12-01T10:00:00.000Z', data };
}

const requested = slackMessage('approval.requested', payload('approval.requested', { approval }), {
  publicUrl: 'https://leash.example.com/',
});

type Block = { type: string; [key: string]: unknown };
const blocks = (m: JsonObject) => m['blocks'] as unknown as Block[];
const sectionTexts = (m: JsonObject) =>
  blocks(m)
    .filter((b) => b.type === 'section')
    .flatMap((b) => [
      (b['text'] as { text: string }).text,
      ...((b['fields'] as { text: string }[] | undefined) ?? []).map((f) => f.text),
    ]);

describe('slackMessage of an approval request', () => {
  it('is a header, a section, a context and a button, in that order', () => {
    expect(blocks(requested).map((b) => b.type)).toEqual(['header', 'section', 'context', 'actions']);
  });

  it('names the tool in the header as plain text', () => {
    expect(blocks(requested)[0]).toEqual({
      type: 'header',
      text: { type: 'plain_text', text: 'Approval needed: deploy', emoji: false },
    });
  });

  it('shows the input preview in a code span, escaped for mrkdwn, a backtick unable to end it', () => {
    expect(sectionTexts(requested)[0]).toBe(
      '*Tool* `deploy`\n*Input* `{"env":"prod","note":"&lt;!channel&gt; &amp; ˋrm -rfˋ"}`',
    );
  });

  it('gives the plan, the requester, the votes towards the quorum and the expiry as fields', () => {
    expect(sectionTexts(requested).slice(1)).toEqual([
      '*Plan*\n`release 7`',
      '*Requested by*\nann',
      '*Approvals*\n1 of 2 (Bob &lt;b@x&gt;)',
      '*Expires*\n<!date^1796205600^{date_short_pretty} {time}|2026-12-02T10:00:00.000Z>',
    ]);
  });

  it("links to the approval's plan page on the dashboard", () => {
    expect(blocks(requested)[3]).toEqual({
      type: 'actions',
      elements: [
        {
          type: 'button',
          text: { type: 'plain_text', text: 'Review in leash', emoji: false },
          url: 'https://leash.example.com/plans/release%207',
          style: 'primary',
        },
      ],
    });
  });

  it('has a text fallback naming the tool, the plan and the link', () => {
    expect(requested['text']).toBe(
      'Approval needed: deploy (plan release 7) https://leash.example.com/plans/release%207',
    );
  });

  it('has no button without a public URL', () => {
    const message = slackMessage('approval.requested', payload('approval.requested', { approval }));

    expect(blocks(message).map((b) => b.type)).toEqual(['header', 'section', 'context']);
  });
});

describe('slackMessage of other events', () => {
  it('says who decided and why, escaped', () => {
    const decided = { ...approval, status: 'denied', decided_by: 'carol', reason: 'not <today> & not me' };
    const message = slackMessage('approval.decided', payload('approval.decided', { approval: decided }));

    expect([blocks(message)[0], sectionTexts(message).at(-1)]).toEqual([
      { type: 'header', text: { type: 'plain_text', text: 'Denied: deploy', emoji: false } },
      '*denied* by carol: not &lt;today&gt; &amp; not me',
    ]);
  });

  it('tells of a budget alert: the cap, how far it is spent, its labels and its reset', () => {
    const alert = {
      cap: 'team-monthly',
      labels: { team: 'ml' },
      window: '2026-12',
      fraction: 0.8,
      limit: 100,
      spent: 81.5,
      reserved: 2,
      resets_at: '2027-01-01T00:00:00.000Z',
      plan_id: 'train',
    };
    const message = slackMessage('budget.alert', payload('budget.alert', { alert }), {
      publicUrl: 'https://leash.example.com',
    });

    expect(message).toEqual({
      text: 'Budget alert: team-monthly at 80% https://leash.example.com/budgets',
      blocks: [
        {
          type: 'header',
          text: { type: 'plain_text', text: 'Budget alert: team-monthly at 80%', emoji: false },
        },
        {
          type: 'section',
          text: { type: 'mrkdwn', text: '*Spent* 81.5 of 100 (2 reserved)' },
          fields: [
            { type: 'mrkdwn', text: '*Cap*\n`team-monthly`' },
            { type: 'mrkdwn', text: '*Labels*\n`team=ml`' },
            { type: 'mrkdwn', text: '*Window*\n2026-12' },
            {
              type: 'mrkdwn',
              text: '*Resets*\n<!date^1798761600^{date_short_pretty} {time}|2027-01-01T00:00:00.000Z>',
            },
            { type: 'mrkdwn', text: '*Plan*\n`train`' },
          ],
        },
        {
          type: 'actions',
          elements: [
            {
              type: 'button',
              text: { type: 'plain_text', text: 'Budgets in leash', emoji: false },
              url: 'https://leash.example.com/budgets',
            },
          ],
        },
      ],
    });
  });

  it('names an event it does not know', () => {
    expect(slackMessage('plan.finished', payload('plan.finished', {}))).toEqual({
      text: 'leash plan.finished',
      blocks: [{ type: 'header', text: { type: 'plain_text', text: 'leash plan.finished', emoji: false } }],
    });
  });

  it('cuts a header longer than Slack takes to 150 characters', () => {
    const long = { ...approval, tool_name: 'x'.repeat(300) };
    const header = blocks(
      slackMessage('approval.requested', payload('approval.requested', { approval: long })),
    )[0];

    expect((header?.['text'] as { text: string }).text).toHaveLength(150);
  });
});

describe('mrkdwn escaping', () => {
  it('escapes &, < and > so that nothing becomes a mention or a link', () => {
    expect(escapeMrkdwn('<@U123> & <https://x|y>')).toBe('&lt;@U123&gt; &amp; &lt;https://x|y&gt;');
  });

  it('keeps a code span on one line', () => {
    expect(codeSpan('a\r\nb')).toBe('`a b`');
  });
});
