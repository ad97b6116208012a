// `leash users add`, `leash users list` and `leash users revoke`.
import type { Command } from 'commander';
import { leashCommand } from '../../runner/commandLine.js';
import type { Principal } from '../../store/people.js';
import type { CliContext } from '../context.js';
import { safe } from '../format.js';
import { principalsTable } from '../people.js';

const collect = (value: string, previous: string[]): string[] => [...previous, value];

/** One line about a principal: `ann (Ann Lee; roles release, ops)`. */
function described(p: Principal): string {
  const roles = p.roles.length === 0 ? 'no roles' : `roles ${p.roles.join(', ')}`;
  return `${p.id} (${safe(p.name)}; ${roles}${p.email === undefined ? '' : `; ${safe(p.email)}`})`;
}

export function registerUsers(program: Command, c: CliContext): void {
  const { json, print, printJson, withRunner, dbOption, jsonOption } = c;
  const users = program
    .command('users')
    .description(
      'the people who may decide confirmations: once a store has users, each decides with a personal token',
    )
    .addHelpText(
      'after',
      `
Once a store has a user that is not revoked, \`${c.leash} approve\` and \`${c.leash} deny\` need a personal token
(--token or LEASH_TOKEN) and --by alone is refused.

Examples:
  $ ${c.leash} users add ann --name "Ann Lee" --role release
  $ ${c.leash} tokens create ann --label laptop --expires-in 90d
  $ ${c.leash} users list`,
    );

  users
    .command('add')
    .description('add a user, or change the name, roles and e-mail address of the one with this id')
    .argument('<id>', 'lower-case letters, digits, ".", "_", "-" or "@" (like ann or ann@example.com)')
    .requiredOption('--name <name>', 'the name shown to people')
    .option('--role <role>', 'a role the user holds (repeat for more)', collect, [])
    .option('--email <address>', 'the e-mail address an OpenID Connect sign-in maps to this user')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      `\nExample:\n  $ ${c.leash} users add ann --name "Ann Lee" --role release --role ops`,
    )
    .action(async (id: string, o: { name: string; role: string[]; email?: string; db?: string }) => {
      await withRunner(
        o.db,
        async ({ service }) => {
          const existed = (await service.listPrincipals()).some((p) => p.id === id);
          const principal = await service.addPrincipal({
            id,
            name: o.name,
            roles: o.role,
            ...(o.email === undefined ? {} : { email: o.email }),
          });
          if (json) return printJson(principal);
          print(`${existed ? 'updated' : 'added'} user ${described(principal)}`);
          if (!existed)
            print(
              `make a personal token for them with: ${safe(leashCommand(c.style, 'tokens', ['create', id]))}`,
            );
        },
        // Users are added before anyone decides, maybe before any run: this makes a store as `run` does.
        { create: true },
      );
    });

  users
    .command('list')
    .description('list the users, revoked ones too, in id order')
    .addOption(dbOption())
    .addOption(jsonOption())
    .action(async (o: { db?: string }) => {
      await withRunner(o.db, async ({ service }) => {
        const list = await service.listPrincipals();
        if (json) printJson(list);
        else if (list.length === 0) print(`no users; add one with: ${c.leash} users add <id> --name <name>`);
        else print(principalsTable(list));
      });
    });

  users
    .command('revoke')
    .description('revoke a user: they may no longer decide, and their tokens are refused')
    .argument('<id>', 'user id')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      '\nThe id stays taken: a revoked user cannot be added again. Revoking one twice changes nothing.',
    )
    .action(async (id: string, o: { db?: string }) => {
      await withRunner(o.db, async ({ service }) => {
        const principal = await service.revokePrincipal(id);
        if (json) printJson(principal);
        else print(`revoked user ${principal.id} at ${principal.revokedAt ?? ''}`);
      });
    });
}
