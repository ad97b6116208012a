import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, watch } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parsePlanFile, planFileGuardrails, planFileToPlan } from '../../src/runner/planFile.js';
import {
  builtinTools,
  echoTool,
  HttpRequestFailed,
  httpTool,
  MAX_HTTP_BODY_BYTES,
  MAX_SHELL_OUTPUT_BYTES,
  realSleep,
  ShellCommandFailed,
  ShellCommandTimedOut,
  shellTool,
  sleepTool,
  type BuiltinToolOptions,
  type HttpOutput,
  type ShellOutput,
} from '../../src/runner/tools/index.js';
import { GuardrailValidationError } from '../../src/errors.js';
import { isWellFormed } from '../../src/json.js';
import {
  AutonomyGuardrailService,
  isRetryable,
  NonRetryableError,
  PlanExecutor,
  type JsonValue,
  type Tool,
  type ToolContext,
} from '../../src/index.js';

const NODE = process.execPath;
const BASE = realpathSync(mkdtempSync(join(tmpdir(), 'leash-tools-')));
mkdirSync(join(BASE, 'sub'));

afterAll(() => rmSync(BASE, { recursive: true, force: true }));

/** A tool context for a direct call, with a signal that never aborts unless one is given. */
function ctx(signal: AbortSignal = new AbortController().signal): ToolContext {
  return Object.freeze({
    planId: 'plan',
    decisionId: 'd1',
    attempt: 1,
    signal,
    callTool: () => Promise.reject(new Error('no nested calls in these tests')),
  });
}

/** Runs `tool` with `input` and returns what it returned. */
async function run<O>(tool: Tool, input: JsonValue | undefined, context = ctx()): Promise<O> {
  return (await tool.run(input, context)) as O;
}

/** Runs `tool` with `input` and returns what it threw; fails the test if it returned. */
async function failure(tool: Tool, input: JsonValue | undefined, context = ctx()): Promise<Error> {
  try {
    await tool.run(input, context);
  } catch (e) {
    if (e instanceof Error) return e;
    throw e;
  }
  throw new Error('expected the tool to throw, it returned');
}

/** A shell tool whose commands see PATH, HOME and SECRET in the parent environment. */
function shell(settings: Parameters<typeof shellTool>[0] = undefined, killGraceMs?: number): Tool {
  return shellTool(settings, {
    baseDir: BASE,
    env: { PATH: '/bin', HOME: '/home/op', SECRET: 's3cret', LANG: 'C.UTF-8' },
    ...(killGraceMs === undefined ? {} : { killGraceMs }),
  });
}

/** argv running a Node script. */
function node(script: string, ...args: string[]): string[] {
  return [NODE, '-e', script, ...args];
}

/**
 * An abort controller that aborts with `reason` once a file named `name` appears in the base directory: a
 * child says it is running by creating it, and the abort follows that, not a guessed delay. A child that
 * must write something into the file first writes another and renames it, so the name appears whole.
 */
function abortWhenFileAppears(name: string, reason: unknown): { signal: AbortSignal; close(): void } {
  const controller = new AbortController();
  const watcher = watch(BASE, (_, changed) => {
    if (changed === name) controller.abort(reason);
  });
  return { signal: controller.signal, close: () => watcher.close() };
}

/**
 * True while process `pid` runs. A zombie has ended although `kill(pid, 0)` still finds it: an orphan
 * waits as one for ever where PID 1 does not reap (some containers), so Linux's /proc is asked too.
 */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw e;
  }
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    // No /proc (macOS, where orphans are reaped): kill() has answered.
    return true;
  }
  // "pid (name) state …": the name may hold spaces and parentheses, the state follows the last ")".
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
}

/**
 * Waits until process `pid` has ended, for at most `withinMs`; says whether it did. A process signalled
 * ends a moment later, and a SIGKILL comes after the grace period: how long is up to the system.
 */
async function ended(pid: number, withinMs = 2_000): Promise<boolean> {
  const deadline = performance.now() + withinMs;
  while (isRunning(pid)) {
    if (performance.now() > deadline) return false;
    await new Promise((resolveWait) => setTimeout(resolveWait, 20));
  }
  return true;
}

