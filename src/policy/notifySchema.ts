import { z } from 'zod';
import { NOTIFY_EVENTS, type NotifyEvent } from '../notify/events.js';
import { TARGET_NAME_PATTERN, TARGET_NAME_RULE } from '../notify/targets.js';
import { strict } from '../validation.js';

// The `notify:` block of a policy file: who is told of approvals and budget alerts, and how.

/** One entry of `notify.targets` as written in a policy file: exactly one of `webhook` and `slack`. */
export interface PolicyNotifyTarget {
  readonly webhook?: string;
  readonly slack?: string;
  /** The environment variable holding a webhook target's signing secret (`whsec_…`). */
  readonly secret_env?: string;
  readonly events?: readonly NotifyEvent[];
}

/** `notify` as written in a policy file. */
export interface PolicyNotify {
  readonly public_url?: string;
  readonly targets: Readonly<Record<string, PolicyNotifyTarget>>;
}

const URL_RULE = 'an http: or https: URL';
const ENV_RULE = 'an environment variable name: letters, digits and "_", not starting with a digit';
export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

const httpUrl = () => z.url({ protocol: /^https?$/, error: URL_RULE });

export const notifyTargetSchema = strict({
  webhook: httpUrl()
    .optional()
    .describe(
      'A Standard Webhooks endpoint: each event is POSTed as JSON, signed with the secret secret_env names. Give webhook or slack, not both.',
    ),
  slack: httpUrl()
    .optional()
    .describe(
      'A Slack incoming webhook URL: each event is posted as a Block Kit message. Keep the URL out of version control where you can: it is what lets anyone post to the channel.',
    ),
  secret_env: z
    .string({ error: ENV_RULE })
    .regex(ENV_NAME_PATTERN, { error: ENV_RULE })
    .optional()
    .describe(
      'For a webhook target (required there): the environment variable holding its signing secret, "whsec_" and the base64 of 24 to 64 random bytes. Read when leash starts.',
    ),
  events: z
    .array(z.enum(NOTIFY_EVENTS, { error: `one of ${NOTIFY_EVENTS.join(', ')}` }), {
      error: 'an array of event names',
    })
    .min(1, { error: 'an array of at least one event name' })
    .optional()
    .meta({
      description: `The events the target is told of: ${NOTIFY_EVENTS.join(', ')} ("approval.*" every approval event, "*" all). Default all.`,
      default: ['*'],
    }),
}).describe('One receiver of notifications: a signed webhook or a Slack channel.');

export const notifySchema = strict({
  public_url: httpUrl()
    .optional()
    .describe(
      'Where people reach the leash dashboard (https://leash.example.com): messages link to the approval there.',
    ),
  targets: z
    .record(
      z.string({ error: TARGET_NAME_RULE }).regex(TARGET_NAME_PATTERN, { error: TARGET_NAME_RULE }),
      notifyTargetSchema,
      { error: 'an object' },
    )
    .describe(`Notification targets, keyed by name (${TARGET_NAME_RULE}).`),
}).describe(
  'Who is told of confirmation requests, votes, decisions, expiries and budget alerts. Any leash process with this policy (serve, run, mcp, notifications deliver) delivers what is queued.',
);
