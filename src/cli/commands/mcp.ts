// `leash mcp`.
import { basename } from 'node:path';
import { GuardrailValidationError } from '../../errors.js';
import { AutonomyGuardrailService } from '../../service/AutonomyGuardrailService.js';
import { dbArgument, openStore, storeTarget } from '../openStore.js';
import type { CliContext } from '../context.js';
import type { Command } from 'commander';

export function registerMcp(program: Command, c: CliContext): void {
  const { io, clock, readPolicy, dbOption } = c;
  program
    .command('mcp')
    .description(
      'guard an MCP server: the client talks MCP to leash over stdio, leash to the server; every tool call is checked and audited',
    )
    .argument('[command...]', 'the upstream server’s command and its arguments, after --')
    .option(
      '--policy <file>',
      'policy file: limits, tool rules and the mcp block (allow, deny, confirm_destructive)',
    )
    .option('--plan <id>', 'plan id of the session (default mcp-<policy name>-<n>, the next free n)')
    .option('--upstream-url <url>', 'connect to a Streamable HTTP server instead of starting one')
    .addOption(dbOption())
    .addHelpText(
      'after',
      `
The client starts leash in the server's place, so stdout carries MCP only; leash writes notes to stderr.

Examples:
  $ ${c.leash} mcp --policy fs.policy.yaml -- npx -y @modelcontextprotocol/server-filesystem ~/notes
  $ ${c.leash} mcp --policy leash.policy.yaml --upstream-url http://127.0.0.1:3001/mcp`,
    )
    .action(
      async (command: string[], o: { policy?: string; plan?: string; upstreamUrl?: string; db?: string }) => {
        const [exe, ...args] = command;
        if ((exe === undefined) === (o.upstreamUrl === undefined)) {
          throw new GuardrailValidationError(
            'upstream',
            'give the upstream server as a command after -- or with --upstream-url, one of the two',
          );
        }
        const policy = readPolicy(o.policy);
        const { runMcpSession } = await import('../../mcp/session.js');
        const target = storeTarget(o.db, io.env);
        const store = await openStore(o.db, io.cwd, io.env, { mustExist: false });
        try {
          await runMcpSession({
            service: new AutonomyGuardrailService({ store, clock }),
            policy,
            ...(o.plan === undefined ? {} : { planId: o.plan }),
            policyName:
              o.policy === undefined ? 'session' : basename(o.policy).replace(/\.(ya?ml|json)$/i, ''),
            upstream: exe === undefined ? { url: o.upstreamUrl as string } : { command: exe, args },
            env: io.env,
            cwd: io.cwd,
            style: { leash: c.style.leash, dbArg: dbArgument(target, io.cwd) },
            ...(io.signal ? { signal: io.signal } : {}),
            log: (line) => void io.stderr.write(`${line}\n`),
          });
        } finally {
          await store.close();
        }
      },
    );
}
