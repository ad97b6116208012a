import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { describe, expect, it } from 'vitest';
import { AutonomyGuardrailService } from '../../src/index.js';
import { runMcpSession, type McpSessionOptions } from '../../src/mcp/session.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FS_SERVER = join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');

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
      message: expect.stringContaining('plan "agent-l" is not configured: give --policy FILE'),
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