/** The pid a child wrote into `name`; the process is killed after the test should the tool have left it. */
function pidIn(name: string, cleanups: (() => void)[]): number {
  const pid = Number(readFileSync(join(BASE, name), 'utf8'));
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`${name} holds no pid`);
  cleanups.push(() => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already, as it should be.
    }
  });
  return pid;
}

/** A fetch that records its requests and answers with `respond`. */
function fakeFetch(respond: (request: Request) => Response | Promise<Response> = () => new Response('ok')) {
  const requests: Request[] = [];
  const fetch = async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(url, init);
    requests.push(request);
    return respond(request);
  };
  return { requests, fetch: fetch as typeof globalThis.fetch };
}

describe('shell tool', () => {
  it('returns the exit code, stdout, stderr and duration of a command', async () => {
    const out = await run<ShellOutput>(shell(), {
      argv: node('process.stdout.write("out"); process.stderr.write("err")'),
    });
    expect(out).toEqual({ exit_code: 0, stdout: 'out', stderr: 'err', duration_ms: expect.any(Number) });
  });

  it('passes arguments verbatim, without a shell to interpolate them', async () => {
    const args = ['$(echo hacked)', '`id`', '*', '$HOME', 'a b; rm -rf /', '"quoted"'];
    const out = await run<ShellOutput>(shell(), {
      argv: node('process.stdout.write(JSON.stringify(process.argv.slice(1)))', ...args),
    });
    expect(JSON.parse(out.stdout)).toEqual(args);
  });

  it('runs in the base directory by default', async () => {
    const out = await run<ShellOutput>(shell(), { argv: node('process.stdout.write(process.cwd())') });
    expect(out.stdout).toBe(BASE);
  });

  it('resolves cwd against the base directory', async () => {
    const out = await run<ShellOutput>(shell(), {
      argv: node('process.stdout.write(process.cwd())'),
      cwd: 'sub',
    });
    expect(out.stdout).toBe(join(BASE, 'sub'));
  });

  it('refuses, without retries, a cwd that does not exist', async () => {
    const e = await failure(shell(), { argv: node(''), cwd: 'missing' });
    expect(e).toBeInstanceOf(NonRetryableError);
    expect(e.message).toBe(`cwd ${JSON.stringify(join(BASE, 'missing'))} does not exist`);
  });

  it('passes only the allow-listed variables of the environment, and the decision’s own', async () => {
    const out = await run<ShellOutput>(shell({ env: ['PATH', 'HOME', 'UNSET'] }), {
      argv: node('process.stdout.write(JSON.stringify(process.env))'),
      env: { CI: '1' },
    });
    expect(JSON.parse(out.stdout)).toEqual({ PATH: '/bin', HOME: '/home/op', CI: '1' });
  });

  it('passes PATH, HOME, LANG, LC_ALL, TERM, TMPDIR and USER when the plan names none', async () => {
    const env = { PATH: '/bin', HOME: '/h', LANG: 'C', LC_ALL: 'C', TERM: 'xterm', TMPDIR: '/t', USER: 'op' };
    const tool = shellTool(undefined, { baseDir: BASE, env: { ...env, AWS_SECRET_ACCESS_KEY: 'x' } });
    const out = await run<ShellOutput>(tool, {
      argv: node('process.stdout.write(JSON.stringify(process.env))'),
    });
    expect(JSON.parse(out.stdout)).toEqual(env);
  });

  it('lets the decision’s env replace an allow-listed value', async () => {
    const out = await run<ShellOutput>(shell(), {
      argv: node('process.stdout.write(process.env.HOME)'),
      env: { HOME: '/elsewhere' },
    });
    expect(out.stdout).toBe('/elsewhere');
  });

  it('throws a retryable ShellCommandFailed with the exit code and the last lines of stderr', async () => {
    const e = await failure(shell(), {
      argv: node('console.error("first\\nsecond"); process.exit(3)'),
    });
    expect(e).toBeInstanceOf(ShellCommandFailed);
    expect(e).toMatchObject({ name: 'ShellCommandFailed', exitCode: 3, stderr: 'first\nsecond\n' });
    expect(e.message).toBe(`command ${JSON.stringify(NODE)} exited with code 3: first\nsecond`);
    expect(isRetryable(e)).toBe(true);
  });

  it('quotes only the last ten lines of stderr in the error', async () => {
    const e = await failure(shell(), {
      argv: node('for (let i = 1; i <= 20; i++) console.error("line " + i); process.exit(1)'),
    });
    expect(e.message.split('\n').slice(1)).toEqual(Array.from({ length: 9 }, (_, i) => `line ${i + 12}`));
  });

  it('cuts long stderr in the error without leaving half of a surrogate pair', async () => {
    // 2,002 characters: the last 2,000 start with the second half of the first pair.
    const e = await failure(shell(), {
      argv: node('process.stderr.write("a" + "\\u{1F600}".repeat(1000) + "b"); process.exit(1)'),
    });
    expect(e.message).toMatch(/: …\ufffd😀😀/u);
  });

  it('quotes the last lines of stdout when the command wrote nothing to stderr', async () => {
    const e = await failure(shell(), {
      argv: node('console.log("1 test failed"); process.exit(1)'),
    });
    expect(e.message).toBe(`command ${JSON.stringify(NODE)} exited with code 1: 1 test failed`);
  });

  it('throws a NonRetryableError for a command that does not exist', async () => {
    const e = await failure(shell(), { argv: ['leash-no-such-command'] });
    expect(e).toBeInstanceOf(NonRetryableError);
    expect(e.message).toBe(
      'command "leash-no-such-command" was not found (is it installed, and on the PATH passed to commands?)',
    );
  });

  it('stops a command that outlives its timeout and throws a NonRetryableError', async () => {
    const e = await failure(shell(), { argv: node('setInterval(() => {}, 1000)'), timeout_seconds: 0.3 });
    expect(e).toBeInstanceOf(NonRetryableError);
    expect(e.message).toBe(`command ${JSON.stringify(NODE)} timed out after 0.3 s and was stopped`);
  });

  it('applies the plan’s timeout when the decision gives none', async () => {
    const e = await failure(shell({ timeout_seconds: 0.3 }), { argv: node('setInterval(() => {}, 1000)') });
    expect(e.message).toMatch(/timed out after 0\.3 s/);
  });

  it('kills a command that ignores SIGTERM once the grace period is over', async () => {
    const marker = join(BASE, 'got-sigterm');
    // The marker proves the command was running, got SIGTERM and lived on: only SIGKILL can end it then.
    // One second is ample for Node to start; were it not, the marker would be missing and the test fail.
    const script = `process.on("SIGTERM", () => require("fs").writeFileSync(${JSON.stringify(marker)}, "")); setInterval(() => {}, 1000)`;
    const e = await failure(shell(undefined, 50), { argv: node(script), timeout_seconds: 1 });
    expect(existsSync(marker)).toBe(true);
    expect(e).toBeInstanceOf(ShellCommandTimedOut);
    expect(e).toMatchObject({ signal: 'SIGKILL' });
  });

  it('reports SIGTERM as what ended a command that exited when told to', async () => {
    const e = await failure(shell(), { argv: node('setInterval(() => {}, 1000)'), timeout_seconds: 0.3 });
    expect(e).toMatchObject({ name: 'ShellCommandTimedOut', signal: 'SIGTERM' });
  });

  describe('the processes a command started', () => {
    const cleanups: (() => void)[] = [];
    afterEach(() => {
      for (const cleanup of cleanups.splice(0)) cleanup();
    });

    it('are stopped with it when it times out', async () => {
      const argv = ['/bin/sh', '-c', 'sleep 30 & echo $! > timeout-child.pid; wait'];
      const e = await failure(shell(), { argv, timeout_seconds: 1 });
      const pid = pidIn('timeout-child.pid', cleanups);
      expect(e).toBeInstanceOf(ShellCommandTimedOut);
      expect(await ended(pid)).toBe(true);
    });

    it('are stopped with it when the run’s signal aborts', async () => {
      const reason = new Error('interrupted');
      const abort = abortWhenFileAppears('abort-child.pid', reason);
      let e: Error;
      try {
        const argv = [
          '/bin/sh',
          '-c',
          'sleep 30 & echo $! > abort-child.tmp && mv abort-child.tmp abort-child.pid; wait',
        ];
        e = await failure(shell(), { argv }, ctx(abort.signal));
      } finally {
        abort.close();
      }
      const pid = pidIn('abort-child.pid', cleanups);
      expect(e).toBe(reason);
      expect(await ended(pid)).toBe(true);
    });

    it('are killed after the grace period when they ignore SIGTERM, though the command has exited', async () => {
      const marker = join(BASE, 'grandchild-got-sigterm');
      // The command (Node's default SIGTERM handling) exits at once; the process it started lives on.
      const grandchild = [
        'const fs = require("fs");',
        `process.on("SIGTERM", () => fs.writeFileSync(${JSON.stringify(marker)}, ""));`,
        'fs.writeFileSync("stubborn.tmp", String(process.pid)); fs.renameSync("stubborn.tmp", "stubborn.pid");',
        'setInterval(() => {}, 1000);',
      ].join(' ');
      const command = `require("child_process").spawn(process.execPath, ["-e", ${JSON.stringify(grandchild)}], { stdio: "ignore" })`;
      const reason = new Error('interrupted');
      const abort = abortWhenFileAppears('stubborn.pid', reason);
      let e: Error;
      try {
        e = await failure(shell(undefined, 100), { argv: node(command) }, ctx(abort.signal));
      } finally {
        abort.close();
      }
      const pid = pidIn('stubborn.pid', cleanups);
      expect(e).toBe(reason);
      expect(await ended(pid)).toBe(true);
      expect(existsSync(marker)).toBe(true);
    });
  });

  it('stops the command when the run’s signal aborts, and throws the signal’s reason', async () => {
    const reason = new Error('wall clock ran out');
    const marker = 'started-then-aborted';
    const abort = abortWhenFileAppears(marker, reason);
    try {
      const script = `require('fs').writeFileSync(${JSON.stringify(marker)}, ''); setInterval(() => {}, 1000)`;
      expect(await failure(shell(), { argv: node(script) }, ctx(abort.signal))).toBe(reason);
    } finally {
      abort.close();
    }
  });

  it('starts nothing when the signal has already aborted', async () => {
    const controller = new AbortController();
    const reason = new Error('too late');
    controller.abort(reason);
    // A command that does not exist would fail with "not found" had it been started.
    expect(await failure(shell(), { argv: ['leash-no-such-command'] }, ctx(controller.signal))).toBe(reason);
  });

  it('starts nothing when the signal aborts while the directory is checked', async () => {
    const controller = new AbortController();
    const reason = new Error('too late');
    const running = failure(shell(), { argv: ['leash-no-such-command'] }, ctx(controller.signal));
    controller.abort(reason);
    expect(await running).toBe(reason);
  });

  it('keeps the last 64 KiB of output and says how much it dropped', async () => {
    const out = await run<ShellOutput>(shell(), {
      argv: node(`process.stdout.write("a".repeat(${MAX_SHELL_OUTPUT_BYTES}) + "tail")`),
    });
    expect(out.stdout).toBe(`[… 4 earlier bytes not kept …]\n${'a'.repeat(MAX_SHELL_OUTPUT_BYTES - 4)}tail`);
  });

  it('refuses bad input naming the field', async () => {
    const e = await failure(shell(), { argv: [] });
    expect(e).toBeInstanceOf(GuardrailValidationError);
    expect(e).toMatchObject({
      field: 'input.argv',
      message: 'input.argv must be a non-empty array of strings, got an array of 0',
    });
  });

  it('is confirmed under the operation shell', () => {
    expect(shell().operation ?? shell().name).toBe('shell');
  });
});

