// The MCP conformance suite's server scenarios through `leash mcp --listen`, in front of server-everything
// over Streamable HTTP: every scenario server-everything passes directly passes through leash too. The
// suite sends no header of its own, so a relay adds leash's bearer token (relay.ts).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEverythingHttp, type RunningServer } from '../support/everything.js';
import { leashArgs } from '../support/leashBin.js';
import { bearerRelay } from './relay.js';
import { notPassedOf, passedOf, serverScenarios, type Outcome } from './run.js';

const TOKEN = 'conformance-token-of-at-least-32-characters';

/** `leash mcp --listen` on a free port of 127.0.0.1 in front of `upstream`, resolved once it listens. */
async function startListening(upstream: string, db: string): Promise<RunningServer> {
  const leash = spawn(
    process.execPath,
    // The suite's clients end without a DELETE: every scenario's session stays open until the run ends.
    leashArgs(
      'mcp',
      '--listen',
      '127.0.0.1:0',
      '--max-sessions',
      '100',
      '--db',
      db,
      '--upstream-url',
      upstream,
    ),
    { env: { ...process.env, LEASH_TOKEN: TOKEN }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const exited = new Promise<void>((resolve) => leash.once('exit', () => resolve()));
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    leash.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      const listening = /leash mcp: listening on (http:\/\/\S+)/.exec(stderr)?.[1];
      if (listening !== undefined) resolve(listening);
    });
    void exited.then(() => reject(new Error(`leash mcp --listen exited before it listened: ${stderr}`)));
  });
  return {
    url,
    stop: async () => {
      if (leash.exitCode === null && leash.signalCode === null) leash.kill();
      await exited;
    },
  };
}

describe('the conformance suite through leash mcp --listen', () => {
  let dir: string;
  const running: RunningServer[] = [];
  let direct: Map<string, Outcome>;
  let throughLeash: Map<string, Outcome>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'leash-conformance-listen-'));
    const server = await startEverythingHttp();
    running.push(server);
    const leash = await startListening(server.url, join(dir, 'leash.db'));
    running.push(leash);
    const relay = await bearerRelay(leash.url, TOKEN);
    running.push(relay);
    direct = await serverScenarios(server.url);
    throughLeash = await serverScenarios(relay.url);
  }, 120_000);

  afterAll(async () => {
    for (const server of running.reverse()) await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('passes every server scenario server-everything passes directly', () => {
    expect(passedOf(direct).length).toBeGreaterThanOrEqual(10);
    expect(notPassedOf(passedOf(direct), throughLeash)).toEqual({});
  });
});
