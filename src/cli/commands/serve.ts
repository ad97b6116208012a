// `leash serve`.
import { GuardrailError } from '../../errors.js';
import { startNotifications } from '../notifier.js';
import type { CliContext } from '../context.js';
import { signInFlags, signInOf, type SignInFlags } from '../signIn.js';
import type { Command } from 'commander';

export function registerServe(program: Command, c: CliContext): void {
  const { io, print, readPolicy, withRunner, dbOption } = c;
  const command = program
    .command('serve')
    .description('start the local dashboard: plans, audit logs, and an approvals inbox')
    .option('--port <port>', 'port to listen on', '4580')
    .option('--host <host>', 'address to bind (keep 127.0.0.1 unless you know why)', '127.0.0.1')
    .option('--policy <file>', 'policy file whose notify: targets are told of what is decided here')
    .addOption(dbOption());
  for (const flag of signInFlags()) command.addOption(flag);
  command
    .addHelpText(
      'after',
      [
        '',
        'Prints the address with a random access token; every request needs it (kept in a cookie after the first).',
        'Set LEASH_TOKEN to choose the token.',
        '',
        'Once the store has users (leash users add), the token no longer opens it: each person signs in',
        'with a personal token (leash tokens create), or at the OpenID Connect provider --oidc-issuer names.',
        '',
        'Examples:',
        `  $ ${c.leash} serve --port 8080`,
        `  $ ${c.leash} serve --oidc-issuer https://idp.example.com --oidc-client-id leash --oidc-role staff=release --oidc-roles-claim groups`,
      ].join('\n'),
    )
    .action(async (o: { port: string; host: string; policy?: string; db?: string } & SignInFlags) => {
      const port = Number(o.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) {
        throw new GuardrailError('USAGE', `--port must be an integer from 0 to 65535, got "${o.port}"`);
      }
      const policy = readPolicy(o.policy);
      const { signIn, publicUrl } = await signInOf(o, io.env);
      const serve = io.serve ?? (await import('../../dashboard/server.js')).startDashboard;
      await withRunner(o.db, async (runner, store) => {
        const delivering = startNotifications(c, store, policy, runner.service);
        const token = io.env['LEASH_TOKEN'];
        const server = await serve({
          runner,
          host: o.host,
          port,
          style: c.style,
          signIn,
          ...(publicUrl === undefined ? {} : { publicUrl }),
          ...(token ? { token } : {}),
        }).catch(async (error: unknown) => {
          await delivering.stop();
          throw portProblem(error, o.host, port) ?? error;
        });
        print(`leash dashboard: ${server.url}/?token=${server.token}`);
        print('keep the token private; Ctrl-C stops the server');
        if (await runner.service.hasPrincipals()) {
          const at = signIn.oidc === undefined ? '' : ` or at ${signIn.oidc.issuer}`;
          print(
            `the store has users: each signs in at ${publicUrl ?? server.url}/login with a personal token${at}`,
          );
        }
        await new Promise<void>((done) => {
          if (io.signal?.aborted) done();
          io.signal?.addEventListener('abort', () => done(), { once: true });
        });
        await server.close();
        await delivering.stop();
      });
    });
}

/** A port another server holds, as a usage error naming --port; null for any other error. */
function portProblem(error: unknown, host: string, port: number): GuardrailError | null {
  if ((error as { code?: unknown } | null)?.code !== 'EADDRINUSE') return null;
  return new GuardrailError(
    'USAGE',
    `port ${port} on ${host} is in use: choose another with --port (--port 0 picks a free one)`,
    { cause: error },
  );
}