describe('http tool', () => {
  it('sends a GET and returns the status, headers and body', async () => {
    const { fetch, requests } = fakeFetch(
      () => new Response('{"ok":true}', { status: 200, headers: { 'content-type': 'application/json' } }),
    );
    const out = await run<HttpOutput>(httpTool(undefined, { fetch }), { url: 'https://example.com/status' });
    expect(out).toEqual({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: '{"ok":true}',
    });
    expect(requests.map((r) => [r.method, r.url])).toEqual([['GET', 'https://example.com/status']]);
  });

  it('sends a JSON body as JSON with content-type application/json', async () => {
    const { fetch, requests } = fakeFetch();
    await run(httpTool(undefined, { fetch }), {
      method: 'POST',
      url: 'https://example.com/releases',
      body: { version: '1.2.0' },
    });
    expect(requests[0]?.headers.get('content-type')).toBe('application/json');
    expect(await requests[0]?.text()).toBe('{"version":"1.2.0"}');
  });

  it('keeps the content-type a decision gives', async () => {
    const { fetch, requests } = fakeFetch();
    await run(httpTool(undefined, { fetch }), {
      method: 'PUT',
      url: 'https://example.com/x',
      headers: { 'Content-Type': 'application/vnd.api+json' },
      body: { a: 1 },
    });
    expect(requests[0]?.headers.get('content-type')).toBe('application/vnd.api+json');
  });

  it('sends a string body as it is', async () => {
    const { fetch, requests } = fakeFetch();
    await run(httpTool(undefined, { fetch }), {
      method: 'POST',
      url: 'https://example.com/x',
      body: 'a=1&b=2',
    });
    expect(await requests[0]?.text()).toBe('a=1&b=2');
  });

  it('costs the plan’s cost_per_call', () => {
    expect(httpTool({ cost_per_call: 0.01 }).cost).toBe(0.01);
  });

  it('costs nothing when the plan sets no cost_per_call', () => {
    expect(httpTool(undefined).cost).toBe(0);
  });

  it('throws a retryable HttpRequestFailed for a 5xx answer', async () => {
    const { fetch } = fakeFetch(
      () => new Response('down', { status: 503, statusText: 'Service Unavailable' }),
    );
    const e = await failure(httpTool(undefined, { fetch }), { url: 'https://example.com/x?token=secret' });
    expect(e).toBeInstanceOf(HttpRequestFailed);
    expect(e.message).toBe('GET https://example.com/x answered 503 Service Unavailable: down');
    expect(isRetryable(e)).toBe(true);
  });

  it('cuts a long answer’s excerpt without leaving half of a surrogate pair', async () => {
    const body = `${'x'.repeat(199)}😀yy`; // a cut at 200 UTF-16 units would fall inside the pair
    const { fetch } = fakeFetch(() => new Response(body, { status: 503 }));
    const e = await failure(httpTool(undefined, { fetch }), { url: 'https://example.com/x' });
    expect(e.message).toBe(`GET https://example.com/x answered 503: ${'x'.repeat(199)}😀…`);
  });

  it('throws a retryable HttpRequestFailed for 429 Too Many Requests', async () => {
    const { fetch } = fakeFetch(() => new Response('', { status: 429 }));
    const e = await failure(httpTool(undefined, { fetch }), { url: 'https://example.com/x' });
    expect(isRetryable(e)).toBe(true);
  });

  it('throws a NonRetryableError for another 4xx answer', async () => {
    const { fetch } = fakeFetch(
      () => new Response('no such release', { status: 404, statusText: 'Not Found' }),
    );
    const e = await failure(httpTool(undefined, { fetch }), { url: 'https://example.com/x' });
    expect(e).toBeInstanceOf(NonRetryableError);
    expect(e.message).toBe('GET https://example.com/x answered 404 Not Found: no such release');
  });

  it('quotes the start of an error page’s body on one line, at most 200 characters', async () => {
    const page = `<!DOCTYPE html>\n<html>\n  <head>\n    <title>404</title>\n${'  <p>gone</p>\n'.repeat(500)}</html>`;
    const { fetch } = fakeFetch(() => new Response(page, { status: 404, statusText: 'Not Found' }));
    const e = await failure(httpTool(undefined, { fetch }), { url: 'https://example.com/x' });
    const quoted = e.message.slice('GET https://example.com/x answered 404 Not Found: '.length);
    expect(quoted).toBe(`${page.replace(/\s+/g, ' ').slice(0, 200)}…`);
  });

  it('quotes an error body without cutting a character in two', async () => {
    const { fetch } = fakeFetch(() => new Response(`${'x'.repeat(199)}😀😀`, { status: 400 }));
    const e = await failure(httpTool(undefined, { fetch }), { url: 'https://example.com/x' });
    expect(e.message).toBe(`GET https://example.com/x answered 400: ${'x'.repeat(199)}😀…`);
  });

  it('quotes an error body cut inside a pair after its whitespace without a lone surrogate', async () => {
    const body = `x${' '.repeat(798)}😀 more`; // the 800th UTF-16 unit is the pair's first half
    const { fetch } = fakeFetch(() => new Response(body, { status: 404 }));
    const e = await failure(httpTool(undefined, { fetch }), { url: 'https://example.com/x' });
    expect(isWellFormed(e.message)).toBe(true);
  });

  it('asks fetch not to follow redirects', async () => {
    const { fetch, requests } = fakeFetch();
    await run(httpTool(undefined, { fetch }), { url: 'https://example.com/x' });
    expect(requests[0]?.redirect).toBe('manual');
  });

  it('refuses, without retries, a redirect, naming its status and where it leads without secrets', async () => {
    const { fetch } = fakeFetch(
      () =>
        new Response('moved', {
          status: 302,
          statusText: 'Found',
          headers: { location: 'http://user:pw@elsewhere.example/login?token=secret' },
        }),
    );
    const e = await failure(httpTool(undefined, { fetch }), { url: 'https://example.com/x?key=secret' });
    expect(e).toBeInstanceOf(NonRetryableError);
    expect(e.message).toBe(
      'GET https://example.com/x answered 302 Found, a redirect to http://elsewhere.example/login, which is not followed',
    );
  });

  it('resolves a relative Location against the request’s URL', async () => {
    const { fetch } = fakeFetch(() => new Response('', { status: 308, headers: { location: '/v2/x?a=1' } }));
    const e = await failure(httpTool(undefined, { fetch }), { url: 'https://example.com/x' });
    expect(e.message).toBe(
      'GET https://example.com/x answered 308, a redirect to https://example.com/v2/x, which is not followed',
    );
  });

  it('returns a 304 Not Modified answer, which leads nowhere', async () => {
    const { fetch } = fakeFetch(() => new Response(null, { status: 304 }));
    const out = await run<HttpOutput>(httpTool(undefined, { fetch }), {
      url: 'https://example.com/x',
      headers: { 'If-None-Match': '"v1"' },
    });
    expect(out.status).toBe(304);
  });

  it('throws a retryable HttpRequestFailed when there is no answer', async () => {
    const { fetch } = fakeFetch(() => {
      throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:443') });
    });
    const e = await failure(httpTool(undefined, { fetch }), { url: 'https://example.com/x' });
    expect(e).toBeInstanceOf(HttpRequestFailed);
    expect(e.message).toBe(
      'GET https://example.com/x failed: fetch failed (connect ECONNREFUSED 127.0.0.1:443)',
    );
    expect(isRetryable(e)).toBe(true);
  });

  it('keeps the first 1 MiB of a body and marks it truncated', async () => {
    const { fetch } = fakeFetch(() => new Response('x'.repeat(MAX_HTTP_BODY_BYTES + 10)));
    const out = await run<HttpOutput>(httpTool(undefined, { fetch }), { url: 'https://example.com/x' });
    expect(out.body).toHaveLength(MAX_HTTP_BODY_BYTES);
    expect(out.body_truncated).toBe(true);
  });

  it('aborts the request when the run’s signal aborts, and throws the signal’s reason', async () => {
    const controller = new AbortController();
    const reason = new Error('wall clock ran out');
    const { fetch } = fakeFetch(
      (request) =>
        new Promise((_, reject) => {
          request.signal.addEventListener('abort', () => reject(request.signal.reason));
          controller.abort(reason);
        }),
    );
    expect(
      await failure(httpTool(undefined, { fetch }), { url: 'https://example.com/x' }, ctx(controller.signal)),
    ).toBe(reason);
  });

  it('aborts a request that outlives its timeout with a retryable HttpRequestFailed', async () => {
    const { fetch } = fakeFetch(
      (request) =>
        new Promise((_, reject) =>
          request.signal.addEventListener('abort', () => reject(request.signal.reason)),
        ),
    );
    const e = await failure(httpTool({ timeout_seconds: 0.001 }, { fetch }), {
      url: 'https://example.com/x',
    });
    expect(e).toBeInstanceOf(HttpRequestFailed);
    expect(e.message).toBe('GET https://example.com/x timed out after 0.001 s');
  });

  it('refuses a URL that is not http or https, naming the field', async () => {
    const { fetch, requests } = fakeFetch();
    const e = await failure(httpTool(undefined, { fetch }), { url: 'file:///etc/passwd' });
    expect(e).toMatchObject({ name: 'GuardrailValidationError', field: 'input.url' });
    expect(requests).toEqual([]);
  });
});

