// The MCP conformance suite's command line, run on the Node 22 installed beside it, with what it found
// per scenario. Its results go to a temporary folder (its working folder too), read, then removed.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONFORMANCE_CLI, NODE22 } from './suite/install.js';

/** How a scenario went: passed, or the checks that failed and why. */
export interface Outcome {
  readonly passed: boolean;
  readonly problems: readonly string[];
}

/** The scenarios that passed. */
export function passedOf(outcomes: ReadonlyMap<string, Outcome>): string[] {
  return [...outcomes].filter(([, o]) => o.passed).map(([name]) => name);
}

/** Those of `scenarios` that did not pass in `outcomes` (or did not run), each with its problems. */
export function notPassedOf(
  scenarios: readonly string[],
  outcomes: ReadonlyMap<string, Outcome>,
): Record<string, readonly string[]> {
  const missed = scenarios.filter((name) => outcomes.get(name)?.passed !== true);
  return Object.fromEntries(missed.map((name) => [name, outcomes.get(name)?.problems ?? ['did not run']]));
}

interface Check {
  readonly name: string;
  readonly description: string;
  readonly status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  readonly errorMessage?: string;
}

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A run of the suite never takes this long: past it, it is stopped and fails. */
const RUN_LIMIT_MS = 120_000;

/** `conformance <args>` in `cwd`, its environment the tests' plus `env`. */
function conformance(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE22, [CONFORMANCE_CLI, ...args], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: RUN_LIMIT_MS,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs `work` with a new temporary folder, removed after. */
async function inTempDir<T>(work: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'leash-conformance-'));
  try {
    return await work(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The checks a scenario's result folder holds, or undefined when it did not get to write them. */
function checksIn(dir: string): Check[] | undefined {
  const file = join(dir, 'checks.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Check[]) : undefined;
}

function described(check: Check): string {
  return `${check.name} (${check.status}): ${check.errorMessage ?? check.description}`;
}

/** The suite's result folders: `<prefix><scenario>-<timestamp>`, the scenario's name possibly a path. */
const RESULT = /^(.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$/;

/** What went wrong in a run that its scenarios' checks do not tell: its exit and output. */
function runFailed(what: string, run: Run): Error {
  return new Error(`${what} (exit ${run.code}):\n${run.stdout}\n${run.stderr}`);
}

/**
 * Runs the suite's active server scenarios against the MCP server at `url`, one after the other as the
 * suite does. A scenario passes when none of its checks failed (the suite's own rule for servers).
 */
export function serverScenarios(url: string): Promise<Map<string, Outcome>> {
  return inTempDir(async (dir) => {
    const run = await conformance(['server', '--url', url, '--output-dir', dir], dir);
    const outcomes = new Map<string, Outcome>();
    for (const entry of readdirSync(dir)) {
      const scenario = RESULT.exec(entry)?.[1];
      if (scenario === undefined || !scenario.startsWith('server-')) continue;
      const checks = checksIn(join(dir, entry));
      // A scenario that threw leaves its folder without checks: the suite counts it failed.
      const problems = checks
        ? checks.filter((c) => c.status === 'FAILURE').map(described)
        : ['the scenario did not finish (the suite’s output has why)'];
      outcomes.set(scenario.slice('server-'.length), { passed: problems.length === 0, problems });
    }
    const allPassed = [...outcomes.values()].every((o) => o.passed);
    if (outcomes.size === 0 || run.code !== (allPassed ? 0 : 1)) {
      throw runFailed(`the suite's server run against ${url} did not report its scenarios`, run);
    }
    return outcomes;
  });
}

/** The names of the suite's client scenarios. */
export async function clientScenarioNames(): Promise<string[]> {
  const run = await inTempDir((dir) => conformance(['list', '--client'], dir));
  const names = [...run.stdout.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1] as string);
  if (run.code !== 0 || names.length === 0) throw runFailed('the suite listed no client scenario', run);
  return names;
}

/** Quoted for the shell the suite runs a client command with. */
function quoted(arg: string): string {
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/**
 * Runs the client scenario `scenario`: the suite starts its test server and runs `command` with the
 * server's URL appended (and the scenario's name in MCP_CONFORMANCE_SCENARIO), `env` added to its
 * environment. It passes when no check failed or warned, and the client exited 0 within `timeoutMs`.
 */
export function clientScenario(
  scenario: string,
  command: readonly string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<Outcome> {
  return inTempDir(async (dir) => {
    const run = await conformance(
      [
        'client',
        ...['--scenario', scenario, '--command', command.map(quoted).join(' ')],
        ...['--timeout', String(timeoutMs), '--output-dir', dir],
      ],
      dir,
      env,
    );
    const folder = readdirSync(dir, { recursive: true, encoding: 'utf8' }).find(
      (entry) => RESULT.exec(entry)?.[1] === scenario,
    );
    const checks = folder === undefined ? undefined : checksIn(join(dir, folder));
    if (checks === undefined || (run.code !== 0 && run.code !== 1)) {
      throw runFailed(`the suite's client scenario ${scenario} did not report its checks`, run);
    }
    const problems = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING').map(described);
    // The client's own failure (an exit or a timeout) is in the suite's output only.
    if (run.code !== 0 && problems.length === 0) {
      const stderr = readFileSync(join(dir, folder as string, 'stderr.txt'), 'utf8');
      problems.push(`the client failed: ${/CLIENT [^\n]*/.exec(run.stderr)?.[0] ?? ''}\n${stderr}`);
    }
    return { passed: run.code === 0, problems };
  });
}
