import { spawn, type ChildProcess } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { errorText } from '../../errors.js';
import { NonRetryableError, type Tool, type ToolContext } from '../../executor/tools.js';
import { toWellFormed, type JsonValue } from '../../json.js';
import { validateToolInput } from '../planFile.js';
import { DEFAULT_SHELL_ENV, DEFAULT_SHELL_TIMEOUT_SECONDS, type ShellSettings } from '../planSchema.js';

/** Bytes of stdout, and of stderr, a shell step keeps: the last ones, where errors and summaries are. */
export const MAX_SHELL_OUTPUT_BYTES = 64 * 1024;
/** How long a command stopped with SIGTERM, and the processes it started, have to exit before SIGKILL. */
export const SHELL_KILL_GRACE_MS = 2_000;
/**
 * How long after a command exits its output may still arrive. A process it started in the background can
 * hold the pipes open for ever; the step does not wait for it.
 */
const DRAIN_MS = 1_000;
/** Lines of stderr (of stdout, when stderr is empty) quoted in the error of a failed command. */
const QUOTED_LINES = 10;
const QUOTED_CHARS = 2_000;

/** Options of {@link shellTool}. */
export interface ShellToolOptions {
  /** The folder relative `cwd`s are resolved against: the plan file's. */
  readonly baseDir: string;
  /** The environment the allow-listed variables are copied from; default `process.env`. */
  readonly env?: NodeJS.ProcessEnv;
  /** Between SIGTERM and SIGKILL; default {@link SHELL_KILL_GRACE_MS}. */
  readonly killGraceMs?: number;
}

/** What a shell step returns. */
export interface ShellOutput {
  readonly exit_code: number;
  /** The last {@link MAX_SHELL_OUTPUT_BYTES} bytes, after a note of how many were dropped before them. */
  readonly stdout: string;
  readonly stderr: string;
  readonly duration_ms: number;
}

/**
 * A command exited with a code other than 0 (or was killed by a signal leash did not send). Retryable: the
 * guardrails' retry limit decides whether it runs again.
 */
export class ShellCommandFailed extends Error {
  /** The exit code, or null when a signal ended the command. */
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly durationMs: number;

  constructor(
    message: string,
    details: {
      exitCode: number | null;
      signal: NodeJS.Signals | null;
      stdout: string;
      stderr: string;
      durationMs: number;
    },
  ) {
    super(message);
    this.name = 'ShellCommandFailed';
    this.exitCode = details.exitCode;
    this.signal = details.signal;
    this.stdout = details.stdout;
    this.stderr = details.stderr;
    this.durationMs = details.durationMs;
  }
}

/** A command outlived its timeout and was stopped. Not retryable: it would most likely time out again. */
export class ShellCommandTimedOut extends NonRetryableError {
  /** What ended the command: SIGTERM, or SIGKILL when it ignored SIGTERM for the grace period. */
  readonly signal: NodeJS.Signals | null;

  constructor(message: string, signal: NodeJS.Signals | null) {
    super(message);
    this.name = 'ShellCommandTimedOut';
    this.signal = signal;
  }
}

/**
 * The `shell` tool: runs `argv[0]` with the rest of `argv` as its arguments, never through a shell, so
 * nothing in an argument is interpolated. The command sees only the allow-listed environment variables
 * (`tools.shell.env`) and the decision's own `env`, runs in `cwd` resolved against `baseDir`, and is stopped
 * (SIGTERM, then SIGKILL) when its timeout passes or the run's signal aborts. It runs in a process group of
 * its own, and stopping it signals the whole group: what it started in the background is stopped with it.
 * The terminal's Ctrl-C does not reach that group; the run's signal does.
 *
 * A non-zero exit throws {@link ShellCommandFailed} (retryable); a command that cannot be started throws a
 * NonRetryableError, one that timed out a {@link ShellCommandTimedOut} (not retryable either).
 */