describe('sleep tool', () => {
  it('waits the given seconds with the injected sleep and returns the milliseconds', async () => {
    const waits: number[] = [];
    const tool = sleepTool({ sleep: async (ms) => void waits.push(ms) });
    expect(await run(tool, { seconds: 1.5 })).toEqual({ slept_ms: 1500 });
    expect(waits).toEqual([1500]);
  });

  it('hands the run’s signal to the sleep', async () => {
    const signals: AbortSignal[] = [];
    const context = ctx();
    await run(sleepTool({ sleep: async (_, signal) => void signals.push(signal) }), { seconds: 0 }, context);
    expect(signals).toEqual([context.signal]);
  });

  it('refuses a wait of more than a day, naming the field', async () => {
    const e = await failure(sleepTool({ sleep: async () => undefined }), { seconds: 86_401 });
    expect(e).toMatchObject({
      field: 'input.seconds',
      message: 'input.seconds must be at most 86400, got 86401',
    });
  });
});

describe('realSleep', () => {
  it('rejects with the signal’s reason when the signal aborts', async () => {
    const controller = new AbortController();
    const reason = new Error('stop');
    const waiting = realSleep(60_000, controller.signal);
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
  });

  it('rejects at once when the signal has already aborted', async () => {
    const reason = new Error('stop');
    await expect(realSleep(60_000, AbortSignal.abort(reason))).rejects.toBe(reason);
  });
});

