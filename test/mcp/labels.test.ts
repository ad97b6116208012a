// The labels of the plan a `leash mcp` session configures: given to runMcpSession in this process, and
// given as `--label` to the command, which a client leaves at once (its stdin closed).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { mcpRefusedIn } from '../support/cli.js';
import { startMcpListener } from '../../src/mcp/listen.js';
import { runMcpSession, type McpSessionOptions } from '../../src/mcp/session.js';
import { parsePolicy } from '../../src/policy/policy.js';
import { AutonomyGuardrailService } from '../../src/service/AutonomyGuardrailService.js';
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js';
import { leashArgs } from '../support/leashBin.js';

const T0 = Date.parse('2026-11-30T10:00:00.000Z');
const POLICY = 'version: 1\nguardrails: { tool_budget: 4 }\n';
// Never started: a session starts its upstream once its client sent initialize, and these send none.
const UPSTREAM = { command: 'no-such-server', args: [] };

function newService(): AutonomyGuardrailService {
  return new AutonomyGuardrailService({ clock: new ManualClock(T0) });
}

/** A session whose client goes away as soon as it takes messages; resolves with its plan id. */
async function sessionOf(
  service: AutonomyGuardrailService,
  options: Partial<McpSessionOptions>,
): Promise<string> {
  const ended = new AbortController();
  const [, server] = InMemoryTransport.createLinkedPair();
  const { planId } = await runMcpSession({
    service,
    policy: null,
    policyName: 'fs',
    upstream: UPSTREAM,
    clientTransport: server,
    signal: ended.signal,
    ready: () => ended.abort(),
    ...options,
  });
  return planId;
}

describe('runMcpSession labels', () => {
  it('labels the new session plan it configures without a policy', async () => {
    const service = newService();
    const planId = await sessionOf(service, { labels: { user: 'ann' } });
    expect([planId, (await service.getGuardrails(planId))?.labels]).toEqual(['mcp-fs-1', { user: 'ann' }]);
  });

  it('labels the session plan its policy configures, with the policy’s limits', async () => {
    const service = newService();
    const planId = await sessionOf(service, { policy: parsePolicy(POLICY), labels: { user: 'ann' } });
    const g = await service.getGuardrails(planId);
    expect([g?.toolBudget, g?.labels]).toEqual([4, { user: 'ann' }]);
  });

  it('labels the plan it is given when its policy configures it', async () => {
    const service = newService();
    await service.configureGuardrails('mine', { labels: { user: 'bob' } });
    await sessionOf(service, { planId: 'mine', policy: parsePolicy(POLICY), labels: { user: 'ann' } });
    expect((await service.getGuardrails('mine'))?.labels).toEqual({ user: 'ann' });
  });

  it('refuses labels for a plan it is given without a policy, leaving the plan as it is', async () => {
    const service = newService();
    await service.configureGuardrails('mine', { labels: { user: 'bob' } });
    const error = await sessionOf(service, { planId: 'mine', labels: { user: 'ann' } }).catch((e) => e);
    expect((error as { field?: string }).field).toBe('labels');
    expect((await service.getGuardrails('mine'))?.labels).toEqual({ user: 'bob' });
  });

  it('refuses a bad label, naming it, and configures no plan', async () => {
    const service = newService();
    const error = await sessionOf(service, { labels: { User: 'ann' } }).catch((e) => e);
    expect((error as { field?: string }).field).toBe('labels.User');
    expect(await service.store.listPlans()).toEqual([]);
  });

  it('refuses a bad label in a listener’s options before it listens', async () => {
    const listening = startMcpListener({
      service: newService(),
      policy: null,
      policyName: 'fs',
      upstream: UPSTREAM,
      labels: { team: '' },
      host: '127.0.0.1',
      port: 0,
    });
    await expect(listening).rejects.toMatchObject({ field: 'labels.team' });
  });
});

describe('leash mcp --label', { timeout: 60_000 }, () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'leash-mcp-labels-'));
    writeFileSync(join(dir, 'fs.yaml'), POLICY);
  });

  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('labels the session plan', async () => {
    const args = ['mcp', '--db', 'leash.db', '--policy', 'fs.yaml', '--label', 'user=ann'];
    const r = spawnSync(process.execPath, leashArgs(...args, '--', 'no-such-server'), {
      cwd: dir,
      input: '',
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status).toBe(0);
    const store = new SqliteStore({ path: join(dir, 'leash.db') });
    try {
      await store.migrate();
      expect((await store.getGuardrails('mcp-fs-1'))?.labels).toEqual({ user: 'ann' });
    } finally {
      await store.close();
    }
  });

  it('refuses a label without =, naming the flag and the value', async () => {
    const r = await mcpRefusedIn(dir, '--label', 'user', '--', 'server');
    expect([r.code, r.err]).toEqual([
      2,
      expect.stringContaining('--label must be name=value (team=ml), got "user"'),
    ]);
  });

  it('refuses --label with --plan and no --policy', async () => {
    const r = await mcpRefusedIn(dir, '--plan', 'mine', '--label', 'user=ann', '--', 'server');
    expect([r.code, r.err]).toEqual([2, expect.stringContaining('--label with --plan needs --policy')]);
  });
});
