// `leash mcp` as a client's editor runs it: a process spawned by the MCP SDK's own Client, in front of the
// real filesystem server from the registry, on a SQLite file that `leash approve` opens from another
// process.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { startEverythingHttp } from '../support/everything.js';
import { leashArgs } from '../support/leashBin.js';
import { alive } from '../support/processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FS_SERVER = join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');

const POLICY = `version: 1
guardrails:
  tool_budget: 4
tools:
  read_text_file:
    cost_per_call: 1
mcp:
  deny: ["directory_*"]
  confirm_destructive: true
`;

interface Session {
  readonly client: Client;
  readonly transport: StdioClientTransport;
  readonly dir: string;
  readonly files: string;
  readonly stderr: () => string;
}

const open: Session[] = [];

afterEach(async () => {
  for (const s of open.splice(0)) await s.client.close().catch(() => undefined);
});

function workspace(): { dir: string; files: string } {
  const dir = mkdtempSync(join(tmpdir(), 'leash-mcp-'));
  const files = join(dir, 'files');
  spawnSync('mkdir', [files]);
  writeFileSync(join(files, 'a.txt'), 'hello\n');
  writeFileSync(join(dir, 'fs.policy.yaml'), POLICY);
  return { dir, files };
}

/** The arguments of node that start `leash mcp` on the workspace's store. */
function mcpArgs(): string[] {
  return leashArgs('mcp', '--db', 'leash.db');
}

/** `leash mcp` spawned by an SDK client; `elicit` makes the client one that can ask its user. */
async function connect(
  where = workspace(),
  options: { elicit?: 'accept' | 'decline'; plan?: string } = {},
): Promise<Session> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      ...mcpArgs(),
      '--policy',
      'fs.policy.yaml',
      ...(options.plan ? ['--plan', options.plan] : []),
      '--',
      process.execPath,
      FS_SERVER,
      where.files,
    ],
    cwd: where.dir,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const client = new Client(
    { name: 'test-editor', version: '1.0.0' },
    options.elicit ? { capabilities: { elicitation: {} } } : {},
  );
  if (options.elicit) {
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: options.elicit as 'accept' }));
  }
  await client.connect(transport);
  const s = { client, transport, ...where, stderr: () => stderr };
  open.push(s);
  return s;
}

