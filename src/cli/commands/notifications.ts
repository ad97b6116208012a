// `leash notifications` and `leash notifications deliver`.
import { Option, type Command } from 'commander';
import { GuardrailError } from '../../errors.js';
import type { DeliveryReport } from '../../notify/dispatcher.js';
import type { GuardrailStore } from '../../store/GuardrailStore.js';
import {
  NOTIFICATION_STATUSES,
  type Notification,
  type NotificationStatus,
} from '../../store/notifications.js';
import { safe, table } from '../format.js';
import { EXIT } from '../io.js';
import { notificationDispatcher } from '../notifier.js';
import type { CliContext } from '../context.js';

export function registerNotifications(program: Command, c: CliContext): void {
  const { json, print, printJson, readPolicy, withRunner, dbOption, jsonOption } = c;
  const notifications = program
    .command('notifications')
    .description('list the notification outbox, newest first: what is queued, delivered and failed')
    .addOption(
      new Option('--status <status>', 'only notifications in this status').choices(NOTIFICATION_STATUSES),
    )
    .option('--limit <n>', 'at most this many (default 100)')
    .addOption(dbOption())
    .addOption(jsonOption())
    .enablePositionalOptions()
    .addHelpText(
      'after',
      `
Notifications are queued in the store as approvals are requested, voted on, decided or expire, and as
budgets reach their alerts, for the targets of a policy's notify: block. serve, run and mcp deliver them
while they run, given that policy; \`notifications deliver\` delivers what is due from cron.

Examples:
  $ ${c.leash} notifications --status failed
  $ ${c.leash} notifications deliver --policy leash.policy.yaml`,
    )
    .action(async (o: { status?: NotificationStatus; limit?: string; db?: string }) => {
      const limit = o.limit === undefined ? undefined : limitOf(o.limit);
      await withRunner(o.db, async (_runner, store) => {
        const list = await outboxOf(store).listNotifications({
          ...(o.status === undefined ? {} : { status: o.status }),
          ...(limit === undefined ? {} : { limit }),
        });
        if (json) printJson(list);
        else if (list.length === 0) print(`no ${o.status ?? ''}${o.status ? ' ' : ''}notifications`);
        else print(notificationsTable(list));
      });
    });

  const dbOf = (o: { db?: string }): string | undefined => o.db ?? notifications.opts<{ db?: string }>().db;

  notifications
    .command('deliver')
    .description("deliver the notifications due now to the targets of a policy's notify: block, then exit")
    .requiredOption('--policy <file>', 'policy file whose notify: block names the targets')
    .option('--once', 'one attempt per target, rather than until nothing is due')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      `
Delivers until nothing is due: a notification waiting for a retry stays queued for a later run. Exits 1
when a notification failed for good. Webhook secrets are read from the variables secret_env names.

Example (every minute, from cron):
  * * * * * ${c.leash} notifications deliver --policy /etc/leash/leash.policy.yaml`,
    )
    .action(async (o: { policy: string; once?: boolean; db?: string }) => {
      const policy = readPolicy(o.policy);
      if (policy?.notify === undefined || Object.keys(policy.notify.targets).length === 0) {
        throw new GuardrailError('USAGE', `${o.policy} has no notify: targets to deliver to`);
      }
      c.exit = await withRunner(dbOf(o), async (_runner, store) => {
        outboxOf(store);
        const dispatcher = notificationDispatcher(c, store, policy);
        if (dispatcher === null) return EXIT.OK;
        const reports = o.once === true ? await dispatcher.runOnce() : await dispatcher.drain();
        await dispatcher.stop();
        if (json) printJson({ deliveries: reports });
        else print(reports.length === 0 ? 'nothing due' : reports.map(deliveryLine).join('\n'));
        return reports.some((r) => r.outcome.kind === 'failed') ? EXIT.FAILED : EXIT.OK;
      });
    });
}

type Outbox = Required<
  Pick<GuardrailStore, 'listNotifications' | 'claimNotifications' | 'finishNotification'>
>;

/** The store's outbox, refused for a store that keeps none. */
function outboxOf(store: GuardrailStore): Outbox {
  if (store.listNotifications === undefined || store.claimNotifications === undefined) {
    throw new GuardrailError('STORE_CONTRACT', 'this store keeps no notification outbox');
  }
  return store as GuardrailStore & Outbox;
}

function limitOf(given: string): number {
  const n = Number(given);
  if (!/^\d+$/.test(given) || !Number.isSafeInteger(n) || n < 1 || n > 10_000) {
    throw new GuardrailError('USAGE', `--limit must be an integer from 1 to 10000, got "${given}"`);
  }
  return n;
}

function notificationsTable(list: readonly Notification[]): string {
  return table(
    ['ID', 'TARGET', 'EVENT', 'STATUS', 'ATTEMPTS', 'NEXT ATTEMPT', 'LAST ERROR'],
    list.map((n) => [
      safe(n.id),
      safe(n.target),
      safe(n.event),
      n.status,
      String(n.attempts),
      n.status === 'queued' ? n.nextAttemptAt : '',
      safe((n.lastError ?? '').replace(/\s+/g, ' ')),
    ]),
  );
}

function deliveryLine(r: DeliveryReport): string {
  const what = `${safe(r.id)} to ${safe(r.target)} (${safe(r.event)}, attempt ${r.attempt})`;
  const o = r.outcome;
  if (o.kind === 'delivered') return `delivered ${what}`;
  if (o.kind === 'retry') return `not delivered ${what}: ${safe(o.error)}; next attempt ${o.nextAttemptAt}`;
  return `failed ${what}: ${safe(o.error)}`;
}
