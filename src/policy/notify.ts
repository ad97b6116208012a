// A policy's `notify:` block: the rules the schema cannot say (exactly one of webhook and slack, a
// secret for a webhook), and the targets it makes, their secrets read from the environment.
import { GuardrailValidationError } from '../errors.js';
import type { NotifyEvent } from '../notify/events.js';
import { WebhookSecret } from '../notify/standardWebhooks.js';
import type { DeliveryTarget } from '../notify/targets.js';
import { fieldOf, type Subject } from '../validation.js';
import type { z } from 'zod';
import type { Policy } from './schema.js';
import type { notifySchema, PolicyNotify, PolicyNotifyTarget } from './notifySchema.js';

/** The events of a target that names none: all. */
const ALL: readonly NotifyEvent[] = Object.freeze(['*']);

/** What a policy's `notify:` block sets up, secrets read: what a `NotificationDispatcher` takes. */
export interface NotifySetup {
  readonly publicUrl?: string;
  readonly targets: readonly DeliveryTarget[];
}

/** A fresh, frozen copy of a validated `notify:` block, each target's events without repeats. */
export function copyNotify(data: z.output<typeof notifySchema>): PolicyNotify {
  const targets = Object.create(null) as Record<string, PolicyNotifyTarget>;
  for (const [name, t] of Object.entries(data.targets)) {
    const target: { -readonly [K in keyof PolicyNotifyTarget]: PolicyNotifyTarget[K] } = {};
    if (t.webhook !== undefined) target.webhook = t.webhook;
    if (t.slack !== undefined) target.slack = t.slack;
    if (t.secret_env !== undefined) target.secret_env = t.secret_env;
    if (t.events !== undefined) target.events = Object.freeze([...new Set(t.events)]);
    targets[name] = Object.freeze(target);
  }
  return Object.freeze({
    ...(data.public_url === undefined ? {} : { public_url: data.public_url }),
    targets: Object.freeze(targets),
  });
}

/**
 * Refuses a target with both or neither of `webhook` and `slack`, a webhook without `secret_env`, and a
 * Slack target with one (Slack checks no signature). Never repeats a URL: a Slack webhook's is a secret.
 */
export function checkNotify(notify: PolicyNotify | undefined, subject: Subject): void {
  for (const [name, t] of Object.entries(notify?.targets ?? {})) {
    const field = (key?: string) =>
      fieldOf(['notify', 'targets', name, ...(key === undefined ? [] : [key])], subject);
    const refuse = (at: string, rest: string): never => {
      throw new GuardrailValidationError(at, `${subject.prefix}${at} ${rest}`);
    };
    if ((t.webhook === undefined) === (t.slack === undefined)) {
      refuse(
        field(),
        'must have exactly one of webhook (a signed webhook) and slack (a Slack incoming webhook)',
      );
    }
    if (t.webhook !== undefined && t.secret_env === undefined) {
      refuse(
        field('secret_env'),
        'is missing: a webhook target names the environment variable holding its signing secret (whsec_…)',
      );
    }
    if (t.slack !== undefined && t.secret_env !== undefined) {
      refuse(field('secret_env'), 'is for webhook targets: Slack checks no signature');
    }
  }
}

/**
 * The targets of a policy's `notify:` block, for a `NotificationDispatcher`, each webhook target's secret
 * read from `env` (the variable its `secret_env` names). No `notify:` block gives no targets.
 * @throws GuardrailValidationError naming `notify.targets.NAME.secret_env` when the variable is not set
 *   or holds no valid secret (the message never holds the secret)
 */
export function policyNotifyTargets(
  policy: Policy,
  env: Readonly<Record<string, string | undefined>>,
): NotifySetup {
  const notify = policy.notify;
  if (notify === undefined) return Object.freeze({ targets: Object.freeze([]) });
  const targets = Object.entries(notify.targets).map(([name, t]): DeliveryTarget => {
    const events = t.events ?? ALL;
    if (t.slack !== undefined) return Object.freeze({ name, kind: 'slack', url: t.slack, events });
    const field = `notify.targets.${name}.secret_env`;
    const variable = t.secret_env as string;
    const value = env[variable];
    if (value === undefined || value === '') {
      throw new GuardrailValidationError(
        field,
        `${field}: the environment variable ${variable} is not set: it must hold the webhook's signing secret (whsec_…)`,
      );
    }
    const secret = WebhookSecret.parse(value, field, `${field}: the environment variable ${variable}`);
    return Object.freeze({ name, kind: 'webhook', url: t.webhook as string, events, secret });
  });
  return Object.freeze({
    ...(notify.public_url === undefined ? {} : { publicUrl: notify.public_url }),
    targets: Object.freeze(targets),
  });
}

/** Each target of a policy's `notify:` block and the events it wants: what the service queues for. */
export function policyNotifyEvents(policy: Policy): { name: string; events: readonly NotifyEvent[] }[] {
  return Object.entries(policy.notify?.targets ?? {}).map(([name, t]) => ({
    name,
    events: t.events ?? ALL,
  }));
}
