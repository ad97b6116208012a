// `leash mcp`.
import { basename } from 'node:path';
import { GuardrailValidationError } from '../../errors.js';
import { AutonomyGuardrailService } from '../../service/AutonomyGuardrailService.js';
import { DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_SESSIONS } from '../../mcp/limits.js';
import { policyServiceOptions } from '../../policy/serviceOptions.js';
import { installPolicyCaps } from '../caps.js';
import { dbArgument, openStore, storeTarget } from '../openStore.js';
import { labelOption, labelsOf } from '../labels.js';
import { startNotifications, type BackgroundDelivery } from '../notifier.js';
import type { CliContext } from '../context.js';
import type { Command } from 'commander';

export function registerMcp(program: Command, c: CliContext): void {
  const { io, clock, readPolicy, dbOption } = c;
  program
    .command('mcp')
    .description(
      'guard an MCP server: the client talks MCP to leash over stdio (or HTTP with --listen), leash to the server; every tool call is checked and audited',
    )
    .argument('[command...]', 'the upstream server’s command and its arguments, after --')
    .option(
      '--policy <file>',
      'policy file: limits, tool rules, the mcp block (allow, deny, confirm_destructive), approvals: (who decides) and budgets: (installed)',
    )
    .option('--plan <id>', 'plan id of the session (default mcp-<policy name>-<n>, the next free n)')
    .addOption(
      labelOption(
        'label the plan the session configures (user=ann, team=ml): a new session plan, or --plan with --policy; repeatable',
      ),
    )
    .option('--upstream-url <url>', 'connect to a Streamable HTTP server instead of starting one')
    .option(
      '--listen <[host:]port>',
      'serve clients over Streamable HTTP at http://HOST:PORT/mcp instead of stdio (host default 127.0.0.1; port 0 picks a free one)',
    )
    .option(
      '--max-sessions <n>',
      `with --listen: sessions served at once, each a plan and an upstream of its own (default ${DEFAULT_MAX_SESSIONS})`,
    )
    .option(
      '--idle-timeout <seconds>',
      `with --listen: a session with no request and no stream open this long ends, its upstream stopped (default ${DEFAULT_IDLE_TIMEOUT_MS / 1000})`,
    )
    .addOption(dbOption())
    .addHelpText(
      'after',
      `
The client starts leash in the server's place, so stdout carries MCP only; leash writes notes to stderr.
With --listen, clients connect over HTTP with the token leash prints (set LEASH_TOKEN to choose it) as
"Authorization: Bearer <token>"; each session is a plan and an upstream of its own. Ctrl-C stops it.
Once the store has users (leash users add), each client sends its user's personal token instead: the
session is that user's, its plan labelled user=<id>, and no other token may use it. A client asks its
user to confirm a call only where the policy's approvals rule says elicitation: allow.

Examples:
  $ ${c.leash} mcp --policy fs.policy.yaml -- npx -y @modelcontextprotocol/server-filesystem ~/notes
  $ ${c.leash} mcp --policy leash.policy.yaml --upstream-url http://127.0.0.1:3001/mcp
  $ ${c.leash} mcp --policy fs.policy.yaml --listen 4590 -- npx -y @modelcontextprotocol/server-filesystem ~/notes
  $ ${c.leash} mcp --policy fs.policy.yaml --label user=ann --label team=ml -- npx -y @modelcontextprotocol/server-filesystem ~/notes`,
    )
    .action(async (command: string[], o: McpFlags) => {
      const [exe, ...args] = command;
      if ((exe === undefined) === (o.upstreamUrl === undefined)) {
        throw new GuardrailValidationError(
          'upstream',
          'give the upstream server as a command after -- or with --upstream-url, one of the two',
        );
      }
      const listen = o.listen === undefined ? undefined : listenAddress(o.listen);
      const maxSessions = o.maxSessions === undefined ? undefined : countOf('max-sessions', o.maxSessions);
      const idleSeconds = o.idleTimeout === undefined ? undefined : countOf('idle-timeout', o.idleTimeout);
      for (const [flag, given] of [
        ['max-sessions', maxSessions],
        ['idle-timeout', idleSeconds],
      ] as const) {
        if (listen === undefined && given !== undefined) {
          throw new GuardrailValidationError(flag, `--${flag} is for --listen only`);
        }
      }
      if (listen !== undefined && o.plan !== undefined) {
        throw new GuardrailValidationError(
          'plan',
          '--plan cannot be given with --listen: each session over HTTP is a plan of its own, mcp-<policy name>-<n>',
        );
      }
      const labels = labelsOf(o.label);
      if (o.plan !== undefined && o.policy === undefined && o.label !== undefined) {
        throw new GuardrailValidationError(
          'label',
          '--label with --plan needs --policy: the session labels the plan it configures, and without a policy it configures none',
        );
      }
      const policy = readPolicy(o.policy);
      // The policy's approvals rules decide who may approve the session's calls.
      const target = storeTarget(o.db, io.env);
      const store = await openStore(o.db, io.cwd, io.env, { mustExist: false });
      const log = (line: string): void => void io.stderr.write(`${line}\n`);
      const service = new AutonomyGuardrailService({
        store,
        clock,
        ...(policy === null ? {} : policyServiceOptions(policy)),
      });
      const session = {
        service,
        policy,
        policyName: o.policy === undefined ? 'session' : basename(o.policy).replace(/\.(ya?ml|json)$/i, ''),
        labels,
        upstream: exe === undefined ? { url: o.upstreamUrl as string } : { command: exe, args },
        env: io.env,
        cwd: io.cwd,
        style: { leash: c.style.leash, dbArg: dbArgument(target, io.cwd) },
        log,
      };
      let delivering: BackgroundDelivery | undefined;
      try {
        await installPolicyCaps(store, policy);
        delivering = startNotifications(c, store, policy, session.service);
        if (listen === undefined) {
          const { runMcpSession } = await import('../../mcp/session.js');
          await runMcpSession({
            ...session,
            ...(o.plan === undefined ? {} : { planId: o.plan }),
            ...(io.signal ? { signal: io.signal } : {}),
          });
          return;
        }
        const { startMcpListener } = await import('../../mcp/listen.js');
        const token = io.env['LEASH_TOKEN'];
        const listener = await startMcpListener({
          ...session,
          ...listen,
          ...(token ? { token } : {}),
          ...(maxSessions === undefined ? {} : { maxSessions }),
          ...(idleSeconds === undefined ? {} : { idleTimeoutMs: idleSeconds * 1000 }),
        });
        log(`leash mcp: listening on ${listener.url}`);
        log(
          (await service.hasPrincipals())
            ? 'leash mcp: clients send the header "Authorization: Bearer <personal token>", their user\'s (leash tokens create); Ctrl-C stops the server'
            : `leash mcp: clients send the header "Authorization: Bearer ${listener.token}" (keep it private; LEASH_TOKEN chooses it); Ctrl-C stops the server`,
        );
        await new Promise<void>((done) => {
          if (io.signal?.aborted) done();
          io.signal?.addEventListener('abort', () => done(), { once: true });
        });
        await listener.close();
      } finally {
        await delivering?.stop();
        await store.close();
      }
    });
}

interface McpFlags {
  policy?: string;
  plan?: string;
  label?: string[];
  upstreamUrl?: string;
  listen?: string;
  maxSessions?: string;
  idleTimeout?: string;
  db?: string;
}

/** `--listen`'s `[host:]port`: a port alone binds 127.0.0.1; an IPv6 address is written in brackets. */
export function listenAddress(given: string): { host: string; port: number } {
  const m = /^(?:(\[[^\]]+\]|[^:[\]]+):)?(\d{1,5})$/.exec(given.trim());
  const port = Number(m?.[2]);
  if (m === null || port > 65535) {
    throw new GuardrailValidationError(
      'listen',
      `--listen must be [host:]port, the port from 0 to 65535 (4590, 10.0.0.5:4590, [::1]:4590), got "${given}"`,
    );
  }
  return { host: m[1]?.replace(/^\[(.*)\]$/, '$1') ?? '127.0.0.1', port };
}

/** A flag's whole number, 1 or more. */
function countOf(flag: string, given: string): number {
  const n = Number(given);
  if (!/^\d+$/.test(given) || !Number.isSafeInteger(n) || n < 1) {
    throw new GuardrailValidationError(flag, `--${flag} must be an integer >= 1, got "${given}"`);
  }
  return n;
}
