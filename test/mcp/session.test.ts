// A `leash mcp` session in this process, in front of the filesystem server, on a SQLite file that
// `leash status` then reads: what the session records of itself, and what the command shows of it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { leashIn } from '../support/cli.js';
import { runMcpSession, type McpSessionOptions } from '../../src/mcp/session.js';
import { AutonomyGuardrailService } from '../../src/service/AutonomyGuardrailService.js';
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FS_SERVER = join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const T0 = Date.parse('2026-11-30T10:00:00.000Z');
const PLAN = 'my-editor';

let dir: string;
let db: string;
let clock: ManualClock;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'leash-session-'));
  mkdirSync(join(dir, 'files'));
  writeFileSync(join(dir, 'files', 'a.txt'), 'hello\n');
  db = join(dir, 'leash.db');
  clock = new ManualClock(T0);
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/**
 * A session that reads a file at +1 s and +3 s and ends at +5 s, when its client goes away; resolves once
 * it is over, with the store closed.
 */
async function session(): Promise<void> {
  const store = new SqliteStore({ path: db });
  await store.migrate();
  const service = new AutonomyGuardrailService({ store, clock });
  // --plan names a plan configured before: one nobody configured is refused.
  await service.configureGuardrails(PLAN, {});
  const [client, server] = InMemoryTransport.createLinkedPair();
  const over = runMcpSession({
    service,
    policy: null,
    planId: PLAN,
    policyName: 'session',
    upstream: { command: process.execPath, args: [FS_SERVER, join(dir, 'files')] },
    clientTransport: server,
  });
  const editor = new Client({ name: 'editor', version: '1' });
  await editor.connect(client);
  for (const at of [1_000, 2_000]) {
    clock.advance(at);
    await editor.callTool({ name: 'read_text_file', arguments: { path: join(dir, 'files', 'a.txt') } });
  }
  clock.advance(2_000);
  await editor.close();
  await over;
  await store.close();
}

/** `leash status` in this process, an hour after the session ended. */
async function status(...args: string[]): Promise<string> {
  clock.advance(3_600_000);
  const { code, out } = await leashIn(dir, ['status', ...args, '--db', db], { clock });
  expect(code).toBe(0);
  return out;
}

describe('a leash mcp session that ended', { timeout: 60_000 }, () => {
  it('shows in leash status as completed, with its steps and its wall clock stopped at its end', async () => {
    await session();
    const s = JSON.parse(await status(PLAN, '--json')) as Record<string, unknown>;
    expect([
      s['phase'],
      (s['guardrails'] as { step_count: number }).step_count,
      s['elapsed_seconds'],
    ]).toEqual(['completed', 2, 4]);
  });

  it('says in leash status when it ended and after how many steps', async () => {
    await session();
    expect(await status(PLAN)).toMatch(
      /^plan my-editor: completed\n {2}MCP session, started 2026-11-30T10:00:00.000Z, ended 2026-11-30T10:00:05.000Z after 2 steps\n {2}steps 2 \(no limit\) · budget 0.00 \(no limit\) · elapsed 4s \(no limit\)/,
    );
  });

  it('stops its elapsed time in the table of every plan', async () => {
    await session();
    expect((await status()).split('\n')[1]).toMatch(
      /^my-editor\s+completed\s+2 \(no limit\)\s+0\.00 \(no limit\)\s+4s \(no limit\)/,
    );
  });
});

/** A session's options on `service`, with no policy, in front of the filesystem server. */
function sessionOn(service: AutonomyGuardrailService, planId: string | undefined): McpSessionOptions {
  const files = mkdtempSync(join(tmpdir(), 'leash-session-'));
  writeFileSync(join(files, 'a.txt'), 'hello\n');
  return {
    service,
    policy: null,
    policyName: 'session',
    ...(planId === undefined ? {} : { planId }),
    upstream: { command: process.execPath, args: [FS_SERVER, files] },
  };
}

/** Runs a session with a client connected, runs `use` with it, then ends the session. */
async function withSession(options: McpSessionOptions, use: (client: Client) => Promise<void>) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const ended = new AbortController();
  const running = runMcpSession({ ...options, clientTransport: serverSide, signal: ended.signal });
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(clientSide);
  try {
    await use(client);
  } finally {
    ended.abort();
    await running;
  }
}

describe('leash mcp sessions without a policy', () => {
  it('refuses a plan --plan names that nobody configured, before starting the upstream', async () => {
    const service = new AutonomyGuardrailService();
    const options = {
      ...sessionOn(service, 'agent-l'),
      upstream: { command: '/nonexistent/server', args: [] },
    };

    await expect(runMcpSession(options)).rejects.toMatchObject({
      code: 'PLAN_NOT_CONFIGURED',
      message: expect.stringContaining(
        'plan "agent-l" is not configured, so it has no limits to hold the agent to: give --policy FILE',
      ),
    });
    expect(await service.getGuardrails('agent-l')).toBeNull();
  });

  it('holds the calls to the limits of the configured plan --plan names', async () => {
    const service = new AutonomyGuardrailService();
    await service.configureGuardrails('agent-1', { maxSteps: 1 });

    await withSession(sessionOn(service, 'agent-1'), async (client) => {
      const args = { name: 'list_allowed_directories', arguments: {} };
      const first = await client.callTool(args);
      const second = await client.callTool(args);
      expect([first.isError ?? false, second.isError]).toEqual([false, true]);
    });
    expect((await service.getGuardrails('agent-1'))?.maxSteps).toBe(1);
  });
});

describe('leash mcp sessions started together', () => {
  it('each get a plan id of their own', { timeout: 60_000 }, async () => {
    const service = new AutonomyGuardrailService();
    const ended = new AbortController();
    const ids: string[] = [];
    const sessions = Array.from({ length: 3 }, () => {
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      const running = runMcpSession({
        ...sessionOn(service, undefined),
        clientTransport: serverSide,
        signal: ended.signal,
        ready: (planId) => ids.push(planId),
      });
      return { running, connected: new Client({ name: 'test', version: '1' }).connect(clientSide) };
    });
    await Promise.all(sessions.map((s) => s.connected));
    ended.abort();
    await Promise.all(sessions.map((s) => s.running));

    expect(ids.sort()).toEqual(['mcp-session-1', 'mcp-session-2', 'mcp-session-3']);
  });
});
