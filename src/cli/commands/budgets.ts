// `leash budgets`, `leash budgets set` and `leash budgets remove`.
import { GuardrailError } from '../../errors.js';
import { spendCapToJson } from '../../guardrails/caps.js';
import { leashCommand } from '../../runner/commandLine.js';
import { capRowJson, capRows, capsTable, installedTable, installPolicyCaps } from '../caps.js';
import { safe } from '../format.js';
import type { CliContext } from '../context.js';
import type { Command } from 'commander';

export function registerBudgets(program: Command, c: CliContext): void {
  const { json, clock, print, printJson, readPolicy, withRunner, dbOption, jsonOption } = c;
  const budgets = program
    .command('budgets')
    .description(
      'spend caps across plans: each cap and label value, its current window used against its limit, nearest its limit first',
    )
    .addOption(dbOption())
    .addOption(jsonOption())
    // Options after `set` or `remove` are theirs: `budgets set f --db x` must not hand --db to the listing.
    .enablePositionalOptions()
    .addHelpText(
      'after',
      `
A cap's spend in a window counts every plan whose labels match; a row per label value seen. A cap with
nothing spent in its current window yet shows one row, its labels "-".

Examples:
  $ ${c.leash} budgets
  $ ${c.leash} budgets set leash.policy.yaml
  $ ${c.leash} budgets --json`,
    )
    .action(async (o: { db?: string }) => {
      await withRunner(o.db, async (_runner, store) => {
        const rows = await capRows(store, clock.now());
        if (json) printJson(rows.map(capRowJson));
        else if (rows.length === 0)
          print(
            `no spend caps; install a policy's budgets: block with: ${leashCommand(c.style, 'budgets', ['set', 'leash.policy.yaml'])}`,
          );
        else print(capsTable(rows));
      });
    });

  // `budgets --db x set f` names the store before the subcommand: the listing's option, read from there.
  const dbOf = (o: { db?: string }): string | undefined => o.db ?? budgets.opts<{ db?: string }>().db;

  budgets
    .command('set')
    .description(
      "install the spend caps of a policy's budgets: block; a cap already installed keeps what was spent",
    )
    .argument('<policy-file>', 'policy file (YAML or JSON)')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      `
A cap installed again under its id takes the file's limit, window and labels; what its windows hold stays.
Caps the file does not name stay installed: remove one with \`${c.leash} budgets remove <id>\`.

Example:
  $ ${c.leash} budgets set leash.policy.yaml`,
    )
    .action(async (file: string, o: { db?: string }) => {
      const policy = readPolicy(file);
      if (policy === null || policy.budgets === undefined || policy.budgets.length === 0) {
        const what =
          policy?.budgets === undefined
            ? `no budgets: block in ${file}`
            : `the budgets: block of ${file} is empty`;
        throw new GuardrailError('USAGE', `${what}: no spend caps to install`);
      }
      await withRunner(
        dbOf(o),
        async (_runner, store) => {
          const caps = await installPolicyCaps(store, policy);
          if (json) printJson({ installed: caps.map(spendCapToJson) });
          else
            print(
              `installed ${caps.length} spend cap${caps.length === 1 ? '' : 's'} from ${safe(file)}\n${installedTable(caps)}`,
            );
        },
        // Caps are set before the plans they bound run, so this makes a store as `run` does.
        { create: true },
      );
    });

  budgets
    .command('remove')
    .description('remove a spend cap and what its windows hold')
    .argument('<id>', 'cap id')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText('after', `\nExample:\n  $ ${c.leash} budgets remove team-monthly`)
    .action(async (id: string, o: { db?: string }) => {
      await withRunner(dbOf(o), async (_runner, store) => {
        if (!(await store.deleteCap(id))) {
          throw new GuardrailError('CAP_NOT_FOUND', `no spend cap "${id}" in this store`);
        }
        if (json) printJson({ removed: id });
        else print(`removed spend cap ${safe(id)}`);
      });
    });
}