describe('echo tool', () => {
  it('returns the message of an object', async () => {
    expect(await run(echoTool(), { message: { version: '1.2.0' } })).toEqual({ version: '1.2.0' });
  });

  it('returns an input that is not an object', async () => {
    expect(await run(echoTool(), ['a', 1])).toEqual(['a', 1]);
  });

  it('returns nothing for no input', async () => {
    expect(await run(echoTool(), undefined)).toBeUndefined();
  });

  it('refuses an object with another key than message', async () => {
    const e = await failure(echoTool(), { mesage: 'hi' });
    expect(e).toMatchObject({ field: 'input.mesage' });
  });
});

describe('builtinTools', () => {
  it('returns shell, http, sleep and echo', () => {
    expect(builtinTools(undefined, { baseDir: BASE }).map((t) => t.name)).toEqual([
      'shell',
      'http',
      'sleep',
      'echo',
    ]);
  });

  it('configures the tools from the plan’s settings', () => {
    const http = builtinTools({ http: { cost_per_call: 0.25 } }, { baseDir: BASE }).find(
      (t) => t.name === 'http',
    );
    expect(http?.cost).toBe(0.25);
  });

  it('refuses options without a base directory', () => {
    expect(() => builtinTools(undefined, {} as BuiltinToolOptions)).toThrow(GuardrailValidationError);
  });
});

