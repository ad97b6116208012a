// `leash resume`.
import type { CliContext } from '../context.js';
import type { Command } from 'commander';

export function registerResume(program: Command, c: CliContext): void {
  const { withRunner, report, dbOption, jsonOption, verboseOption } = c;
  program
    .command('resume')
    .description('continue a plan awaiting confirmation once its step was approved')
    .argument('<plan>', 'plan id')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addOption(verboseOption())
    .addHelpText('after', `\nExample:\n  $ ${c.leash} resume release`)
    .action(async (planId: string, o: { db?: string }) => {
      c.exit = await withRunner(o.db, async (runner) => report(await runner.resume(planId)));
    });
}
