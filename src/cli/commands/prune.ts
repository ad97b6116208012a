// `leash prune`.
import { GuardrailValidationError } from '../../errors.js';
import { safe } from '../format.js';
import { plansOf } from '../views.js';
import type { CliContext } from '../context.js';
import type { Command } from 'commander';

export function registerPrune(program: Command, c: CliContext): void {
  const { json, print, printJson, withRunner, dbOption, jsonOption } = c;
  program
    .command('prune')
    .description(
      "retention: remove a plan's oldest audit entries, keeping at least --keep, up to a checkpoint",
    )
    .argument('<plan>', 'plan id')
    .requiredOption('--keep <entries>', 'newest entries to keep at least')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      `
Entries are removed up to the newest checkpoint that leaves at least --keep entries, so the log that is
kept still verifies from that checkpoint. Export the checkpoints first (\`${c.leash} checkpoints\`) to keep
proof of what was removed.

Example:
  $ ${c.leash} prune release --keep 1000`,
    )
    .action(async (planId: string, o: { keep: string; db?: string }) => {
      const keep = Number(o.keep);
      if (!/^\d+$/.test(o.keep) || !Number.isSafeInteger(keep)) {
        throw new GuardrailValidationError('keep', `--keep must be an integer >= 0, got "${o.keep}"`);
      }
      await withRunner(o.db, async (_runner, store) => {
        await plansOf(store, planId);
        const log = await store.readAuditLog(planId);
        const last = log.at(-1)?.seq ?? 0;
        const first = log[0]?.seq ?? 1;
        const anchor = (await store.readCheckpoints(planId))
          .map((c) => c.size)
          .filter((size) => size >= first && size <= last - keep)
          .at(-1);
        const removed = anchor === undefined ? 0 : await store.pruneAuditLog(planId, anchor);
        if (json)
          printJson({ plan_id: planId, removed, pruned_through: anchor ?? null, kept: log.length - removed });
        else if (anchor === undefined)
          print(`nothing to prune: no checkpoint leaves ${keep} entries of ${safe(planId)}`);
        else
          print(
            `removed ${removed} entries of ${safe(planId)} (through seq ${anchor}); ${log.length - removed} kept`,
          );
      });
    });
}
