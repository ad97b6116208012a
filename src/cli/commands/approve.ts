// `leash approve`.
import type { CliContext } from '../context.js';
import type { Command } from 'commander';

export function registerApprove(program: Command, c: CliContext): void {
  const { withRunner, decided, dbOption, jsonOption, verboseOption } = c;
  program
    .command('approve')
    .description(
      'approve a pending confirmation, then resume the paused plan (an application resumes its own run)',
    )
    .argument('<approval-id>', `id of the confirmation request (see \`${c.leash} approvals\`)`)
    .requiredOption('--by <name>', 'who approves (recorded in the audit log)')
    .option('--reason <text>', 'why (recorded in the audit log)')
    .option('--no-resume', `only record the approval; resume its plan later with \`${c.leash} resume\``)
    .addOption(dbOption())
    .addOption(jsonOption())
    .addOption(verboseOption())
    .addHelpText(
      'after',
      `\nExamples:\n  $ ${c.leash} approve 0f3c… --by alice --reason "change window open"\n  $ ${c.leash} approve 0f3c… --by alice --no-resume`,
    )
    .action(async (id: string, o: { by: string; reason?: string; resume: boolean; db?: string }) => {
      c.exit = await withRunner(o.db, async (runner) => {
        const decision = { by: o.by, ...(o.reason === undefined ? {} : { reason: o.reason }) };
        return decided(await runner.approve(id, decision, { resume: o.resume }));
      });
    });
}
