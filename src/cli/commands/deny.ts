// `leash deny`.
import type { CliContext } from '../context.js';
import type { Command } from 'commander';

export function registerDeny(program: Command, c: CliContext): void {
  const { withRunner, decided, dbOption, jsonOption } = c;
  program
    .command('deny')
    .description(
      'deny a pending confirmation; the paused plan ends without running the step (an application is told)',
    )
    .argument('<approval-id>', `id of the confirmation request (see \`${c.leash} approvals\`)`)
    .requiredOption('--by <name>', 'who denies (recorded in the audit log)')
    .requiredOption('--reason <text>', 'why (required, recorded in the audit log)')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText('after', `\nExample:\n  $ ${c.leash} deny 0f3c… --by alice --reason "not during the freeze"`)
    .action(async (id: string, o: { by: string; reason: string; db?: string }) => {
      await withRunner(o.db, async (runner) => {
        // The denial was recorded and the plan ended as asked: exit 0, whatever the plan's end says.
        decided(await runner.deny(id, { by: o.by, reason: o.reason }, { resume: true }));
      });
    });
}
