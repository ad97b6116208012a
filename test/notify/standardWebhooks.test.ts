import { inspect } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { WebhookSecret } from '../../src/notify/standardWebhooks.js';
import { thrown } from '../support/thrown.js';
import { SECRET } from './receiver.js';

const nowSeconds = () => Math.floor(Date.now() / 1000);

describe('WebhookSecret', () => {
  it('signs so that the Standard Webhooks library verifies the delivery', () => {
    const body = JSON.stringify({ type: 'approval.requested', data: { approval: { id: 'a1' } } });
    const headers = WebhookSecret.parse(SECRET, 'secret').sign('n-1', nowSeconds(), body);

    expect(new Webhook(SECRET).verify(body, { ...headers })).toEqual(JSON.parse(body));
  });

  it('sends the notification id as webhook-id and the time in whole seconds', () => {
    const headers = WebhookSecret.parse(SECRET, 'secret').sign('n-1', 1_800_000_000.75, '{}');

    expect([headers['webhook-id'], headers['webhook-timestamp']]).toEqual(['n-1', '1800000000']);
  });

  it('signs a body that a receiver sees changed so that verification fails', () => {
    const headers = WebhookSecret.parse(SECRET, 'secret').sign('n-1', nowSeconds(), '{"a":1}');

    expect(() => new Webhook(SECRET).verify('{"a":2}', { ...headers })).toThrow();
  });

  it('makes new secrets the Standard Webhooks library accepts', () => {
    const secret = WebhookSecret.generate();
    const headers = WebhookSecret.parse(secret, 'secret').sign('n-2', nowSeconds(), '{}');

    expect(new Webhook(secret).verify('{}', { ...headers })).toEqual({});
  });

  it.each([
    ['without the prefix', Buffer.alloc(32).toString('base64'), 'a value without the "whsec_" prefix'],
    ['not base64', 'whsec_not base64!', '"whsec_" and text that is not base64'],
    ['too short', `whsec_${Buffer.alloc(16).toString('base64')}`, 'a key of 16 bytes'],
    ['too long', `whsec_${Buffer.alloc(65).toString('base64')}`, 'a key of 65 bytes'],
    ['empty', 'whsec_', '"whsec_" and text that is not base64'],
  ])('refuses a secret %s, naming the field and not the secret', (_, secret, got) => {
    const error = thrown(() => WebhookSecret.parse(secret, 'notify.targets.ops.secret_env'));

    expect(error).toMatchObject({
      field: 'notify.targets.ops.secret_env',
      message: `notify.targets.ops.secret_env must be a Standard Webhooks secret: "whsec_" and the base64 of 24 to 64 random bytes, got ${got}`,
    });
  });

  it('never shows its key when printed, serialized or inspected', () => {
    const secret = WebhookSecret.parse(SECRET, 'secret');
    const key = SECRET.slice('whsec_'.length);

    const shown = [String(secret), JSON.stringify({ secret }), inspect({ secret }, { depth: 5 })];

    expect(shown.filter((text) => text.includes(key))).toEqual([]);
  });
});
