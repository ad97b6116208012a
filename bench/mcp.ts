// What `leash mcp` adds to a tools/call: one SDK client calling the real filesystem server directly, and
// through the proxy on the memory store, on a SQLite file, and as the `leash mcp` process a client spawns;
// then the everything server over HTTP, directly and through `leash mcp --listen`.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { startMcpListener } from '../src/mcp/listen.js';
import { createMcpProxy } from '../src/mcp/proxy.js';
import {
  AutonomyGuardrailService,
  MemoryStore,
  RunGuard,
  SqliteStore,
  systemClock,
  type GuardrailStore,
} from '../src/index.js';
import { fail, PLAN_ID, ROOMY_LIMITS } from './fixtures.js';
import type { BenchCase, GroupResult } from './harness.js';
import { differenceTarget, medianOf, type Target } from './report.js';
import { startEverythingHttp, type RunningServer } from '../test/support/everything.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FS_SERVER = join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');

export const MCP_NAMES = {
  direct: 'tools/call read_text_file (filesystem server, direct)',
  memory: 'tools/call read_text_file (createMcpProxy, MemoryStore)',
  sqlite: 'tools/call read_text_file (createMcpProxy, SqliteStore file)',
  process: 'tools/call read_text_file (leash mcp process, SqliteStore file)',
} as const;

function files(): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'leash-bench-mcp-'));
  writeFileSync(join(dir, 'a.txt'), 'hello\n');
  return { dir, file: join(dir, 'a.txt') };
}

function upstreamTransport(dir: string): StdioClientTransport {
  return new StdioClientTransport({ command: process.execPath, args: [FS_SERVER, dir], stderr: 'ignore' });
}

export const MCP_HTTP_NAMES = {
  direct: 'tools/call echo (everything server over HTTP, direct)',
  memory: 'tools/call echo (leash mcp --listen, MemoryStore)',
  sqlite: 'tools/call echo (leash mcp --listen, SqliteStore file)',
} as const;

/** A transport to a server, and what else to close with the client on it. */
interface Connection {
  readonly transport: Transport;
  readonly close?: () => Promise<void>;
}

/** One case: a client on `connect`'s transport, calling read_text_file on a small file. */
function callCase(name: string, connect: (dir: string) => Promise<Connection>): BenchCase {
  return {
    name,
    async: true,
    prepare: async () => {
      const { dir, file } = files();
      const client = new Client({ name: 'bench', version: '1' });
      const connection = await connect(dir);
      await client.connect(connection.transport);
      const op = async () => {
        const r = await client.callTool({ name: 'read_text_file', arguments: { path: file } });
        if (r.isError) fail(`${name}: ${JSON.stringify(r.content)}`);
        return r;
      };
      await op();
      // The in-process proxy's upstream is a process of its own: it goes too, or it keeps the bench alive.
      const release = async (): Promise<void> => {
        await client.close();
        await connection.close?.();
      };
      return { op, release: () => void release() };
    },
  };
}

/** The proxy in this process on `store`, in front of its own upstream process. */
function inProcess(store: () => Promise<GuardrailStore>): (dir: string) => Promise<Connection> {
  return async (dir) => {
    const service = new AutonomyGuardrailService({ clock: systemClock, store: await store() });
    await service.configureGuardrails(PLAN_ID, { ...ROOMY_LIMITS, startTime: null });
    const proxy = createMcpProxy({
      upstream: () => upstreamTransport(dir),
      guard: new RunGuard({ service, planId: PLAN_ID, recordCalls: true }),
    });
    const [client, server] = InMemoryTransport.createLinkedPair();
    await proxy.connect(server);
    return { transport: client, close: () => proxy.close() };
  };
}

const sqlite = async (): Promise<GuardrailStore> => {
  const store = new SqliteStore({ path: join(mkdtempSync(join(tmpdir(), 'leash-bench-')), 'leash.db') });
  await store.migrate();
  return store;
};

