import { Command, CommanderError } from 'commander';
import { isGuardrailError, isGuardrailValidationError, type GuardrailErrorCode } from '../errors.js';
import { registerRun } from './commands/run.js';
import { registerStatus } from './commands/status.js';
import { registerAudit } from './commands/audit.js';
import { registerVerify } from './commands/verify.js';
import { registerCheckpoints } from './commands/checkpoints.js';
import { registerPrune } from './commands/prune.js';
import { registerKeygen } from './commands/keygen.js';
import { registerApprovals } from './commands/approvals.js';
import { registerApprove } from './commands/approve.js';
import { registerDeny } from './commands/deny.js';
import { registerResume } from './commands/resume.js';
import { registerAbandon } from './commands/abandon.js';
import { registerServe } from './commands/serve.js';
import { registerMcp } from './commands/mcp.js';
import { registerPolicy } from './commands/policy.js';
import { registerSchema } from './commands/schema.js';
import { registerBudgets } from './commands/budgets.js';
import { registerTokens } from './commands/tokens.js';
import { registerUsers } from './commands/users.js';
import { registerNotifications } from './commands/notifications.js';
import { cliContext } from './context.js';
import { safe } from './format.js';
import { EXIT, type CliIo } from './io.js';
import { packageVersion } from './views.js';

export { EXIT, type CliIo, type ServeOptions } from './io.js';

/** Errors a person fixes by changing the command: exit 2. */
const USAGE_CODES: ReadonlySet<GuardrailErrorCode> = new Set<GuardrailErrorCode>([
  'PLAN_NOT_FOUND',
  'PLAN_NOT_CONFIGURED',
  'PLAN_NOT_PAUSED',
  'PLAN_NOT_RUNNING',
  'PLAN_NOT_RUNNABLE',
  'PLAN_CLAIMED',
  'APPROVAL_NOT_FOUND',
  'APPROVAL_NOT_PENDING',
  'APPROVAL_EXPIRED',
  'CAP_NOT_FOUND',
  'STORE_NOT_FOUND',
  'PRINCIPAL_NOT_FOUND',
  'PRINCIPAL_REVOKED',
  'TOKEN_NOT_FOUND',
  'TOKEN_INVALID',
  'TOKEN_REVOKED',
  'TOKEN_EXPIRED',
]);

/** Runs `leash` with `argv` (without the node and script names); resolves with the exit code. */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const c = cliContext(argv, io);
  const program = new Command('leash')
    .description(
      'Keeps autonomous plans inside their guardrails — step limits, budgets, confirmations, wall-clock, tool-call and retry limits — with a tamper-evident audit log.',
    )
    .version(packageVersion(), '-V, --version')
    .showHelpAfterError('(run with --help for usage)')
    // A command's options come after it, so that a subcommand (`audit export`) gets its own.
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({
      writeOut: (s) => void io.stdout.write(s),
      writeErr: (s) => void io.stderr.write(s),
    })
    .addHelpText(
      'after',
      `
Exit codes: 0 done · 1 failed (a tool failed for good, retries included; the store was unreachable;
            verification found problems)
            2 usage or validation error · 3 stopped by a guardrail · 4 awaiting confirmation

State lives in a SQLite file at ./.leash/leash.db unless --db (or LEASH_DB) names another file or a
postgres:// URL.

Examples:
  $ ${c.leash} run examples/release.plan.yaml
  $ ${c.leash} approvals
  $ ${c.leash} approve 0f3c… --by alice --reason "release notes checked"
  $ ${c.leash} audit release --format jsonl
  $ ${c.leash} serve`,
    );

  registerRun(program, c);
  registerStatus(program, c);
  registerAudit(program, c);
  registerVerify(program, c);
  registerCheckpoints(program, c);
  registerPrune(program, c);
  registerKeygen(program, c);
  registerApprovals(program, c);
  registerApprove(program, c);
  registerDeny(program, c);
  registerResume(program, c);
  registerAbandon(program, c);
  registerServe(program, c);
  registerMcp(program, c);
  registerPolicy(program, c);
  registerSchema(program, c);
  registerBudgets(program, c);
  registerUsers(program, c);
  registerTokens(program, c);
  registerNotifications(program, c);

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return c.exit;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version end the program on purpose; anything else commander refuses is a usage error.
      return error.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    }
    const exit =
      isGuardrailValidationError(error) ||
      (isGuardrailError(error) && USAGE_CODES.has(error.code)) ||
      (isGuardrailError(error) && error.code === 'USAGE')
        ? EXIT.USAGE
        : EXIT.FAILED;
    if (c.json) {
      const e = error as { code?: unknown; field?: unknown; message?: unknown };
      io.stderr.write(
        `${JSON.stringify({ error: { code: e?.code ?? 'ERROR', message: String(e?.message ?? error), ...(e?.field === undefined ? {} : { field: e.field }) } })}\n`,
      );
    } else {
      io.stderr.write(`leash: ${safe(error instanceof Error ? error.message : String(error))}\n`);
    }
    return exit;
  }
}
