// `leash audit`.
import { Option, type Command } from 'commander';
import type { ChainedEntry } from '../../audit/chain.js';
import { GuardrailError } from '../../errors.js';
import { plansOf, entryJson, auditTable, pause } from '../views.js';
import type { CliContext } from '../context.js';
import { registerAuditExport } from './auditExport.js';

export function registerAudit(program: Command, c: CliContext): void {
  const { io, json, print, printJson, withRunner, dbOption, jsonOption } = c;
  const audit = program
    .command('audit')
    .description("print a plan's audit log, oldest first; `audit export` exports logs")
    .argument('[plan]', 'plan id')
    // Options before `export` are the export's, not this command's.
    .enablePositionalOptions()
    .option('--plan <id>', 'plan id, for a plan named "export"')
    .addOption(
      new Option('--format <format>', 'output format').choices(['table', 'json', 'jsonl']).default('table'),
    )
    .option('--follow', 'keep printing new entries as they are recorded (Ctrl-C to stop)')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      `\nA plan named "export" is read with --plan export.\n\nExamples:\n  $ ${c.leash} audit release\n  $ ${c.leash} audit release --format jsonl --follow\n  $ ${c.leash} audit export release --out audit-2026-11`,
    )
    .action(
      async (
        argument: string | undefined,
        o: { plan?: string; format: string; follow?: boolean; db?: string },
      ) => {
        if ((argument === undefined) === (o.plan === undefined))
          throw new GuardrailError('USAGE', 'name one plan: leash audit <plan> (or --plan <id>)');
        const planId = (argument ?? o.plan) as string;
        const format = json ? 'json' : o.format;
        await withRunner(o.db, async (_runner, store) => {
          await plansOf(store, planId);
          let shown = 0;
          const show = (log: readonly ChainedEntry[], first: boolean) => {
            const fresh = log.slice(shown);
            shown = log.length;
            if (format === 'json' && !o.follow) printJson(fresh.map(entryJson));
            else if (format === 'json' || format === 'jsonl') {
              for (const e of fresh) print(JSON.stringify(entryJson(e)));
            } else if (fresh.length > 0 || first) print(auditTable(fresh, first));
          };
          show(await store.readAuditLog(planId), true);
          if (!o.follow) return;
          while (!io.signal?.aborted) {
            await pause(500, io.signal);
            if (io.signal?.aborted) break;
            show(await store.readAuditLog(planId), false);
          }
        });
      },
    );
  registerAuditExport(audit, c);
}