describe('a plan file run end to end', () => {
  const RELEASE = `version: 1
id: release
guardrails:
  max_steps: 10
  tool_budget: 1
  required_confirmations: [deploy]
  actor_limits: { max_retries_per_failure: 2 }
tools:
  shell: { env: [PATH] }
  http: { cost_per_call: 0.01 }
decisions:
  - id: build
    tool: shell
    input: { argv: [${JSON.stringify(NODE)}, -e, "console.log(process.env.CI + ' built in ' + process.cwd())"], cwd: sub, env: { CI: "1" } }
    cost: 0.5
  - id: wait
    tool: sleep
    input: { seconds: 2 }
  - id: check
    tool: http
    input: { url: "https://example.com/health" }
  - id: deploy
    tool: echo
    input: { message: deployed }
    operation: deploy
`;

  async function runRelease(text: string, executorSleep?: (ms: number) => Promise<void>) {
    const file = parsePlanFile(text, { source: 'release.plan.yaml' });
    const service = new AutonomyGuardrailService();
    await service.configureGuardrails('release', planFileGuardrails(file));
    const waits: number[] = [];
    const { fetch, requests } = fakeFetch(() => new Response('healthy'));
    const tools = builtinTools(file.tools, {
      baseDir: BASE,
      env: { PATH: process.env['PATH'] ?? '' },
      fetch,
      sleep: async (ms) => void waits.push(ms),
    });
    const executor = new PlanExecutor({ service, tools, ...(executorSleep ? { sleep: executorSleep } : {}) });
    const plan = planFileToPlan(file, file.id ?? 'release');
    const result = await executor.execute(plan);
    return { service, plan, result, waits, requests };
  }

  it('runs each step with its tool and pauses at the step that needs a confirmation', async () => {
    const { service, plan, result, waits, requests } = await runRelease(RELEASE);
    expect(result.status).toBe('awaiting_confirmation');
    expect(result.approval).toMatchObject({ decisionId: 'deploy', operation: 'deploy' });
    expect(result.completed.map((d) => [d.decisionId, d.cost])).toEqual([
      ['build', 0.5],
      ['wait', 0],
      ['check', 0.01],
    ]);
    expect((result.completed[0]?.output as ShellOutput).stdout).toBe(`1 built in ${join(BASE, 'sub')}\n`);
    expect(waits).toEqual([2000]);
    expect(requests.map((r) => r.url)).toEqual(['https://example.com/health']);
    expect(plan.phase).toBe('awaiting_confirmation');
    expect((await service.getGuardrails('release'))?.budgetSpent).toBe(0.51);
  });

  it('retries a failing command within the plan’s retry limit', async () => {
    const marker = join(BASE, 'flaky-ran-once');
    const flaky = `const fs = require('fs'); if (!fs.existsSync(${JSON.stringify(marker)})) { fs.writeFileSync(${JSON.stringify(marker)}, ''); console.error('flaky'); process.exit(1) } console.log('ok')`;
    const text = `version: 1\nguardrails: { actor_limits: { max_retries_per_failure: 1 } }\ndecisions:\n  - { id: flaky, tool: shell, input: { argv: [${JSON.stringify(NODE)}, -e, ${JSON.stringify(flaky)}] } }\n`;
    const backoffs: number[] = [];
    const { result } = await runRelease(text, async (ms) => void backoffs.push(ms));
    expect(result.status).toBe('completed');
    expect(result.completed[0]).toMatchObject({
      decisionId: 'flaky',
      attempts: 2,
      output: { stdout: 'ok\n' },
    });
    expect(backoffs).toHaveLength(1);
  });

  it('fails the run without retrying a command that does not exist', async () => {
    const text = `version: 1\nguardrails: { actor_limits: { max_retries_per_failure: 3 } }\ndecisions:\n  - { id: missing, tool: shell, input: { argv: [leash-no-such-command] } }\n`;
    const { result } = await runRelease(text, async () => undefined);
    expect(result.status).toBe('failed');
    expect(result.error).toBeInstanceOf(NonRetryableError);
  });
});
