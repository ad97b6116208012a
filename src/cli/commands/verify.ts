// `leash verify`.
import { resolve } from 'node:path';
import { parseCheckpoints } from '../../audit/chain.js';
import { verifyAuditLog } from '../../audit/verify.js';
import { GuardrailError } from '../../errors.js';
import { plansOf, verifyTable, readFileText, type PlanVerification } from '../views.js';
import { EXIT } from '../io.js';
import type { CliContext } from '../context.js';
import type { Command } from 'commander';

export function registerVerify(program: Command, c: CliContext): void {
  const { io, json, print, printJson, withRunner, dbOption, jsonOption } = c;
  program
    .command('verify')
    .description("verify the hash chain of a plan's audit log, or of every plan's")
    .argument('[plan]', 'plan id (default: every plan)')
    .option('--public-key <file>', 'Ed25519 public key (PEM) the checkpoints must be signed with')
    .option(
      '--checkpoints <file>',
      'checkpoints exported earlier (JSON lines), to catch truncation and rewrites',
    )
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      `\nExamples:\n  $ ${c.leash} verify\n  $ ${c.leash} verify release --checkpoints release.checkpoints.jsonl --public-key leash.pub.pem`,
    )
    .action(
      async (planId: string | undefined, o: { publicKey?: string; checkpoints?: string; db?: string }) => {
        const publicKey =
          o.publicKey === undefined ? undefined : readFileText(resolve(io.cwd, o.publicKey), 'public key');
        const checkpoints =
          o.checkpoints === undefined
            ? undefined
            : parseCheckpoints(readFileText(resolve(io.cwd, o.checkpoints), 'checkpoints file'));
        await withRunner(o.db, async (_runner, store) => {
          const ids = await plansOf(store, planId);
          const reports: PlanVerification[] = [];
          for (const id of ids) {
            // One plan that cannot be verified never keeps the others from being reported.
            try {
              reports.push(
                await verifyAuditLog(store, id, {
                  ...(publicKey === undefined ? {} : { publicKey }),
                  ...(checkpoints === undefined ? {} : { checkpoints }),
                }),
              );
            } catch (error) {
              if (!(error instanceof GuardrailError) || error.code === 'STORE_UNAVAILABLE') throw error;
              reports.push({ planId: id, ok: false, error: { code: error.code, message: error.message } });
            }
          }
          if (json) printJson(reports);
          else if (reports.length === 0) print('no plans to verify');
          else print(verifyTable(reports));
          if (reports.some((r) => !r.ok)) c.exit = EXIT.FAILED;
        });
      },
    );
}
