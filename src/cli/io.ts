// Where `leash` reads and writes, and the exit codes it ends with.
import type { Clock } from '../clock.js';
import type { SignInOptions } from '../dashboard/signin.js';
import type { CommandStyle } from '../runner/commandLine.js';
import type { PlanRunner } from '../runner/runner.js';
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
  /**
   * The script the command was started as (process.argv[1]): the commands it prints start with `leash`
   * when that is the `leash` the PATH finds, else with `npx leash`.
   */
  readonly bin?: string;
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
  /** How the `leash` commands the pages show start, and their store. */
  readonly style: CommandStyle;
  /** How people sign in once the store has principals. */
  readonly signIn?: SignInOptions;
  /** The address people open the dashboard at, when not the one it listens on. */
  readonly publicUrl?: string;
}
