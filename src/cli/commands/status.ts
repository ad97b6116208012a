// `leash status`.
import { GuardrailError } from '../../errors.js';
import { sessionRecordOf } from '../../mcp/record.js';
import { leashCommand } from '../../runner/commandLine.js';
import { statusJson, statusTable, describeStatus } from '../views.js';
import type { CliContext } from '../context.js';
import type { Command } from 'commander';

export function registerStatus(program: Command, c: CliContext): void {
  const { json, clock, print, printJson, withRunner, dbOption, jsonOption } = c;
  program
    .command('status')
    .description('show one plan, or every plan in the store')
    .argument('[plan]', 'plan id')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText('after', `\nExamples:\n  $ ${c.leash} status\n  $ ${c.leash} status release --json`)
    .action(async (planId: string | undefined, o: { db?: string }) => {
      await withRunner(o.db, async (runner, store) => {
        if (planId === undefined) {
          const rows = await runner.list();
          if (json) {
            printJson(
              rows.map((r) =>
                'status' in r ? statusJson(r.status, clock.now()) : { plan_id: r.planId, error: r.error },
              ),
            );
          } else if (rows.length === 0)
            print(`no plans yet; start one with: ${leashCommand(c.style, 'run', ['plan.yaml'])}`);
          else print(statusTable(rows, clock.now()));
          return;
        }
        const s = await runner.status(planId);
        if (s === null) throw new GuardrailError('PLAN_NOT_FOUND', `no plan "${planId}" in this store`);
        if (json) printJson(statusJson(s, clock.now(), { completed: true }));
        else print(describeStatus(s, clock.now(), sessionRecordOf(await store.getPlanDocument(planId))));
      });
    });
}
