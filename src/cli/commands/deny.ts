// `leash deny`.
import type { CliContext } from '../context.js';
import { deciderOf, TOKEN_ENV } from '../decider.js';
import type { Command } from 'commander';

export function registerDeny(program: Command, c: CliContext): void {
  const { io, withRunner, decided, dbOption, jsonOption } = c;
  program
    .command('deny')
    .description(
      'deny a pending confirmation; the paused plan ends without running the step (an application is told)',
    )
    .argument('<approval-id>', `id of the confirmation request (see \`${c.leash} approvals\`)`)
    .option('--token <token>', `your personal token, when the store has users (or set ${TOKEN_ENV})`)
    .option('--by <name>', 'who denies, when the store has no users (recorded in the audit log)')
    .requiredOption('--reason <text>', 'why (required, recorded in the audit log)')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      `\nExamples:\n  $ ${TOKEN_ENV}=leash_pat_… ${c.leash} deny 0f3c… --reason "not during the freeze"\n  $ ${c.leash} deny 0f3c… --by alice --reason "not during the freeze"   # a store without users`,
    )
    .action(async (id: string, o: { by?: string; token?: string; reason: string; db?: string }) => {
      await withRunner(o.db, async (runner) => {
        const decider = await deciderOf(runner.service, o, io.env, (text) =>
          io.stderr.write(`leash: ${text}\n`),
        );
        // The denial was recorded and the plan ended as asked: exit 0, whatever the plan's end says.
        decided(await runner.deny(id, { ...decider, reason: o.reason }, { resume: true }));
      });
    });
}