export function mcpGroup(): BenchCase[] {
  return [
    callCase(MCP_NAMES.direct, async (dir) => ({ transport: upstreamTransport(dir) })),
    callCase(
      MCP_NAMES.memory,
      inProcess(async () => new MemoryStore({ keepLog: false })),
    ),
    callCase(MCP_NAMES.sqlite, inProcess(sqlite)),
    callCase(MCP_NAMES.process, async (dir) => {
      const db = join(mkdtempSync(join(tmpdir(), 'leash-bench-')), 'leash.db');
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [join(ROOT, 'dist/cli/bin.js'), 'mcp', '--db', db, '--', process.execPath, FS_SERVER, dir],
        stderr: 'ignore',
      });
      return { transport };
    }),
  ];
}

/**
 * The everything server over Streamable HTTP, one process for every case of the group (the same upstream
 * reached directly and through the listener): started by the first case prepared, stopped once every case
 * released it.
 */
function everythingServer(): { acquire: () => Promise<string>; release: () => void } {
  let running: Promise<RunningServer> | undefined;
  let users = 0;
  return {
    acquire: async () => {
      users++;
      running ??= startEverythingHttp();
      return (await running).url;
    },
    release: () => {
      if (--users > 0) return;
      void running?.then((s) => s.stop());
      running = undefined;
    },
  };
}

/** One case: a client over HTTP calling the everything server's `echo`, at the URL `connect` gives. */
function echoCase(
  name: string,
  connect: () => Promise<{ url: string; token?: string; close: () => Promise<void> }>,
): BenchCase {
  return {
    name,
    async: true,
    prepare: async () => {
      const { url, token, close } = await connect();
      const client = new Client({ name: 'bench', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          ...(token === undefined ? {} : { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
        }),
      );
      const op = async () => {
        const r = await client.callTool({ name: 'echo', arguments: { message: 'hello' } });
        if (r.isError) fail(`${name}: ${JSON.stringify(r.content)}`);
        return r;
      };
      await op();
      return { op, release: () => void client.close().then(close) };
    },
  };
}

export function mcpHttpGroup(): BenchCase[] {
  const upstream = everythingServer();
  const listening = (store: () => Promise<GuardrailStore>) => async () => {
    const url = await upstream.acquire();
    const listener = await startMcpListener({
      service: new AutonomyGuardrailService({ clock: systemClock, store: await store() }),
      policy: null,
      policyName: 'bench',
      upstream: { url },
      host: '127.0.0.1',
      port: 0,
    });
    return { ...listener, close: () => listener.close().then(upstream.release) };
  };
  return [
    echoCase(MCP_HTTP_NAMES.direct, async () => ({
      url: await upstream.acquire(),
      close: async () => upstream.release(),
    })),
    echoCase(
      MCP_HTTP_NAMES.memory,
      listening(async () => new MemoryStore({ keepLog: false })),
    ),
    echoCase(MCP_HTTP_NAMES.sqlite, listening(sqlite)),
  ];
}

export function mcpTargets(group: GroupResult): Target[] {
  const over = (name: string) => group.over.find((o) => o.name === name) ?? fail(`no difference for ${name}`);
  return [
    differenceTarget(
      'median time leash mcp adds per tools/call (createMcpProxy, MemoryStore)',
      medianOf(over(MCP_NAMES.memory)),
      1_000_000,
    ),
    differenceTarget(
      'median time leash mcp adds per tools/call (createMcpProxy, SqliteStore file)',
      medianOf(over(MCP_NAMES.sqlite)),
      2_000_000,
    ),
    differenceTarget(
      'median time leash mcp adds per tools/call (leash mcp process, SqliteStore file)',
      medianOf(over(MCP_NAMES.process)),
    ),
  ];
}

export function mcpHttpTargets(group: GroupResult): Target[] {
  const over = (name: string) => group.over.find((o) => o.name === name) ?? fail(`no difference for ${name}`);
  return [
    differenceTarget(
      'median time leash mcp --listen adds per tools/call over HTTP (MemoryStore)',
      medianOf(over(MCP_HTTP_NAMES.memory)),
    ),
    differenceTarget(
      'median time leash mcp --listen adds per tools/call over HTTP (SqliteStore file)',
      medianOf(over(MCP_HTTP_NAMES.sqlite)),
      2_000_000,
    ),
  ];
}
