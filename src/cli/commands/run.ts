// `leash run`.
import { dirname, resolve } from 'node:path';
import { parsePlanFile } from '../../runner/planFile.js';
import { installPolicyCaps } from '../caps.js';
import { startNotifications } from '../notifier.js';
import { readFileText, formatOf, planName } from '../views.js';
import { labelOption, labelsOf } from '../labels.js';
import type { CliContext } from '../context.js';
import type { Command } from 'commander';

export function registerRun(program: Command, c: CliContext): void {
  const { io, readPolicy, withRunner, report, dbOption, jsonOption, verboseOption } = c;
  program
    .command('run')
    .description('run a plan file under its guardrails; pauses when a step needs a person')
    .argument('<plan-file>', 'plan file (YAML or JSON)')
    .option(
      '--policy <file>',
      'policy file: each limit is the stricter of its own and the plan file’s, its tool rules apply, its budgets: are installed, and its notify: targets are told',
    )
    .option('--id <plan-id>', 'plan id to run under (default: the file’s id or name, numbered when taken)')
    .addOption(
      labelOption(
        'label the plan (team=ml, user=ann), over the plan file’s labels of the same name; repeatable',
      ),
    )
    .addOption(dbOption())
    .addOption(jsonOption())
    .addOption(verboseOption())
    .addHelpText(
      'after',
      `
Examples:
  $ ${c.leash} run examples/release.plan.yaml
  $ ${c.leash} run deploy.plan.json --policy leash.policy.yaml --db postgres://127.0.0.1:5432/leash --json
  $ ${c.leash} run train.plan.yaml --label team=ml --label user=ann`,
    )
    .action(async (file: string, o: { policy?: string; id?: string; label?: string[]; db?: string }) => {
      const labels = labelsOf(o.label);
      const path = resolve(io.cwd, file);
      const plan = parsePlanFile(readFileText(path, 'plan file'), { format: formatOf(path), source: file });
      const policy = readPolicy(o.policy);
      c.exit = await withRunner(
        o.db,
        async (runner, store) => {
          const delivering = startNotifications(c, store, policy);
          try {
            await installPolicyCaps(store, policy);
            const run = await runner.start({
              file: plan,
              source: path,
              baseDir: dirname(path),
              name: planName(path),
              ...(o.id === undefined ? {} : { id: o.id }),
              policy,
              labels,
            });
            return report(run);
          } finally {
            await delivering.stop();
          }
        },
        { create: true },
      );
    });
}