export function shellTool(settings: ShellSettings | undefined, options: ShellToolOptions): Tool {
  const baseDir = resolve(options.baseDir);
  const allowed = settings?.env ?? DEFAULT_SHELL_ENV;
  const defaultTimeout = settings?.timeout_seconds ?? DEFAULT_SHELL_TIMEOUT_SECONDS;
  const graceMs = options.killGraceMs ?? SHELL_KILL_GRACE_MS;
  return Object.freeze({
    name: 'shell',
    description: 'Runs a program with arguments (no shell), with an allow-listed environment and a timeout.',
    async run(raw: JsonValue | undefined, ctx: ToolContext): Promise<ShellOutput> {
      const input = validateToolInput('shell', raw);
      ctx.signal.throwIfAborted();
      const cwd = resolve(baseDir, input.cwd ?? '.');
      await checkDirectory(cwd);
      // Read when the step runs, not when the tool is made: a resumed plan gets today's PATH.
      const parent = options.env ?? process.env;
      const env = Object.fromEntries([
        ...allowed.flatMap((name) => {
          const value = parent[name];
          return value === undefined ? [] : [[name, value] as const];
        }),
        ...Object.entries(input.env ?? {}),
      ]);
      const timeoutMs = Math.round((input.timeout_seconds ?? defaultTimeout) * 1000);
      return runCommand(input.argv, { cwd, env, timeoutMs, graceMs, signal: ctx.signal });
    },
  });
}

async function checkDirectory(cwd: string): Promise<void> {
  let isDirectory: boolean;
  try {
    isDirectory = (await stat(cwd)).isDirectory();
  } catch (e) {
    const reason =
      (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : `cannot be used: ${errorText(e)}`;
    throw new NonRetryableError(`cwd ${JSON.stringify(cwd)} ${reason}`, { cause: e });
  }
  if (!isDirectory) throw new NonRetryableError(`cwd ${JSON.stringify(cwd)} is not a directory`);
}

interface RunOptions {
  readonly cwd: string;
  readonly env: Record<string, string>;
  readonly timeoutMs: number;
  readonly graceMs: number;
  readonly signal: AbortSignal;
}

function runCommand(argv: readonly string[], o: RunOptions): Promise<ShellOutput> {
  const program = argv[0] as string;
  const name = JSON.stringify(program);
  const started = performance.now();
  return new Promise<ShellOutput>((resolvePromise, rejectPromise) => {
    // The signal may have aborted while the directory was checked: an abort event will not come again.
    if (o.signal.aborted) {
      rejectPromise(o.signal.reason);
      return;
    }
    let child: ChildProcess;
    try {
      child = spawn(program, argv.slice(1), {
        cwd: o.cwd,
        env: o.env,
        shell: false,
        // A group of its own, so that a stop reaches what the command started too (`sh -c "a; b"`, a
        // build's workers): signalling the command alone orphans them, still running.
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        windowsHide: true,
      });
    } catch (e) {
      rejectPromise(
        new NonRetryableError(`command ${name} cannot be started: ${errorText(e)}`, { cause: e }),
      );
      return;
    }
    const stdout = new Tail(MAX_SHELL_OUTPUT_BYTES);
    const stderr = new Tail(MAX_SHELL_OUTPUT_BYTES);
    child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));

    let settled = false;
    let stopped: 'timeout' | 'abort' | null = null;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    let drainTimer: ReturnType<typeof setTimeout> | undefined;

    const signalGroup = (signal: NodeJS.Signals): void => {
      // The group's id is the command's pid, kept while any process of the group lives, even after the
      // command itself exited: the number cannot name another group before the last of them has gone.
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, signal);
          return;
        } catch {
          // No process groups (Windows), or none of the group is left: the command alone, if it runs.
        }
      }
      child.kill(signal);
    };
    const stop = (why: 'timeout' | 'abort'): void => {
      if (stopped !== null || exit !== null) return;
      stopped = why;
      signalGroup('SIGTERM');
      // Not cleared when the command exits, nor when the step settles: a process it started may ignore
      // SIGTERM and outlive it, and only this SIGKILL ends that one. (A command that exits on its own is
      // never stopped, so its background processes are left alone.)
      setTimeout(() => signalGroup('SIGKILL'), o.graceMs);
    };
    const timeoutTimer = setTimeout(() => stop('timeout'), o.timeoutMs);
    const onAbort = (): void => stop('abort');
    o.signal.addEventListener('abort', onAbort, { once: true });

    const settle = (outcome: { error: unknown } | { value: ShellOutput }): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timeoutTimer);
      clearTimeout(drainTimer);
      o.signal.removeEventListener('abort', onAbort);
      if ('error' in outcome) rejectPromise(outcome.error);
      else resolvePromise(outcome.value);
    };

    const finish = (): void => {
      const durationMs = Math.round(performance.now() - started);
      const code = exit?.code ?? null;
      const signal = exit?.signal ?? null;
      const out = { stdout: stdout.text(), stderr: stderr.text() };
      if (stopped === 'abort') {
        settle({ error: o.signal.reason ?? new Error(`command ${name} was aborted`) });
      } else if (stopped === 'timeout') {
        const seconds = o.timeoutMs / 1000;
        const error = new ShellCommandTimedOut(
          `command ${name} timed out after ${seconds} s and was stopped${quote(out)}`,
          signal,
        );
        settle({ error });
      } else if (code === 0) {
        settle({ value: Object.freeze({ exit_code: 0, ...out, duration_ms: durationMs }) });
      } else {
        const how = code === null ? `was killed by ${signal ?? 'a signal'}` : `exited with code ${code}`;
        const message = `command ${name} ${how}${quote(out)}`;
        settle({ error: new ShellCommandFailed(message, { exitCode: code, signal, ...out, durationMs }) });
      }
    };

    child.on('error', (e: NodeJS.ErrnoException) => {
      // After the process started, an error can only come from kill(): the exit still settles the step.
      if (child.pid !== undefined) return;
      settle({ error: spawnError(name, e) });
    });
    child.on('exit', (code, signal) => {
      if (settled) return;
      exit = { code, signal };
      drainTimer = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish();
      }, DRAIN_MS);
    });
    child.on('close', () => {
      if (exit !== null) finish();
    });
  });
}

