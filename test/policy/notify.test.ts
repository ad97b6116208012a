import { describe, expect, it } from 'vitest';
import { policyNotifyEvents, policyNotifyTargets, validatePolicy } from '../../src/policy/index.js';
import { thrown } from '../support/thrown.js';

const SECRET = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;

function policyWith(notify: unknown) {
  return validatePolicy({ version: 1, notify });
}

const both = {
  public_url: 'https://leash.example.com',
  targets: {
    ops: {
      webhook: 'https://hooks.example.com/leash',
      secret_env: 'OPS_SECRET',
      events: ['approval.requested'],
    },
    team: { slack: 'https://hooks.slack.com/services/T/B/x' },
  },
};

describe('the notify: block of a policy', () => {
  it('reads webhook and Slack targets', () => {
    expect(policyWith(both).notify).toEqual(both);
  });

  it.each([
    [
      'both webhook and slack',
      { ops: { webhook: 'https://a.example', slack: 'https://b.example', secret_env: 'S' } },
      'notify.targets.ops',
      'notify.targets.ops must have exactly one of webhook (a signed webhook) and slack (a Slack incoming webhook)',
    ],
    [
      'neither webhook nor slack',
      { ops: { events: ['budget.alert'] } },
      'notify.targets.ops',
      'notify.targets.ops must have exactly one of webhook (a signed webhook) and slack (a Slack incoming webhook)',
    ],
    [
      'a webhook without secret_env',
      { ops: { webhook: 'https://a.example' } },
      'notify.targets.ops.secret_env',
      'notify.targets.ops.secret_env is missing: a webhook target names the environment variable holding its signing secret (whsec_…)',
    ],
    [
      'a Slack target with secret_env',
      { team: { slack: 'https://a.example', secret_env: 'S' } },
      'notify.targets.team.secret_env',
      'notify.targets.team.secret_env is for webhook targets: Slack checks no signature',
    ],
  ])('refuses a target with %s', (_, targets, field, message) => {
    expect(thrown(() => policyWith({ targets }))).toMatchObject({ field, message });
  });

  it.each([
    [{ targets: { ops: { webhook: 'ftp://a.example', secret_env: 'S' } } }, 'notify.targets.ops.webhook'],
    [
      { targets: { ops: { slack: 'https://a.example', events: ['plan.done'] } } },
      'notify.targets.ops.events[0]',
    ],
    [{ targets: { ops: { slack: 'https://a.example', events: [] } } }, 'notify.targets.ops.events'],
    [
      { targets: { ops: { webhook: 'https://a.example', secret_env: '1X' } } },
      'notify.targets.ops.secret_env',
    ],
    [{ targets: { 'not ok': { slack: 'https://a.example' } } }, 'notify.targets'],
    [{ public_url: 'leash.example.com', targets: {} }, 'notify.public_url'],
    [{ targets: { ops: { slack: 'https://a.example', url: 'x' } } }, 'notify.targets.ops.url'],
  ])('refuses %j, naming %s', (notify, field) => {
    expect(thrown(() => policyWith(notify)).field).toBe(field);
  });
});

describe('policyNotifyTargets', () => {
  it('makes each target, a webhook one with the secret its variable holds, every event (*) by default', () => {
    const setup = policyNotifyTargets(policyWith(both), { OPS_SECRET: SECRET });

    expect(setup).toEqual({
      publicUrl: 'https://leash.example.com',
      targets: [
        {
          name: 'ops',
          kind: 'webhook',
          url: 'https://hooks.example.com/leash',
          events: ['approval.requested'],
          secret: expect.anything(),
        },
        { name: 'team', kind: 'slack', url: 'https://hooks.slack.com/services/T/B/x', events: ['*'] },
      ],
    });
  });

  it('refuses a secret variable that is not set, naming it', () => {
    expect(thrown(() => policyNotifyTargets(policyWith(both), {}))).toMatchObject({
      field: 'notify.targets.ops.secret_env',
      message:
        "notify.targets.ops.secret_env: the environment variable OPS_SECRET is not set: it must hold the webhook's signing secret (whsec_…)",
    });
  });

  it('refuses a secret variable holding no valid secret, without repeating it', () => {
    const error = thrown(() => policyNotifyTargets(policyWith(both), { OPS_SECRET: 'whsec_c2hvcnQ=' }));

    expect(error).toMatchObject({
      field: 'notify.targets.ops.secret_env',
      message:
        'notify.targets.ops.secret_env: the environment variable OPS_SECRET must be a Standard Webhooks secret: "whsec_" and the base64 of 24 to 64 random bytes, got a key of 5 bytes',
    });
  });

  it('makes no targets of a policy without notify:', () => {
    expect(policyNotifyTargets(validatePolicy({ version: 1 }), {})).toEqual({ targets: [] });
  });

  it('gives the service each target and the events it wants', () => {
    expect(policyNotifyEvents(policyWith(both))).toEqual([
      { name: 'ops', events: ['approval.requested'] },
      { name: 'team', events: ['*'] },
    ]);
  });
});
