// `leash abandon`.
import { safe } from '../format.js';
import { statusJson } from '../views.js';
import type { CliContext } from '../context.js';
import type { Command } from 'commander';

export function registerAbandon(program: Command, c: CliContext): void {
  const { json, clock, print, printJson, withRunner, dbOption, jsonOption } = c;
  program
    .command('abandon')
    .description(
      'mark a plan left running by a process that died as failed, so it no longer shows as running',
    )
    .argument('<plan>', 'plan id')
    .requiredOption('--by <name>', 'who abandons it (kept in the plan’s outcome)')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      `\nOnly for a plan in phase execute whose process is gone (killed, or its machine lost): a run\nthat ends on its own, or is stopped with Ctrl-C, records its end itself.\n\nExample:\n  $ ${c.leash} abandon release --by alice`,
    )
    .action(async (planId: string, o: { by: string; db?: string }) => {
      await withRunner(o.db, async (runner) => {
        const s = await runner.abandon(planId, o.by);
        if (json) printJson(statusJson(s, clock.now()));
        else print(`plan ${safe(planId)}: failed (abandoned by ${safe(o.by)})`);
      });
    });
}
