// Where notifications go: a target is a named receiver, reached by a signed webhook or a Slack incoming
// webhook, with the events it wants.
import { z } from 'zod';
import { handle, parseOptions } from '../validation.js';
import { GuardrailValidationError } from '../errors.js';
import { NOTIFY_EVENTS, type NotifyEvent } from './events.js';
import { WebhookSecret } from './standardWebhooks.js';

/** How a target is reached: a Standard Webhooks endpoint (signed), or a Slack incoming webhook. */
export const DELIVERY_TARGET_KINDS = Object.freeze(['webhook', 'slack'] as const);
export type DeliveryTargetKind = (typeof DELIVERY_TARGET_KINDS)[number];

/** A target's name: a letter or digit, then letters, digits, `.`, `_` and `-`, 64 characters at most. */
export const TARGET_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const TARGET_NAME_RULE =
  'a name of 1 to 64 letters, digits, ".", "_" and "-", starting with a letter or digit';

/** One receiver of notifications. */
export interface DeliveryTarget {
  /** The name notifications are queued under (a `notify:` block's key). */
  readonly name: string;
  readonly kind: DeliveryTargetKind;
  /** Where deliveries are posted: `http:` or `https:`. It may itself be a secret (a Slack webhook's is). */
  readonly url: string;
  /** The events it is told of (`approval.*` and `*` name several); default `*`, all. */
  readonly events: readonly NotifyEvent[];
  /** What a `webhook` target's deliveries are signed with; a `slack` target has none. */
  readonly secret?: WebhookSecret;
}

const HTTP_URL_RULE = 'an http: or https: URL';

/** True for an absolute `http:` or `https:` URL. */
export function isHttpUrl(value: unknown): value is string {
  if (typeof value !== 'string' || !URL.canParse(value)) return false;
  const { protocol } = new URL(value);
  return protocol === 'http:' || protocol === 'https:';
}

const targetSchema = z.strictObject(
  {
    name: z.string({ error: TARGET_NAME_RULE }).regex(TARGET_NAME_PATTERN, { error: TARGET_NAME_RULE }),
    kind: z.enum(DELIVERY_TARGET_KINDS, { error: '"webhook" or "slack"' }),
    url: z.string({ error: HTTP_URL_RULE }).refine(isHttpUrl, { error: HTTP_URL_RULE }),
    events: z
      .array(z.enum(NOTIFY_EVENTS, { error: `one of ${NOTIFY_EVENTS.join(', ')}` }), {
        error: 'an array of event names',
      })
      .default(() => ['*' as const]),
    secret: handle<WebhookSecret>('a WebhookSecret', (v) => v instanceof WebhookSecret).optional(),
  },
  { error: 'an object' },
);

const targetsSchema = z.object({
  targets: z.array(targetSchema, { error: 'an array of targets' }),
});

/**
 * Checks targets given in code: names unique, a webhook target signed, a Slack one not; the URL of each
 * is never repeated in an error (a Slack webhook's URL is its secret).
 * @throws GuardrailValidationError naming the field (`targets[1].secret`)
 */
export function checkTargets(targets: unknown): readonly DeliveryTarget[] {
  const checked = parseOptions(targetsSchema, { targets }).targets;
  const seen = new Set<string>();
  checked.forEach((t, i) => {
    if (seen.has(t.name)) {
      throw new GuardrailValidationError(
        `targets[${i}].name`,
        `targets[${i}].name "${t.name}" is given twice`,
      );
    }
    seen.add(t.name);
    if ((t.kind === 'webhook') !== (t.secret !== undefined)) {
      const rule = t.kind === 'webhook' ? 'is required for a webhook target' : 'is for webhook targets only';
      throw new GuardrailValidationError(`targets[${i}].secret`, `targets[${i}].secret ${rule}`);
    }
  });
  return Object.freeze(
    checked.map((t) => Object.freeze({ ...t, events: Object.freeze([...t.events]) } as DeliveryTarget)),
  );
}
