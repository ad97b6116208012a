// Delivering notifications from the commands that keep running (`serve`, `run`, `mcp`): given a policy
// with a notify: block, a dispatcher delivers in the background while the command runs, and what is due
// when it ends is delivered before it exits, for a few seconds at most.
import { errorText } from '../errors.js';
import { NotificationDispatcher, type NotificationDispatcherOptions } from '../notify/dispatcher.js';
import { policyNotifyTargets } from '../policy/notify.js';
import type { Policy } from '../policy/schema.js';
import type { GuardrailStore } from '../store/GuardrailStore.js';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import { safe } from './format.js';
import type { CliContext } from './context.js';

/** How long a command that ends goes on delivering what is due. */
export const FLUSH_MS = 3_000;
/** How often a running command looks for notifications to deliver. */
export const POLL_MS = 2_000;

/**
 * The dispatcher of `policy`'s notify: block on `store`, or null when it names no targets. A webhook
 * target's secret is read from the environment here, so a missing one stops the command before it starts.
 */
export function notificationDispatcher(
  c: CliContext,
  store: GuardrailStore,
  policy: Policy | null,
  options: Partial<NotificationDispatcherOptions> = {},
): NotificationDispatcher | null {
  if (policy?.notify === undefined) return null;
  const { publicUrl, targets } = policyNotifyTargets(policy, c.io.env);
  if (targets.length === 0) return null;
  return new NotificationDispatcher({
    store,
    targets,
    clock: c.clock,
    ...(publicUrl === undefined ? {} : { publicUrl }),
    onError: (error) => void c.io.stderr.write(`leash: notifications: ${safe(errorText(error))}\n`),
    ...options,
  });
}

/** Notifications being delivered in the background while a command runs. */
export interface BackgroundDelivery {
  /** Stops, after delivering what is due for up to {@link FLUSH_MS}; never rejects. */
  stop(): Promise<void>;
}

/**
 * Starts delivering `policy`'s notifications in the background, until `stop()`; without a notify: block,
 * delivers nothing. With `service`, approvals left undecided past their time are also expired as often
 * (denied by leash, and their expiry queued), so nobody has to look at one for it to end. A webhook
 * target's missing secret throws here, before the command does anything.
 */
export function startNotifications(
  c: CliContext,
  store: GuardrailStore,
  policy: Policy | null,
  service?: AutonomyGuardrailService,
): BackgroundDelivery {
  const dispatcher = notificationDispatcher(c, store, policy);
  dispatcher?.start({ intervalMs: POLL_MS });
  const sweep =
    service === undefined
      ? undefined
      : setInterval(() => {
          service
            .expireApprovals()
            .catch((error: unknown) =>
              c.io.stderr.write(`leash: expiring approvals: ${safe(errorText(error))}\n`),
            );
        }, POLL_MS);
  sweep?.unref();
  return {
    stop: async () => {
      clearInterval(sweep);
      await dispatcher?.stop({ flushMs: FLUSH_MS });
    },
  };
}
