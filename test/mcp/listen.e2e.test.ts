// `leash mcp --listen` as a person starts it: its own process, the token from LEASH_TOKEN, clients over
// HTTP, and SIGTERM to stop it; and the flags it refuses.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listenAddress } from '../../src/cli/commands/mcp.js';
import { mcpRefusedIn } from '../support/cli.js';
import { alive } from '../support/processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'src/cli/bin.ts');
const TSX = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
const UPSTREAM = join(ROOT, 'test/support/mcp-upstream.mjs');
const TOKEN = 'a-token-of-thirty-two-characters-at-least';

let dir: string;
let pids: string;
let running: ChildProcessWithoutNullStreams | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leash-listen-e2e-'));
  pids = join(dir, 'pids');
  mkdirSync(pids);
});

afterEach(async () => {
  // Stopped as a person would, so that no upstream outlives it.
  if (running !== undefined && running.exitCode === null) {
    running.kill('SIGTERM');
    await exited(running);
  }
  running = undefined;
  rmSync(dir, { recursive: true, force: true });
});

/** `leash mcp --listen 0` started in `dir` with LEASH_TOKEN; resolves with the two lines it printed. */
async function listen(): Promise<{ child: ChildProcessWithoutNullStreams; lines: string[] }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      TSX,
      BIN,
      'mcp',
      '--listen',
      '0',
      '--db',
      'leash.db',
      '--',
      process.execPath,
      UPSTREAM,
      pids,
    ],
    { cwd: dir, env: { ...process.env, LEASH_TOKEN: TOKEN } },
  );
  running = child;
  let stderr = '';
  const lines = await new Promise<string[]>((resolve, reject) => {
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      const printed = stderr.split('\n');
      if (printed.length > 2) resolve(printed.slice(0, 2));
    });
    child.once('exit', (code) => reject(new Error(`leash exited with ${code}: ${stderr}`)));
  });
  return { child, lines };
}

function exited(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** A client of the endpoint the first line names, with the token; closed by its caller. */
async function connect(firstLine: string): Promise<Client> {
  const url = /listening on (\S+)$/.exec(firstLine)?.[1] as string;
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
    }),
  );
  return client;
}

// Each test starts leash and an upstream as processes: on a loaded machine a start takes seconds.
describe('leash mcp --listen', { timeout: 60_000 }, () => {
  it('prints where it listens, then the header that carries the token LEASH_TOKEN gives', async () => {
    const { lines } = await listen();
    expect(lines[0]).toMatch(/^leash mcp: listening on http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(lines[1]).toContain(`"Authorization: Bearer ${TOKEN}"`);
  });

  it('stops the upstream of every session and exits 0 on SIGTERM', async () => {
    const { child, lines } = await listen();
    const client = await connect(lines[0] as string);
    await client.callTool({ name: 'echo', arguments: { message: 'hi' } });
    child.kill('SIGTERM');
    expect(await exited(child)).toBe(0);
    expect(readdirSync(pids).map(Number).filter(alive)).toEqual([]);
    await client.close();
  });

  it('audits the calls of each session in its plan, whose log leash verify finds intact', async () => {
    const { child, lines } = await listen();
    const client = await connect(lines[0] as string);
    await client.callTool({ name: 'echo', arguments: { message: 'hi' } });
    child.kill('SIGTERM');
    await exited(child);
    await client.close();
    const leash = (...args: string[]) =>
      spawnSync(process.execPath, ['--import', TSX, BIN, ...args, '--db', 'leash.db'], {
        cwd: dir,
        encoding: 'utf8',
      });
    expect(leash('audit', 'mcp-session-1', '--format', 'jsonl').stdout).toContain('"tool":"echo"');
    const verify = leash('verify', 'mcp-session-1');
    expect([verify.status, verify.stdout]).toEqual([0, expect.stringContaining('ok')]);
  });
});

describe('leash mcp --listen refuses', () => {
  it('--plan, as each session is a plan of its own', async () => {
    const r = await mcpRefusedIn(dir, '--listen', '0', '--plan', 'mine', '--', 'server');
    expect([r.code, r.err]).toEqual([2, expect.stringContaining('--plan cannot be given with --listen')]);
  });

  it('a --max-sessions that is not a positive integer, naming it', async () => {
    const r = await mcpRefusedIn(dir, '--listen', '0', '--max-sessions', '0', '--', 'server');
    expect([r.code, r.err]).toEqual([
      2,
      expect.stringContaining('--max-sessions must be an integer >= 1, got "0"'),
    ]);
  });

  it('--max-sessions without --listen', async () => {
    const r = await mcpRefusedIn(dir, '--max-sessions', '3', '--', 'server');
    expect([r.code, r.err]).toEqual([2, expect.stringContaining('--max-sessions is for --listen only')]);
  });

  it('an address that is no [host:]port, naming it', async () => {
    const r = await mcpRefusedIn(dir, '--listen', 'localhost', '--', 'server');
    expect([r.code, r.err]).toEqual([2, expect.stringContaining('--listen must be [host:]port')]);
  });
});

describe('the address --listen names', () => {
  it('is 127.0.0.1 when it gives a port alone', () => {
    expect(listenAddress('4590')).toEqual({ host: '127.0.0.1', port: 4590 });
  });

  it('is the host it gives, an IPv6 one out of its brackets', () => {
    expect([listenAddress('10.0.0.5:4590'), listenAddress('[::1]:0')]).toEqual([
      { host: '10.0.0.5', port: 4590 },
      { host: '::1', port: 0 },
    ]);
  });

  it('has a port of at most 65535', () => {
    expect(() => listenAddress('65536')).toThrow('--listen must be [host:]port');
  });
});
