// `leash tokens create`, `leash tokens list` and `leash tokens revoke`.
import type { Command } from 'commander';
import type { CliContext } from '../context.js';
import { TOKEN_ENV } from '../decider.js';
import { parseExpiresIn, tokenJson, tokensTable } from '../people.js';

export function registerTokens(program: Command, c: CliContext): void {
  const { json, clock, print, printJson, withRunner, dbOption, jsonOption } = c;
  const tokens = program
    .command('tokens')
    .description(
      "users' personal tokens: each proves who decides with approve and deny (--token or LEASH_TOKEN)",
    )
    .addHelpText(
      'after',
      `
The store keeps a token's SHA-256 only: a token is shown once, when it is made.

Examples:
  $ ${c.leash} tokens create ann --label laptop --expires-in 90d
  $ ${c.leash} tokens list ann
  $ ${c.leash} tokens revoke tok_0123456789ab`,
    );

  tokens
    .command('create')
    .description('make a personal token for a user, and print it once')
    .argument('<user-id>', 'whose token it is')
    .option('--label <text>', 'what it is for (laptop, ci)')
    .option('--expires-in <time>', 'how long it lasts: 90d, 12h, 30m or 3600s (default: until revoked)')
    .addOption(dbOption())
    .addOption(jsonOption())
    .action(async (userId: string, o: { label?: string; expiresIn?: string; db?: string }) => {
      const expiresInSeconds = o.expiresIn === undefined ? undefined : parseExpiresIn(o.expiresIn);
      await withRunner(o.db, async ({ service }) => {
        const { token, record } = await service.createToken(userId, {
          ...(o.label === undefined ? {} : { label: o.label }),
          ...(expiresInSeconds === undefined ? {} : { expiresInSeconds }),
        });
        if (json) return printJson({ token, record: tokenJson(record) });
        const until = record.expiresAt === undefined ? 'until revoked' : `until ${record.expiresAt}`;
        print(`personal token ${record.id} for ${record.principalId}, valid ${until}:`);
        print(token);
        print(
          `It will not be shown again: keep it now. Decide with it by setting ${TOKEN_ENV} or passing --token.`,
        );
      });
    });

  tokens
    .command('list')
    .description('list personal tokens (never the tokens themselves), oldest first')
    .argument('[user-id]', "only this user's tokens")
    .addOption(dbOption())
    .addOption(jsonOption())
    .action(async (userId: string | undefined, o: { db?: string }) => {
      await withRunner(o.db, async ({ service }) => {
        const list = await service.listTokens(userId === undefined ? {} : { principalId: userId });
        if (json) printJson(list.map(tokenJson));
        else if (list.length === 0) print('no personal tokens');
        else print(tokensTable(list, clock.now()));
      });
    });

  tokens
    .command('revoke')
    .description('revoke a personal token: it is refused from now on')
    .argument('<token-id>', `the token's id, tok_… (see \`${c.leash} tokens list\`)`)
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText('after', '\nRevoking a token twice changes nothing.')
    .action(async (tokenId: string, o: { db?: string }) => {
      await withRunner(o.db, async ({ service }) => {
        const record = await service.revokeToken(tokenId);
        if (json) printJson(tokenJson(record));
        else
          print(`revoked personal token ${record.id} of ${record.principalId} at ${record.revokedAt ?? ''}`);
      });
    });
}