function leash(dir: string, ...args: string[]) {
  const r = spawnSync(process.execPath, leashArgs(...args, '--db', 'leash.db'), {
    cwd: dir,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

async function call(s: Session, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await s.client.callTool({ name, arguments: args })) as CallToolResult;
}

function textOf(r: CallToolResult): string {
  return r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

/** The pids of the processes whose parent is `pid`. */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .filter((e) => {
      try {
        const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function until(condition: () => boolean, ms = 5_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (condition()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return condition();
}

function planOf(s: Session): string {
  const m = /session plan "([^"]+)"/.exec(s.stderr());
  if (!m?.[1]) throw new Error(`no plan id in: ${s.stderr()}`);
  return m[1];
}

// Each test starts processes: on a loaded machine a start takes seconds.
describe('leash mcp in front of the filesystem server', { timeout: 60_000 }, () => {
  it('lists the upstream tools, schemas and annotations untouched, less the ones the policy hides', async () => {
    const s = await connect();
    const direct = new Client({ name: 'direct', version: '1' });
    await direct.connect(
      new StdioClientTransport({ command: process.execPath, args: [FS_SERVER, s.files], stderr: 'ignore' }),
    );
    const upstream = (await direct.listTools()).tools;
    await direct.close();
    const proxied = (await s.client.listTools()).tools;
    expect(upstream.some((t) => t.name === 'directory_tree')).toBe(true);
    expect(proxied).toEqual(upstream.filter((t) => !t.name.startsWith('directory_')));
  });

  it('refuses the fifth call that the budget of four cannot cover, and the session goes on', async () => {
    const s = await connect();
    const path = join(s.files, 'a.txt');
    for (let i = 0; i < 4; i++) expect((await call(s, 'read_text_file', { path })).isError).toBeFalsy();
    const fifth = await call(s, 'read_text_file', { path });
    expect(fifth.isError).toBe(true);
    expect(textOf(fifth)).toMatch(/budget_blocked.*raise guardrails\.tool_budget/s);
    expect((await call(s, 'list_allowed_directories', {})).isError).toBeFalsy();
  });

  it('refuses a hidden tool without reaching the upstream, and records the refusal', async () => {
    const s = await connect();
    const r = await call(s, 'directory_tree', { path: s.files });
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain('mcp.deny');
    const audit = leash(s.dir, 'audit', planOf(s), '--format', 'jsonl');
    const last = JSON.parse(audit.stdout.trim().split('\n').at(-1) as string);
    expect(last).toMatchObject({
      event_type: 'tool_calls_blocked',
      details: { tool: 'directory_tree', limit: 0 },
    });
  });

  it('runs a destructive call once after `leash approve` from another process, and asks again after', async () => {
    const s = await connect();
    const target = join(s.files, 'b.txt');
    const args = { path: target, content: 'one' };
    const first = await call(s, 'write_file', args);
    expect(first.isError).toBe(true);
    const id = /approval ([0-9a-f-]{36})/.exec(textOf(first))?.[1] as string;
    expect(textOf(first)).toContain(`leash approve ${id} --by "$USER" --reason checked --db`);
    expect(existsSync(target)).toBe(false);

    expect(leash(s.dir, 'approve', id, '--by', 'alice', '--reason', 'ok').code).toBe(0);
    expect((await call(s, 'write_file', args)).isError).toBeFalsy();
    expect(readFileSync(target, 'utf8')).toBe('one');

    writeFileSync(target, 'changed meanwhile');
    const again = await call(s, 'write_file', args);
    expect(again.isError).toBe(true);
    expect(textOf(again)).not.toContain(id);
    expect(readFileSync(target, 'utf8')).toBe('changed meanwhile');
  });

  it('asks again for the same tool with other arguments', async () => {
    const s = await connect();
    const first = await call(s, 'write_file', { path: join(s.files, 'b.txt'), content: 'one' });
    const id = /approval ([0-9a-f-]{36})/.exec(textOf(first))?.[1] as string;
    expect(leash(s.dir, 'approve', id, '--by', 'alice').code).toBe(0);
    const other = await call(s, 'write_file', { path: join(s.files, 'b.txt'), content: 'two' });
    expect(other.isError).toBe(true);
    expect(textOf(other)).toMatch(/approval [0-9a-f-]{36}/);
    expect(textOf(other)).not.toContain(id);
    expect(existsSync(join(s.files, 'b.txt'))).toBe(false);
  });

  it('asks a client that can ask its user, and records the answer under the client’s name', async () => {
    const s = await connect(undefined, { elicit: 'accept' });
    const target = join(s.files, 'c.txt');
    expect((await call(s, 'write_file', { path: target, content: 'yes' })).isError).toBeFalsy();
    expect(readFileSync(target, 'utf8')).toBe('yes');
    const approvals = JSON.parse(leash(s.dir, 'approvals', '--json').stdout) as {
      status: string;
      decidedBy: string;
    }[];
    expect(approvals).toMatchObject([{ status: 'used', decidedBy: 'test-editor' }]);
  });

  it('once the store has users, asks the client’s user only where the policy’s rule allows it', async () => {
    const where = workspace();
    expect(leash(where.dir, 'users', 'add', 'ann', '--name', 'Ann').code).toBe(0);
    const rule = '  write_file: { approvers: ["*"], elicitation: allow }';
    writeFileSync(join(where.dir, 'fs.policy.yaml'), `${POLICY}approvals:\n${rule}\n`);
    const s = await connect(where, { elicit: 'accept' });
    const target = join(s.files, 'e.txt');

    const asked = await call(s, 'write_file', { path: target, content: 'yes' });
    const waiting = await call(s, 'edit_file', { path: target, edits: [{ oldText: 'yes', newText: 'no' }] });

    expect(asked.isError).toBeFalsy();
    expect(readFileSync(target, 'utf8')).toBe('yes');
    const id = /approval ([0-9a-f-]{36})/.exec(textOf(waiting))?.[1] as string;
    expect(textOf(waiting)).toContain(`leash approve ${id} --token "$LEASH_TOKEN" --reason checked --db`);
  });

  it('runs a waiting call once a user approved it with a personal token, as the result says', async () => {
    const where = workspace();
    expect(leash(where.dir, 'users', 'add', 'ann', '--name', 'Ann').code).toBe(0);
    const { token } = JSON.parse(leash(where.dir, 'tokens', 'create', 'ann', '--json').stdout) as {
      token: string;
    };
    const s = await connect(where, { elicit: 'accept' });
    const args = { path: join(s.files, 'f.txt'), content: 'ok' };
    const first = await call(s, 'write_file', args);
    const id = /approval ([0-9a-f-]{36})/.exec(textOf(first))?.[1] as string;

    expect(leash(s.dir, 'approve', id, '--token', token, '--reason', 'checked').code).toBe(0);
    expect((await call(s, 'write_file', args)).isError).toBeFalsy();
    expect(readFileSync(args.path, 'utf8')).toBe('ok');
  });

  it('does not run a call the client’s user declined', async () => {
    const s = await connect(undefined, { elicit: 'decline' });
    const target = join(s.files, 'd.txt');
    const r = await call(s, 'write_file', { path: target, content: 'no' });
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain('declined in test-editor');
    expect(existsSync(target)).toBe(false);
  });

  it('answers with an error result within seconds once the upstream died, and the log verifies', async () => {
    const s = await connect();
    const proxy = s.transport.pid as number;
    const [upstream] = childrenOf(proxy);
    expect(upstream).toBeDefined();
    process.kill(upstream as number, 'SIGKILL');
    expect(await until(() => s.stderr().includes('is gone'))).toBe(true);
    const started = Date.now();
    const r = await call(s, 'read_text_file', { path: join(s.files, 'a.txt') });
    expect(r.isError).toBe(true);
    expect(textOf(r)).toMatch(/the upstream server is gone/);
    expect(Date.now() - started).toBeLessThan(5_000);
    await s.client.close();
    const verify = leash(s.dir, 'verify', planOf(s));
    expect(verify.stdout).toContain('ok');
    expect(verify.code).toBe(0);
  });

  it('stops its upstream and exits when the client closes its input', async () => {
    const s = await connect();
    const proxy = s.transport.pid as number;
    const [upstream] = childrenOf(proxy);
    await s.client.close();
    expect(await until(() => !alive(proxy) && !alive(upstream as number))).toBe(true);
  });

  it('stops its upstream and exits on SIGTERM', async () => {
    const s = await connect();
    const proxy = s.transport.pid as number;
    const [upstream] = childrenOf(proxy);
    process.kill(proxy, 'SIGTERM');
    expect(await until(() => !alive(proxy) && !alive(upstream as number))).toBe(true);
  });

  it('names each session a new plan of the policy, unless --plan names one', async () => {
    const where = workspace();
    const a = await connect(where);
    await a.client.close();
    const b = await connect(where);
    const c = await connect(where, { plan: 'my-editor' });
    expect([planOf(a), planOf(b), planOf(c)]).toEqual(['mcp-fs.policy-1', 'mcp-fs.policy-2', 'my-editor']);
  });

  it('refuses to start without an upstream, naming both ways to give one', () => {
    const r = leash(workspace().dir, 'mcp');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('as a command after -- or with --upstream-url, one of the two');
  });

  it('guards a server it reaches over Streamable HTTP with --upstream-url', async () => {
    const server = await startEverythingHttp();
    try {
      const { dir } = workspace();
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [...mcpArgs(), '--upstream-url', server.url],
        cwd: dir,
        stderr: 'ignore',
      });
      const client = new Client({ name: 'test-editor', version: '1.0.0' });
      await client.connect(transport);
      const r = (await client.callTool({ name: 'echo', arguments: { message: 'hi' } })) as CallToolResult;
      await client.close();
      expect(textOf(r)).toContain('hi');
      const audit = leash(dir, 'audit', 'mcp-session-1', '--format', 'jsonl');
      expect(audit.stdout).toContain('"tool":"echo"');
    } finally {
      await server.stop();
    }
  });
});
