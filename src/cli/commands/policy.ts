// `leash policy`.
import { resolve } from 'node:path';
import { parsePolicy } from '../../policy/policy.js';
import { readFileText, formatOf } from '../views.js';
import type { CliContext } from '../context.js';
import type { Command } from 'commander';

export function registerPolicy(program: Command, c: CliContext): void {
  const { io, json, print, printJson, jsonOption } = c;
  const policy = program.command('policy').description('policy files');
  policy
    .command('validate')
    .description('check a policy file; prints what it sets, or every problem with its path')
    .argument('<file>', 'policy file (YAML or JSON)')
    .addOption(jsonOption())
    .addHelpText('after', `\nExample:\n  $ ${c.leash} policy validate leash.policy.yaml`)
    .action((file: string) => {
      const parsed = parsePolicy(readFileText(resolve(io.cwd, file), 'policy file'), {
        format: formatOf(file),
        source: file,
      });
      if (json) printJson({ valid: true, policy: parsed });
      else print(`${file}: valid policy (version ${parsed.version})`);
    });
}
