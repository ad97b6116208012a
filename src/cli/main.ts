import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, extname, resolve } from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { exportCheckpoints, parseCheckpoints, type ChainedEntry } from '../audit/chain.js';
import { verifyAuditLog, type VerifyReport } from '../audit/verify.js';
import { systemClock, type Clock } from '../clock.js';
import {
  GuardrailError,
  GuardrailValidationError,
  isGuardrailError,
  isGuardrailValidationError,
} from '../errors.js';
import type { AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';
import { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import { parseIsoMs } from '../iso.js';
import { policyJsonSchema } from '../policy/jsonSchema.js';
import { parsePolicy } from '../policy/policy.js';
import type { Policy } from '../policy/schema.js';
import {
  APPROVAL_STATUSES,
  type Approval,
  type ApprovalStatus,
  type GuardrailStore,
} from '../store/GuardrailStore.js';
import {
  auditDetails,
  budgetText,
  gauges,
  outputBlock,
  outputLines,
  safe,
  stepsText,
  table,
  wallOf,
} from './format.js';
import { Progress } from './progress.js';
import type { ExecutorEvents } from '../executor/PlanExecutor.js';
import { completedDecisions, type CompletedDecision } from '../executor/state.js';
import { dbArgument, openStore, storeName, storeTarget } from './openStore.js';
import { parsePlanFile, planFileJsonSchema } from '../runner/planFile.js';
import {
  clockOf,
  PlanRunner,
  type DecisionReport,
  type PlanListRow,
  type PlanStatus,
  type RunOutcome,
  type RunReport,
} from '../runner/runner.js';
import type { BuiltinToolOptions } from '../runner/tools/index.js';

/** The exit codes of `leash`, as the README documents them. */
export const EXIT = Object.freeze({
  /** Done: the plan completed, or the command did what it was asked. */
  OK: 0,
  /**
   * The plan failed for another reason than a guardrail (a tool failed for good, after its retries or at
   * once; the store was unreachable), or verification found problems.
   */
  FAILED: 1,
  /** Usage or validation error: bad arguments, an invalid plan or policy file, an unknown id. */
  USAGE: 2,
  /** A guardrail stopped the plan: budget, steps, wall clock, a confirmation, a tool-call limit. */
  STOPPED: 3,
  /** The plan waits for a person's confirmation. */
  AWAITING: 4,
});

/** Where the command reads and writes: the process's own, or a test's. */
export interface CliIo {
  readonly stdout: { write(text: string): unknown; readonly isTTY?: boolean };
  readonly stderr: { write(text: string): unknown; readonly isTTY?: boolean };
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  readonly clock?: Clock;
  /** Options of the built-in tools; tests inject fetch and sleep. */
  readonly tools?: Omit<BuiltinToolOptions, 'baseDir'>;
  /** Ends long-running commands (`audit --follow`, `serve`). */
  readonly signal?: AbortSignal;
  /** How often the live progress line is redrawn on a terminal; default 1000 ms. */
  readonly tickMs?: number;
  /** Starts the dashboard; injected so that the command works without loading it when unused. */
  readonly serve?: (options: ServeOptions) => Promise<{ url: string; token: string; close(): Promise<void> }>;
}

export interface ServeOptions {
  readonly runner: PlanRunner;
  readonly host: string;
  readonly port: number;
  readonly token?: string;
}

/** Errors a person fixes by changing the command: exit 2. */
const USAGE_CODES = new Set([
  'PLAN_NOT_FOUND',
  'PLAN_NOT_PAUSED',
  'PLAN_NOT_RUNNING',
  'PLAN_NOT_RUNNABLE',
  'PLAN_CLAIMED',
  'APPROVAL_NOT_FOUND',
  'APPROVAL_NOT_PENDING',
  'APPROVAL_EXPIRED',
  'STORE_NOT_FOUND',
]);

/** Errors of something looked for in the store: their message names the database searched. */
const NOT_FOUND_CODES = new Set(['PLAN_NOT_FOUND', 'APPROVAL_NOT_FOUND']);

/** Runs `leash` with `argv` (without the node and script names); resolves with the exit code. */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  let code: number = EXIT.OK;
  const json = argv.includes('--json');
  const verbose = argv.includes('--verbose');
  const print = (text: string) => void io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  const printJson = (value: unknown) => print(JSON.stringify(value, null, 2));
  const clock = io.clock ?? systemClock;

  /** The policy file `--policy` names, read and validated, or null without one. */
  function readPolicy(file: string | undefined): Policy | null {
    if (file === undefined) return null;
    return parsePolicy(readFileText(resolve(io.cwd, file), 'policy file'), {
      format: formatOf(file),
      source: file,
    });
  }

  // The `--db` of the store in use, for the commands printed for a person to paste; empty for the default.
  let dbArg = '';

  /**
   * Opens the store, runs `body` with a runner on it, closes the store whatever happens. Only `create`
   * (for `run`) makes a store that does not exist: any other command refuses a SQLite path that names
   * none, or a PostgreSQL schema without leash's tables, rather than answer from an empty one.
   */
  async function withRunner<T>(
    db: string | undefined,
    body: (runner: PlanRunner, store: GuardrailStore) => Promise<T>,
    options: { create?: boolean } = {},
  ) {
    const target = storeTarget(db, io.env);
    const store = await openStore(db, io.cwd, io.env, { mustExist: options.create !== true });
    dbArg = dbArgument(target, io.cwd);
    const progress = new Progress(io.stderr, clock, io.tickMs);
    // Progress reads the store: every update is written before it closes, in the order of the events.
    let printing: Promise<void> = Promise.resolve();
    const show = (planId: string, update: (g: AutonomyGuardrails | null) => void): void => {
      printing = printing.then(async () =>
        update(await runner.service.getGuardrails(planId).catch(() => null)),
      );
    };
    const runner: PlanRunner = new PlanRunner({
      store,
      clock,
      ...(io.tools ? { tools: io.tools } : {}),
      ...(io.signal ? { signal: io.signal } : {}),
      onEvent: (event, payload) => {
        if (json) return;
        if (event === 'started') {
          const e = payload as ExecutorEvents['started'];
          show(e.planId, (g) => progress.started(e.decisionId, e.attempt, g));
        } else if (event === 'decision') {
          const e = payload as ExecutorEvents['decision'];
          const output = outputLines(e.decision.output, verbose);
          show(e.planId, (g) => progress.done(e.decision.decisionId, g, output));
        }
      },
    });
    try {
      return await body(runner, store);
    } catch (error) {
      if (isGuardrailError(error) && NOT_FOUND_CODES.has(error.code)) {
        const where = `${error.message} (searched ${storeName(target, io.cwd)})`;
        throw new GuardrailError(error.code, where, { cause: error });
      }
      throw error;
    } finally {
      await printing;
      progress.close();
      await store.close();
    }
  }

  function report(run: RunReport): number {
    if (json) {
      printJson({ plan_id: run.planId, ...runJson(run) });
    } else {
      print(describeRun(run, dbArg));
    }
    return exitOf(run);
  }

  const program = new Command('leash')
    .description(
      'Keeps autonomous plans inside their guardrails — step limits, budgets, confirmations, wall-clock, tool-call and retry limits — with a tamper-evident audit log.',
    )
    .version(packageVersion(), '-V, --version')
    .showHelpAfterError('(run with --help for usage)')
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
  $ leash run examples/release.plan.yaml
  $ leash approvals
  $ leash approve <approval-id> --by alice --reason "release notes checked"
  $ leash audit release --format jsonl
  $ leash serve`,
    );

  const dbOption = () =>
    new Option('--db <path|url>', 'SQLite file or postgres:// URL (default ./.leash/leash.db)');
  const jsonOption = () => new Option('--json', 'print JSON for scripts instead of tables');
  const verboseOption = () =>
    new Option('--verbose', 'print all each step printed (and an HTTP body), not only its last lines');

  program
    .command('run')
    .description('run a plan file under its guardrails; pauses when a step needs a person')
    .argument('<plan-file>', 'plan file (YAML or JSON)')
    .option(
      '--policy <file>',
      'policy file: each limit is the stricter of its own and the plan file’s, and its tool rules apply',
    )
    .option('--id <plan-id>', 'plan id to run under (default: the file’s id or name, numbered when taken)')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addOption(verboseOption())
    .addHelpText(
      'after',
      `
Examples:
  $ leash run examples/release.plan.yaml
  $ leash run deploy.plan.json --policy leash.policy.yaml --db postgres://127.0.0.1:5432/leash --json`,
    )
    .action(async (file: string, o: { policy?: string; id?: string; db?: string }) => {
      const path = resolve(io.cwd, file);
      const plan = parsePlanFile(readFileText(path, 'plan file'), { format: formatOf(path), source: file });
      const policy = readPolicy(o.policy);
      code = await withRunner(
        o.db,
        async (runner) => {
          const run = await runner.start({
            file: plan,
            source: path,
            baseDir: dirname(path),
            name: planName(path),
            ...(o.id === undefined ? {} : { id: o.id }),
            policy,
          });
          return report(run);
        },
        { create: true },
      );
    });

  program
    .command('status')
    .description('show one plan, or every plan in the store')
    .argument('[plan]', 'plan id')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText('after', '\nExamples:\n  $ leash status\n  $ leash status release --json')
    .action(async (planId: string | undefined, o: { db?: string }) => {
      await withRunner(o.db, async (runner) => {
        if (planId === undefined) {
          const rows = await runner.list();
          if (json) {
            printJson(
              rows.map((r) =>
                'status' in r ? statusJson(r.status, clock.now()) : { plan_id: r.planId, error: r.error },
              ),
            );
          } else if (rows.length === 0)
            print(`no plans yet: start one with \`leash run <plan-file>${dbArg}\``);
          else print(statusTable(rows, clock.now()));
          return;
        }
        const s = await runner.status(planId);
        if (s === null) throw new GuardrailError('PLAN_NOT_FOUND', `no plan "${planId}" in this store`);
        if (json) printJson(statusJson(s, clock.now(), { completed: true }));
        else print(describeStatus(s, clock.now()));
      });
    });

  program
    .command('audit')
    .description("print a plan's audit log, oldest first")
    .argument('<plan>', 'plan id')
    .addOption(
      new Option('--format <format>', 'output format').choices(['table', 'json', 'jsonl']).default('table'),
    )
    .option('--follow', 'keep printing new entries as they are recorded (Ctrl-C to stop)')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      '\nExamples:\n  $ leash audit release\n  $ leash audit release --format jsonl --follow',
    )
    .action(async (planId: string, o: { format: string; follow?: boolean; db?: string }) => {
      const format = json ? 'json' : o.format;
      await withRunner(o.db, async (_runner, store) => {
        await plansOf(store, planId);
        let shown = 0;
        const show = (log: readonly ChainedEntry[], first: boolean) => {
          const fresh = log.slice(shown);
          shown = log.length;
          if (format === 'json' && !o.follow) printJson(fresh.map(entryJson));
          else if (format === 'json' || format === 'jsonl') {
            for (const e of fresh) print(JSON.stringify(entryJson(e)));
          } else if (fresh.length > 0 || first) print(auditTable(fresh, first));
        };
        show(await store.readAuditLog(planId), true);
        if (!o.follow) return;
        while (!io.signal?.aborted) {
          await pause(500, io.signal);
          if (io.signal?.aborted) break;
          show(await store.readAuditLog(planId), false);
        }
      });
    });

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
      '\nExamples:\n  $ leash verify\n  $ leash verify release --checkpoints release.checkpoints.jsonl --public-key leash.pub.pem',
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
          if (reports.some((r) => !r.ok)) code = EXIT.FAILED;
        });
      },
    );

  program
    .command('checkpoints')
    .description("export the checkpoints of a plan's log (or every plan's) as JSON lines, to keep elsewhere")
    .argument('[plan]', 'plan id (default: every plan)')
    .addOption(dbOption())
    .addHelpText(
      'after',
      `
The store writes a checkpoint every LEASH_CHECKPOINT_EVERY entries (default 10; 0 for none), signed with
the Ed25519 key in the PEM file LEASH_SIGNING_KEY when set (make one with \`leash keygen\`). Kept where
whoever can change the database cannot, they let \`leash verify --checkpoints\` catch a cut tail or a
rewritten log.

Example:
  $ leash checkpoints release >> /secure/release.checkpoints.jsonl`,
    )
    .action(async (planId: string | undefined, o: { db?: string }) => {
      await withRunner(o.db, async (_runner, store) => {
        const ids = await plansOf(store, planId);
        for (const id of ids) io.stdout.write(exportCheckpoints(await store.readCheckpoints(id)));
      });
    });

  program
    .command('prune')
    .description(
      "retention: remove a plan's oldest audit entries, keeping at least --keep, up to a checkpoint",
    )
    .argument('<plan>', 'plan id')
    .requiredOption('--keep <entries>', 'newest entries to keep at least')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      `
Entries are removed up to the newest checkpoint that leaves at least --keep entries, so the log that is
kept still verifies from that checkpoint. Export the checkpoints first (\`leash checkpoints\`) to keep
proof of what was removed.

Example:
  $ leash prune release --keep 1000`,
    )
    .action(async (planId: string, o: { keep: string; db?: string }) => {
      const keep = Number(o.keep);
      if (!/^\d+$/.test(o.keep) || !Number.isSafeInteger(keep)) {
        throw new GuardrailValidationError('keep', `--keep must be an integer >= 0, got "${o.keep}"`);
      }
      await withRunner(o.db, async (_runner, store) => {
        await plansOf(store, planId);
        const log = await store.readAuditLog(planId);
        const last = log.at(-1)?.seq ?? 0;
        const first = log[0]?.seq ?? 1;
        const anchor = (await store.readCheckpoints(planId))
          .map((c) => c.size)
          .filter((size) => size >= first && size <= last - keep)
          .at(-1);
        const removed = anchor === undefined ? 0 : await store.pruneAuditLog(planId, anchor);
        if (json)
          printJson({ plan_id: planId, removed, pruned_through: anchor ?? null, kept: log.length - removed });
        else if (anchor === undefined)
          print(`nothing to prune: no checkpoint leaves ${keep} entries of ${safe(planId)}`);
        else
          print(
            `removed ${removed} entries of ${safe(planId)} (through seq ${anchor}); ${log.length - removed} kept`,
          );
      });
    });

  program
    .command('keygen')
    .description(
      'make an Ed25519 key pair for signing checkpoints: <prefix>.key.pem (private) and <prefix>.pub.pem',
    )
    .argument('<prefix>', 'path and name of the two files')
    .addHelpText(
      'after',
      '\nExample:\n  $ leash keygen leash-signing\n  $ LEASH_SIGNING_KEY=leash-signing.key.pem leash run release.plan.yaml\n  $ leash verify --public-key leash-signing.pub.pem',
    )
    .action((prefix: string) => {
      const base = resolve(io.cwd, prefix);
      const files = [`${base}.key.pem`, `${base}.pub.pem`];
      const taken = files.filter((f) => existsSync(f));
      if (taken.length > 0)
        throw new GuardrailError('USAGE', `${taken.join(' and ')} exists already: choose another prefix`);
      const { privateKey, publicKey } = generateKeyPairSync('ed25519');
      // The private key is readable by its owner alone.
      writeFileSync(files[0] as string, privateKey.export({ type: 'pkcs8', format: 'pem' }), {
        mode: 0o600,
        flag: 'wx',
      });
      writeFileSync(files[1] as string, publicKey.export({ type: 'spki', format: 'pem' }), { flag: 'wx' });
      print(`wrote ${base}.key.pem (keep it secret) and ${base}.pub.pem`);
    });

  program
    .command('approvals')
    .description('list confirmation requests, oldest first')
    .addOption(new Option('--status <status>', 'only requests in this status').choices(APPROVAL_STATUSES))
    .option('--plan <plan>', 'only requests of this plan')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      '\nExamples:\n  $ leash approvals --status pending\n  $ leash approvals --plan release --json',
    )
    .action(async (o: { status?: ApprovalStatus; plan?: string; db?: string }) => {
      await withRunner(o.db, async (runner) => {
        const list = await runner.service.listApprovals({
          ...(o.status === undefined ? {} : { status: o.status }),
          ...(o.plan === undefined ? {} : { planId: o.plan }),
        });
        if (json) printJson(list);
        else if (list.length === 0) print('no confirmation requests');
        else print(approvalsTable(list));
      });
    });

  program
    .command('approve')
    .description(
      'approve a pending confirmation, then resume the paused plan (an application resumes its own run)',
    )
    .argument('<approval-id>', 'id of the confirmation request (see `leash approvals`)')
    .requiredOption('--by <name>', 'who approves (recorded in the audit log)')
    .option('--reason <text>', 'why (recorded in the audit log)')
    .option('--no-resume', 'only record the approval; resume later with `leash resume <plan>`')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addOption(verboseOption())
    .addHelpText(
      'after',
      '\nExamples:\n  $ leash approve 0f3c… --by alice --reason "change window open"\n  $ leash approve 0f3c… --by alice --no-resume',
    )
    .action(async (id: string, o: { by: string; reason?: string; resume: boolean; db?: string }) => {
      code = await withRunner(o.db, async (runner) => {
        const decision = { by: o.by, ...(o.reason === undefined ? {} : { reason: o.reason }) };
        return decided(await runner.approve(id, decision, { resume: o.resume }));
      });
    });

  program
    .command('deny')
    .description(
      'deny a pending confirmation; the paused plan ends without running the step (an application is told)',
    )
    .argument('<approval-id>', 'id of the confirmation request (see `leash approvals`)')
    .requiredOption('--by <name>', 'who denies (recorded in the audit log)')
    .requiredOption('--reason <text>', 'why (required, recorded in the audit log)')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText('after', '\nExample:\n  $ leash deny 0f3c… --by alice --reason "not during the freeze"')
    .action(async (id: string, o: { by: string; reason: string; db?: string }) => {
      await withRunner(o.db, async (runner) => {
        // The denial was recorded and the plan ended as asked: exit 0, whatever the plan's end says.
        decided(await runner.deny(id, { by: o.by, reason: o.reason }, { resume: true }));
      });
    });

  function decided({ approval, run, resumedBy }: DecisionReport): number {
    if (json) {
      const ran = run === null ? null : { plan_id: run.planId, ...runJson(run) };
      printJson({ approval, run: ran, resumed_by: resumedBy });
      return run === null ? EXIT.OK : exitOf(run);
    }
    const line = `${approval.status} ${safe(approval.id)} (plan ${safe(approval.planId)}, decision ${safe(approval.decisionId)}) by ${safe(approval.decidedBy ?? '')}`;
    if (resumedBy === 'application') {
      // Not a plan the runner started: the application that asked goes on when it asks again.
      const next = approval.status === 'approved' ? 'resumes the run' : 'gets the denial when it asks again';
      print(`${line}; the application that asked ${next}`);
    } else {
      print(line);
      if (run !== null) print(describeRun(run, dbArg));
      else if (approval.status === 'approved')
        print(`resume the plan with: leash resume ${approval.planId}${dbArg}`);
    }
    return run === null ? EXIT.OK : exitOf(run);
  }

  program
    .command('resume')
    .description('continue a plan awaiting confirmation once its step was approved')
    .argument('<plan>', 'plan id')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addOption(verboseOption())
    .addHelpText('after', '\nExample:\n  $ leash resume release')
    .action(async (planId: string, o: { db?: string }) => {
      code = await withRunner(o.db, async (runner) => report(await runner.resume(planId)));
    });

  program
    .command('abandon')
    .description(
      'mark a plan left running by a process that died as failed, so it no longer shows as running',
    )
    .argument('<plan>', 'plan id')
    .requiredOption('--by <name>', 'who abandons it (kept in the plan’s outcome)')
    .addOption(dbOption())
    .addOption(jsonOption())
    .addHelpText(
      'after',
      '\nOnly for a plan in phase execute whose process is gone (killed, or its machine lost): a run\nthat ends on its own, or is stopped with Ctrl-C, records its end itself.\n\nExample:\n  $ leash abandon release --by alice',
    )
    .action(async (planId: string, o: { by: string; db?: string }) => {
      await withRunner(o.db, async (runner) => {
        const s = await runner.abandon(planId, o.by);
        if (json) printJson(statusJson(s, clock.now()));
        else print(`plan ${safe(planId)}: failed (abandoned by ${safe(o.by)})`);
      });
    });

  program
    .command('serve')
    .description('start the local dashboard: plans, audit logs, and an approvals inbox')
    .option('--port <port>', 'port to listen on', '4580')
    .option('--host <host>', 'address to bind (keep 127.0.0.1 unless you know why)', '127.0.0.1')
    .addOption(dbOption())
    .addHelpText(
      'after',
      '\nPrints the address with a random access token; every request needs it (kept in a cookie after the first).\nSet LEASH_TOKEN to choose the token.\n\nExample:\n  $ leash serve --port 8080',
    )
    .action(async (o: { port: string; host: string; db?: string }) => {
      const port = Number(o.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) {
        throw new GuardrailError('USAGE', `--port must be an integer from 0 to 65535, got "${o.port}"`);
      }
      const serve = io.serve ?? (await import('../dashboard/server.js')).startDashboard;
      await withRunner(o.db, async (runner) => {
        const token = io.env['LEASH_TOKEN'];
        const server = await serve({ runner, host: o.host, port, ...(token ? { token } : {}) });
        print(`leash dashboard: ${server.url}/?token=${server.token}`);
        print('keep the token private; Ctrl-C stops the server');
        await new Promise<void>((done) => {
          if (io.signal?.aborted) done();
          io.signal?.addEventListener('abort', () => done(), { once: true });
        });
        await server.close();
      });
    });

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
  $ leash mcp --policy fs.policy.yaml -- npx -y @modelcontextprotocol/server-filesystem ~/notes
  $ leash mcp --policy leash.policy.yaml --upstream-url http://127.0.0.1:3001/mcp`,
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
        const { runMcpSession } = await import('../mcp/session.js');
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
            dbArg: dbArgument(target, io.cwd),
            ...(io.signal ? { signal: io.signal } : {}),
            log: (line) => void io.stderr.write(`${line}\n`),
          });
        } finally {
          await store.close();
        }
      },
    );

  const policy = program.command('policy').description('policy files');
  policy
    .command('validate')
    .description('check a policy file; prints what it sets, or every problem with its path')
    .argument('<file>', 'policy file (YAML or JSON)')
    .addOption(jsonOption())
    .addHelpText('after', '\nExample:\n  $ leash policy validate leash.policy.yaml')
    .action((file: string) => {
      const parsed = parsePolicy(readFileText(resolve(io.cwd, file), 'policy file'), {
        format: formatOf(file),
        source: file,
      });
      if (json) printJson({ valid: true, policy: parsed });
      else print(`${file}: valid policy (version ${parsed.version})`);
    });

  program
    .command('schema')
    .description('print the JSON Schema of plan files (or, with --policy, of policy files)')
    .option('--policy', 'the schema of policy files instead')
    .addHelpText('after', '\nExample:\n  $ leash schema > plan.schema.json')
    .action((o: { policy?: boolean }) => {
      printJson(o.policy ? policyJsonSchema() : planFileJsonSchema());
    });

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
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
    if (json) {
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

/**
 * The configured plans, or the one named (PLAN_NOT_FOUND when it is not one of them); read from the
 * listing, so a plan whose state is damaged is found.
 */
async function plansOf(store: GuardrailStore, planId: string | undefined): Promise<string[]> {
  const configured = (await store.listPlans()).filter((l) => l.configured).map((l) => l.planId);
  if (planId === undefined) return configured;
  if (!configured.includes(planId))
    throw new GuardrailError('PLAN_NOT_FOUND', `no plan "${planId}" in this store`);
  return [planId];
}

function exitOf(run: RunReport): number {
  switch (run.outcome.status) {
    case 'completed':
      return EXIT.OK;
    case 'awaiting_confirmation':
      return EXIT.AWAITING;
    default:
      return run.outcome.guard === undefined ? EXIT.FAILED : EXIT.STOPPED;
  }
}

/** The decisions done, as `--json` prints them: each with its whole output. */
function completedJson(completed: readonly CompletedDecision[]): Record<string, unknown>[] {
  return completed.map((c) => ({
    decision_id: c.decisionId,
    output: c.output,
    cost: c.cost,
    attempts: c.attempts,
  }));
}

/** The decisions done of a plan's saved progress; none when it cannot be read. */
function completedOf(s: PlanStatus): readonly CompletedDecision[] {
  return s.record === null
    ? []
    : (completedDecisions(s.record.metadata, s.record.file.decisions.length) ?? []);
}

function runJson(run: RunReport): Record<string, unknown> {
  return {
    status: run.outcome.status,
    outcome: run.outcome,
    completed: completedJson(run.completed),
    ...(run.result.approval ? { approval: run.result.approval } : {}),
  };
}

/** What a run ended with, for a person; `dbArg` is the `--db` the commands it suggests need. */
function describeRun(run: RunReport, dbArg: string): string {
  const o = run.outcome;
  const lines = [
    `plan ${safe(run.planId)}: ${o.status.replace('_', ' ')} (${o.completed}/${o.decisions} decisions done)`,
  ];
  if (o.status === 'awaiting_confirmation' && run.result.approval) {
    const a = run.result.approval;
    lines.push(
      `  decision "${safe(a.decisionId)}" needs a person's confirmation (${safe(a.operation)}); approval ${safe(a.id)}`,
      `  approve:  leash approve ${a.id} --by <your-name> --reason "<why>"${dbArg}`,
      `  deny:     leash deny ${a.id} --by <your-name> --reason "<why>"${dbArg}`,
      `  or open the dashboard: leash serve${dbArg}`,
    );
  } else if (o.status === 'failed') {
    lines.push(...endLines({ ...o, reason: o.reason ?? '' }));
    if (o.completed > 0)
      lines.push(`  the work done before the stop is kept: leash status ${run.planId}${dbArg}`);
  }
  return lines.join('\n');
}

/**
 * Why a run ended, and under it the last error of the tool that failed (its exit code, stderr, HTTP
 * status …): what `run` and `status` print of a failed run.
 */
function endLines(o: RunOutcome): string[] {
  if (o.reason === undefined) return [];
  const failed = o.code === undefined ? 'failed' : `failed (${safe(o.code)})`;
  const lines = [`  ${o.guard === undefined ? failed : `stopped by ${o.guard}`}: ${safe(o.reason)}`];
  if (o.error === undefined) return lines;
  // A tool's failure names its decision in the reason; a guard's stop does not.
  const which =
    o.guard === undefined || o.decisionId === undefined
      ? ''
      : `last error of decision "${o.decisionId}"${(o.attempts ?? 1) > 1 ? ` (try ${o.attempts})` : ''}: `;
  return [...lines, ...indent(safe(which + o.error), '    ')];
}

/** The lines of `text`, each after `prefix`. */
function indent(text: string, prefix: string): string[] {
  return text.split(/\r?\n/).map((line) => `${prefix}${line}`.trimEnd());
}

/**
 * A plan's status as `--json` prints it. The decisions done, each with its whole output (an HTTP answer
 * can be a mebibyte), only with `completed`: for `status <plan>`, not for every row of the list.
 */
function statusJson(
  s: PlanStatus,
  nowMs: number,
  options: { completed?: boolean } = {},
): Record<string, unknown> {
  return {
    plan_id: s.planId,
    phase: s.phase,
    updated_at: s.updatedAt,
    guardrails: s.guardrails?.toJSON() ?? null,
    elapsed_seconds:
      s.guardrails?.startTime == null
        ? null
        : Math.max(0, (nowMs - parseIsoMs(s.guardrails.startTime)) / 1000),
    outcome: s.record?.outcome ?? null,
    ...(options.completed === true ? { completed: completedJson(completedOf(s)) } : {}),
    source: s.record?.source ?? null,
    pending_approvals: s.pending,
  };
}

function statusTable(rows: readonly PlanListRow[], nowMs: number): string {
  return table(
    ['PLAN', 'PHASE', 'STEPS', 'BUDGET', 'ELAPSED', 'UPDATED'],
    rows.map((r) => {
      if (!('status' in r)) return [safe(r.planId), `unreadable: ${safe(r.error)}`, '', '', '', ''];
      const s = r.status;
      const g = s.guardrails;
      return [
        safe(s.planId),
        safe(s.phase ?? '—'),
        g === null ? '—' : stepsText(g),
        g === null ? '—' : budgetText(g),
        g === null ? '—' : wallOf(g, clockOf(s, nowMs)),
        s.updatedAt ?? '—',
      ];
    }),
  );
}

function describeStatus(s: PlanStatus, nowMs: number): string {
  const lines = [`plan ${safe(s.planId)}: ${s.phase ?? 'configured (no run recorded)'}`];
  if (s.record) lines.push(`  from ${safe(s.record.source)}, started ${s.record.startedAt}`);
  if (s.guardrails) lines.push(`  ${gauges(s.guardrails, clockOf(s, nowMs))}`);
  const o = s.record?.outcome;
  if (o) lines.push(`  ${o.completed}/${o.decisions} decisions done`);
  for (const c of completedOf(s)) {
    lines.push(`  ✓ ${safe(c.decisionId)}${c.attempts > 1 ? ` (${c.attempts} tries)` : ''}`);
    lines.push(...outputBlock(outputLines(c.output)));
  }
  if (o) lines.push(...endLines(o));
  for (const a of s.pending) {
    lines.push(
      `  waiting for a person: approval ${safe(a.id)} for decision "${safe(a.decisionId)}" (${safe(a.operation)})`,
    );
  }
  return lines.join('\n');
}

function entryJson(e: ChainedEntry): Record<string, unknown> {
  return { seq: e.seq, prev: e.prev, hash: e.hash, ...e.entry };
}

function auditTable(log: readonly ChainedEntry[], header: boolean): string {
  // Every cell comes from the database, which may have been written by anyone: none reaches the
  // terminal unescaped.
  const rows = log.map((e) =>
    [
      String(e.seq),
      String(e.entry.timestamp),
      String(e.entry.event_type),
      String(e.entry.guard_name),
      String(e.entry.result),
      auditDetails(e.entry.event_type, e.entry.details),
    ].map(safe),
  );
  const text = table(['SEQ', 'TIME', 'EVENT', 'GUARD', 'RESULT', 'DETAILS'], rows);
  return header ? text : text.split('\n').slice(1).join('\n');
}

/** What `leash verify` says of one plan: its report, or why it could not be verified. */
type PlanVerification =
  | VerifyReport
  | { readonly planId: string; readonly ok: false; readonly error: { code: string; message: string } };

function verifyTable(reports: readonly PlanVerification[]): string {
  const rows = reports.map((r) =>
    'error' in r
      ? [safe(r.planId), '-', '-', 'not verified']
      : [
          safe(r.planId),
          String(r.size),
          r.head.slice(0, 16),
          (r.ok
            ? 'ok'
            : `${r.findings.length + r.omittedFindings} problem(s): ${r.findings.map((f) => f.code).join(', ')}`) +
            (r.prunedThrough > 0 ? ` (pruned through seq ${r.prunedThrough})` : ''),
        ],
  );
  const findings = reports.flatMap((r) =>
    'error' in r
      ? [`  ${safe(r.planId)}: ${r.error.code} ${safe(r.error.message)}`]
      : r.findings.map(
          (f) =>
            `  ${safe(r.planId)}${f.seq === undefined ? '' : ` #${f.seq}`}: ${f.code} ${safe(f.message)}`,
        ),
  );
  return [table(['PLAN', 'ENTRIES', 'HEAD', 'CHAIN'], rows), ...findings].join('\n');
}

/** The requests as a table, each followed by the tool it is for and a preview of its input, when known. */
function approvalsTable(list: readonly Approval[]): string {
  const [header = '', ...rows] = table(
    ['ID', 'PLAN', 'DECISION', 'OPERATION', 'STATUS', 'REQUESTED', 'BY', 'REASON'],
    list.map((a) => [
      safe(a.id),
      safe(a.planId),
      safe(a.decisionId),
      safe(a.operation),
      a.status,
      a.requestedAt,
      safe(a.decidedBy ?? ''),
      safe((a.reason ?? '').replace(/\s+/g, ' ')),
    ]),
  ).split('\n');
  return [header, ...rows.flatMap((row, i) => [row, ...askedFor(list[i] as Approval)])].join('\n');
}

/** The line under a request that names its tool and previews its input; none when it has neither. */
function askedFor(a: Approval): string[] {
  const parts = [
    ...(a.toolName === undefined ? [] : [`tool ${safe(a.toolName)}`]),
    ...(a.inputPreview === undefined ? [] : [`input ${safe(a.inputPreview)}`]),
  ];
  return parts.length === 0 ? [] : [`  ${parts.join(' · ')}`];
}

function readFileText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const why =
      (error as { code?: string }).code === 'ENOENT' ? 'no such file' : String((error as Error).message);
    throw new GuardrailError('USAGE', `cannot read the ${what} ${path}: ${why}`, { cause: error });
  }
}

function formatOf(path: string): 'json' | 'yaml' {
  return extname(path).toLowerCase() === '.json' ? 'json' : 'yaml';
}

/** The plan's default id: the file name without its plan and format extensions. */
function planName(path: string): string {
  return basename(path).replace(/(\.plan)?\.(ya?ml|json)$/i, '') || 'plan';
}

/** Waits `ms`, or less when `signal` aborts; leaves no listener behind either way. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((done) => {
    const end = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', end);
      done();
    };
    const timer = setTimeout(end, ms);
    signal?.addEventListener('abort', end, { once: true });
  });
}

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: string;
    };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}
