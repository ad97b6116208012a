// `leash checkpoints`.
import { exportCheckpoints } from '../../audit/chain.js';
import { plansOf } from '../views.js';
import type { CliContext } from '../context.js';
import type { Command } from 'commander';

export function registerCheckpoints(program: Command, c: CliContext): void {
  const { io, withRunner, dbOption } = c;
  program
    .command('checkpoints')
    .description("export the checkpoints of a plan's log (or every plan's) as JSON lines, to keep elsewhere")
    .argument('[plan]', 'plan id (default: every plan)')
    .addOption(dbOption())
    .addHelpText(
      'after',
      `
The store writes a checkpoint every LEASH_CHECKPOINT_EVERY entries (default 10; 0 for none), signed with
the Ed25519 key in the PEM file LEASH_SIGNING_KEY when set (make one with \`${c.leash} keygen\`). Kept where
whoever can change the database cannot, they let \`${c.leash} verify --checkpoints\` catch a cut tail or a
rewritten log.

Example:
  $ ${c.leash} checkpoints release >> /secure/release.checkpoints.jsonl`,
    )
    .action(async (planId: string | undefined, o: { db?: string }) => {
      await withRunner(o.db, async (_runner, store) => {
        const ids = await plansOf(store, planId);
        for (const id of ids) io.stdout.write(exportCheckpoints(await store.readCheckpoints(id)));
      });
    });
}
