// `leash schema`.
import { policyJsonSchema } from '../../policy/jsonSchema.js';
import { planFileJsonSchema } from '../../runner/planFile.js';
import type { CliContext } from '../context.js';
import type { Command } from 'commander';

export function registerSchema(program: Command, c: CliContext): void {
  const { printJson } = c;
  program
    .command('schema')
    .description('print the JSON Schema of plan files (or, with --policy, of policy files)')
    .option('--policy', 'the schema of policy files instead')
    .addHelpText('after', `\nExample:\n  $ ${c.leash} schema > plan.schema.json`)
    .action((o: { policy?: boolean }) => {
      printJson(o.policy ? policyJsonSchema() : planFileJsonSchema());
    });
}