function spawnError(name: string, e: NodeJS.ErrnoException): NonRetryableError {
  if (e.code === 'ENOENT') {
    return new NonRetryableError(
      `command ${name} was not found (is it installed, and on the PATH passed to commands?)`,
      { cause: e },
    );
  }
  if (e.code === 'EACCES') {
    return new NonRetryableError(`command ${name} cannot be run: permission denied`, { cause: e });
  }
  return new NonRetryableError(`command ${name} cannot be started: ${e.message}`, { cause: e });
}

/**
 * `: <the last lines of stderr>`, or of stdout when stderr is empty (test runners report failures
 * there); nothing when both are.
 */
function quote(out: { stdout: string; stderr: string }): string {
  const printed = out.stderr.trim() === '' ? out.stdout : out.stderr;
  const lines = printed.split(/\r?\n/).filter((line) => line.trim() !== '');
  if (lines.length === 0) return '';
  let text = lines.slice(-QUOTED_LINES).join('\n');
  // The cut may fall inside a surrogate pair, whose lone half no store or audit log can keep.
  if (text.length > QUOTED_CHARS) text = `…${toWellFormed(text.slice(-QUOTED_CHARS))}`;
  return `: ${text}`;
}

/** Keeps the last `limit` bytes of a stream, and counts those it dropped. */
class Tail {
  #chunks: Buffer[] = [];
  #size = 0;
  #dropped = 0;

  constructor(readonly limit: number) {}

  push(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    if (this.#size <= this.limit) return;
    const all = Buffer.concat(this.#chunks);
    this.#dropped += all.length - this.limit;
    this.#chunks = [all.subarray(all.length - this.limit)];
    this.#size = this.limit;
  }

  text(): string {
    let bytes = Buffer.concat(this.#chunks);
    if (this.#dropped === 0) return bytes.toString('utf8');
    // The cut may fall inside a character: start at the next whole one.
    let start = 0;
    while (start < 3 && start < bytes.length && ((bytes[start] as number) & 0xc0) === 0x80) start++;
    bytes = bytes.subarray(start);
    return `[… ${this.#dropped + start} earlier bytes not kept …]\n${bytes.toString('utf8')}`;
  }
}
