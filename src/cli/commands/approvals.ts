// `leash approvals`.
import { Option, type Command } from 'commander';
import { APPROVAL_STATUSES, type ApprovalStatus } from '../../store/GuardrailStore.js';
import { approvalsTable } from '../views.js';
import type { CliContext } from '../context.js';

export function registerApprovals(program: Command, c: CliContext): void {
  const { json, print, printJson, withRunner, dbOption, jsonOption } = c;
  program
    .command('approvals')
    .description('list confirmation requests, oldest first')
    .addOption(new Option('--status <status>', 'only requests in this status').choices(APPROVAL_STATUSES))
    .option('--plan <plan>', 'only requests of this plan')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      `\nExamples:\n  $ ${c.leash} approvals --status pending\n  $ ${c.leash} approvals --plan release --json`,
    )
    .action(async (o: { status?: ApprovalStatus; plan?: string; db?: string }) => {
      await withRunner(o.db, async (runner) => {
        const list = await runner.service.listApprovals({
          ...(o.status === undefined ? {} : { status: o.status }),
          ...(o.plan === undefined ? {} : { planId: o.plan }),
        });
        if (json) printJson(list);
        else if (list.length === 0) print('no confirmation requests');
        else print(approvalsTable(list));
      });
    });
}
