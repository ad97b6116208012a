// What every command of `leash` is handed: where it writes, how it opens the store, and the shared
// pieces of what it prints.
import { resolve } from 'node:path';
import { Option } from 'commander';
import { systemClock, type Clock } from '../clock.js';
import { GuardrailError, isGuardrailError, type GuardrailErrorCode } from '../errors.js';
import type { ExecutorEvents } from '../executor/PlanExecutor.js';
import type { AutonomyGuardrails } from '../guardrails/AutonomyGuardrails.js';
import { parsePolicy } from '../policy/policy.js';
import type { Policy } from '../policy/schema.js';
import { leashCommand, type CommandStyle } from '../runner/commandLine.js';
import { PlanRunner, type DecisionReport, type RunReport } from '../runner/runner.js';
import type { GuardrailStore } from '../store/GuardrailStore.js';
import { outputLines, safe } from './format.js';
import { invokedAs } from './invokedAs.js';
import type { CliIo } from './io.js';
import { EXIT } from './io.js';
import { dbArgument, openStore, storeName, storeTarget } from './openStore.js';
import { Progress } from './progress.js';
import { describeRun, exitOf, formatOf, readFileText, runJson } from './views.js';

/** Errors of something looked for in the store: their message names the database searched. */
const NOT_FOUND_CODES: ReadonlySet<GuardrailErrorCode> = new Set<GuardrailErrorCode>([
  'PLAN_NOT_FOUND',
  'APPROVAL_NOT_FOUND',
  'CAP_NOT_FOUND',
  'PRINCIPAL_NOT_FOUND',
  'TOKEN_NOT_FOUND',
]);

export interface CliContext {
  readonly io: CliIo;
  readonly json: boolean;
  readonly verbose: boolean;
  readonly clock: Clock;
  /** The exit code the command ends with, when it finishes without an error. */
  exit: number;
  /** How the commands printed for a person to paste start: `leash` when the PATH finds this one, else `npx leash`. */
  readonly leash: string;
  /** How the commands printed for a person to paste start, and the store they name (once it is open). */
  readonly style: CommandStyle;
  print(text: string): void;
  printJson(value: unknown): void;
  /** The policy file `--policy` names, read and validated, or null without one. */
  readPolicy(file: string | undefined): Policy | null;
  /**
   * Opens the store, runs `body` with a runner on it, closes the store whatever happens. Only `create`
   * (for `run`) makes a store that does not exist: any other command refuses a SQLite path that names
   * none, or a PostgreSQL schema without leash's tables, rather than answer from an empty one.
   */
  withRunner<T>(
    db: string | undefined,
    body: (runner: PlanRunner, store: GuardrailStore) => Promise<T>,
    options?: { create?: boolean },
  ): Promise<T>;
  /** Prints what a run ended with and returns its exit code. */
  report(run: RunReport): number;
  /** Prints what a person decided and what became of the plan; returns the exit code. */
  decided(report: DecisionReport): number;
  dbOption(): Option;
  jsonOption(): Option;
  verboseOption(): Option;
}

/** The context of one run of `leash` with `argv`. */
export function cliContext(argv: readonly string[], io: CliIo): CliContext {
  const json = argv.includes('--json');
  const verbose = argv.includes('--verbose');
  const print = (text: string) => void io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  const printJson = (value: unknown) => print(JSON.stringify(value, null, 2));
  const clock = io.clock ?? systemClock;
  const leash = invokedAs(io.env, io.bin, io.cwd);
  let dbArg = '';
  const style = (): CommandStyle => ({ leash, dbArg });

  async function withRunner<T>(
    db: string | undefined,
    body: (runner: PlanRunner, store: GuardrailStore) => Promise<T>,
    options: { create?: boolean } = {},
  ): Promise<T> {
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
      print(describeRun(run, style()));
    }
    return exitOf(run);
  }

  function decided({ approval, run, resumedBy }: DecisionReport): number {
    if (json) {
      const ran = run === null ? null : { plan_id: run.planId, ...runJson(run) };
      printJson({ approval, run: ran, resumed_by: resumedBy });
      return run === null ? EXIT.OK : exitOf(run);
    }
    const where = `(plan ${safe(approval.planId)}, decision ${safe(approval.decisionId)})`;
    if (approval.status === 'pending') {
      // A vote towards a quorum: the approval waits for more people.
      const votes = approval.votes?.length ?? 0;
      print(
        `vote recorded on ${safe(approval.id)} ${where}: ${votes} of ${approval.rule?.quorum ?? 1} approvals`,
      );
      return EXIT.OK;
    }
    const line = `${approval.status} ${safe(approval.id)} ${where} by ${safe(approval.decidedBy ?? '')}`;
    if (resumedBy === 'application') {
      // Not a plan the runner started: the application that asked goes on when it asks again.
      const next = approval.status === 'approved' ? 'resumes the run' : 'gets the denial when it asks again';
      print(`${line}; the application that asked ${next}`);
    } else {
      print(line);
      if (run !== null) print(describeRun(run, style()));
      else if (approval.status === 'approved')
        print(`resume the plan with: ${safe(leashCommand(style(), 'resume', [approval.planId]))}`);
    }
    return run === null ? EXIT.OK : exitOf(run);
  }

  return {
    io,
    json,
    verbose,
    clock,
    exit: EXIT.OK,
    leash,
    get style() {
      return style();
    },
    print,
    printJson,
    readPolicy: (file) =>
      file === undefined
        ? null
        : parsePolicy(readFileText(resolve(io.cwd, file), 'policy file'), {
            format: formatOf(file),
            source: file,
          }),
    withRunner,
    report,
    decided,
    dbOption: () =>
      new Option('--db <path|url>', 'SQLite file or postgres:// URL (default ./.leash/leash.db)'),
    jsonOption: () => new Option('--json', 'print JSON for scripts instead of tables'),
    verboseOption: () =>
      new Option('--verbose', 'print all each step printed (and an HTTP body), not only its last lines'),
  };
}
