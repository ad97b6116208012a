// `leash approve`.
import type { CliContext } from '../context.js';
import { deciderOf, TOKEN_ENV } from '../decider.js';
import type { Command } from 'commander';

export function registerApprove(program: Command, c: CliContext): void {
  const { io, withRunner, decided, dbOption, jsonOption, verboseOption } = c;
  program
    .command('approve')
    .description(
      'approve a pending confirmation, then resume the paused plan (an application resumes its own run)',
    )
    .argument('<approval-id>', `id of the confirmation request (see \`${c.leash} approvals\`)`)
    .option('--token <token>', `your personal token, when the store has users (or set ${TOKEN_ENV})`)
    .option('--by <name>', 'who approves, when the store has no users (recorded in the audit log)')
    .option('--reason <text>', 'why (recorded in the audit log)')
    .option('--no-resume', `only record the approval; resume its plan later with \`${c.leash} resume\``)
    .addOption(dbOption())
    .addOption(jsonOption())
    .addOption(verboseOption())
    .addHelpText(
      'after',
      `\nExamples:\n  $ ${TOKEN_ENV}=leash_pat_… ${c.leash} approve 0f3c… --reason "change window open"\n  $ ${c.leash} approve 0f3c… --by alice --reason "change window open"   # a store without users\n  $ ${c.leash} approve 0f3c… --by alice --no-resume`,
    )
    .action(
      async (
        id: string,
        o: { by?: string; token?: string; reason?: string; resume: boolean; db?: string },
      ) => {
        c.exit = await withRunner(o.db, async (runner) => {
          const decider = await deciderOf(runner.service, o, io.env, (text) =>
            io.stderr.write(`leash: ${text}\n`),
          );
          const decision = { ...decider, ...(o.reason === undefined ? {} : { reason: o.reason }) };
          return decided(await runner.approve(id, decision, { resume: o.resume }));
        });
      },
    );
}
