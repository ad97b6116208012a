// The proxy in one process: an upstream McpServer, the proxy and a client, linked in memory.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AutonomyGuardrailService,
  ManualClock,
  policyBudgets,
  MemoryStore,
  RunGuard,
  toolRules,
  validatePolicy,
} from '../../src/index.js';
import { createMcpProxy, COST_META_KEY } from '../../src/mcp/proxy.js';
import { mcpRules } from '../../src/mcp/rules.js';
import { inputHash } from '../../src/service/hash.js';

const PLAN = 'session';

function upstreamServer(): McpServer {
  const server = new McpServer({ name: 'upstream', version: '1.0.0' });
  server.registerTool(
    'read',
    { annotations: { readOnlyHint: true }, inputSchema: { n: z.number() } },
    async ({ n }) => ({
      content: [{ type: 'text', text: `read ${n}` }],
    }),
  );
  server.registerTool('append', { annotations: { destructiveHint: false } }, async () => ({
    content: [{ type: 'text', text: 'appended' }],
  }));
  server.registerTool('wipe', {}, async () => ({ content: [{ type: 'text', text: 'wiped' }] }));
  server.registerTool('metered', {}, async () => ({
    content: [{ type: 'text', text: 'metered' }],
    _meta: { [COST_META_KEY]: 3 },
  }));
  server.registerTool('overpriced', {}, async () => ({
    content: [{ type: 'text', text: 'overpriced' }],
    _meta: { [COST_META_KEY]: 1e12 },
  }));
  server.registerTool('hang', {}, () => new Promise(() => undefined));
  server.registerTool('grow', {}, async () => {
    server.registerTool('grown', {}, async () => ({ content: [{ type: 'text', text: 'new' }] }));
    return { content: [{ type: 'text', text: 'grew' }] };
  });
  server.registerTool('slow', {}, async (extra) => {
    await extra.sendNotification({
      method: 'notifications/progress',
      params: { progressToken: extra._meta?.progressToken as string, progress: 1, total: 2 },
    });
    return { content: [{ type: 'text', text: 'slow done' }] };
  });
  server.registerResource('readme', 'file:///readme', { mimeType: 'text/plain' }, async (uri) => ({
    contents: [{ uri: uri.href, text: 'read me' }],
  }));
  server.registerPrompt('greet', { argsSchema: { who: z.string() } }, ({ who }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `hello ${who}` } }],
  }));
  return server;
}

async function setUp(policy: unknown = { version: 1 }) {
  const p = validatePolicy(policy);
  const store = new MemoryStore();
  const service = new AutonomyGuardrailService({ clock: new ManualClock(Date.UTC(2026, 0, 1)), store });
  await service.configureGuardrails(
    PLAN,
    p.guardrails?.tool_budget === undefined ? {} : { toolBudget: p.guardrails.tool_budget },
  );
  // `upstream` is the server's end of the link: closing it is the server going away.
  const [up1, upstream] = InMemoryTransport.createLinkedPair();
  await upstreamServer().connect(upstream);
  const guard = new RunGuard({ service, planId: PLAN, recordCalls: true, tools: toolRules(p) });
  const proxy = createMcpProxy({ upstream: () => up1, guard, rules: mcpRules(p) });
  const [c1, c2] = InMemoryTransport.createLinkedPair();
  await proxy.connect(c2);
  const client = new Client({ name: 'editor', version: '1' });
  await client.connect(c1);
  const call = async (name: string, args: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: args })) as CallToolResult;
  return { client, service, store, call, upstream };
}

const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');

describe('createMcpProxy', () => {
  it('passes resources and prompts through unchanged', async () => {
    const { client } = await setUp();
    expect((await client.readResource({ uri: 'file:///readme' })).contents).toEqual([
      { uri: 'file:///readme', text: 'read me' },
    ]);
    const prompt = await client.getPrompt({ name: 'greet', arguments: { who: 'ann' } });
    expect(prompt.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'hello ann' } }]);
  });

  it('forwards the upstream’s tools/list_changed to the client', async () => {
    const { client, call } = await setUp();
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
    expect(text(await call('grow'))).toBe('grew');
    await expect.poll(() => changed).toBeGreaterThan(0);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('grown');
  });

  it('charges the cost the upstream reports under _meta leash/cost', async () => {
    const { call, service } = await setUp({ version: 1, guardrails: { tool_budget: 5 } });
    expect(text(await call('metered'))).toBe('metered');
    expect((await service.getGuardrails(PLAN))?.budgetSpent).toBe(3);
  });

  it('refuses calls once a reported cost went past the budget', async () => {
    const { call } = await setUp({ version: 1, guardrails: { tool_budget: 5 } });
    await call('metered');
    await call('metered'); // known to cost 3 only once it ran: recorded as an overrun
    const third = await call('read', { n: 1 });
    expect(third.isError).toBe(true);
    expect(text(third)).toContain('budget_blocked');
  });

  it('refuses a call a spend cap across plans cannot cover, saying how to raise it', async () => {
    const policy = validatePolicy({
      version: 1,
      tools: { read: { cost_per_call: 1 } },
      budgets: [{ id: 'all-daily', match: {}, limit: 0.5, window: 'day' }],
    });
    const { call, store } = await setUp(policy);
    await store.putCaps(policyBudgets(policy));

    const refused = await call('read', { n: 1 });

    expect([refused.isError, text(refused)]).toEqual([
      true,
      expect.stringMatching(
        /\(budget_cap_blocked\): spend cap "all-daily" .* see `leash budgets`, raise budgets\[\]\.limit in the policy, or wait for its window to reset\.$/,
      ),
    ]);
  });

  it('forwards the upstream’s progress under the client’s own token', async () => {
    const { client } = await setUp();
    const seen: number[] = [];
    const r = await client.callTool({ name: 'slow', arguments: {} }, undefined, {
      onprogress: (p) => void seen.push(p.progress),
    });
    expect((r as CallToolResult).content).toEqual([{ type: 'text', text: 'slow done' }]);
    expect(seen).toEqual([1]);
  });

  it('with confirm_destructive, asks a person for a tool without annotations only', async () => {
    const { call } = await setUp({ version: 1, mcp: { confirm_destructive: true } });
    expect(text(await call('read', { n: 1 }))).toBe('read 1');
    expect(text(await call('append'))).toBe('appended');
    const wipe = await call('wipe');
    expect(wipe.isError).toBe(true);
    expect(text(wipe)).toMatch(/needs a person to approve this call of "wipe" \(approval /);
  });

  it('records every entry of a call with the tool and the hash its grant would be bound to', async () => {
    const { call, store } = await setUp();
    await call('read', { n: 7 });
    const log = await store.readAuditLog(PLAN);
    const hash = inputHash({ tool: 'read', input: { n: 7 } });
    // The settlement after the call is its own update, named by the reservation.
    const settled = ['budget_committed', 'budget_released'];
    const checks = log.map((e) => e.entry).filter((e) => !settled.includes(e.event_type));
    expect(checks.map((e) => e.event_type)).toEqual([
      'wall_clock_allowed',
      'step_allowed',
      'confirmation_not_required',
      'actor_tool_calls_allowed',
      'budget_reserved',
    ]);
    for (const e of checks) expect(e.details).toMatchObject({ tool: 'read', input_hash: hash });
  });

  it('charges a call the upstream reports an impossible cost for its estimate, and answers it', async () => {
    const policy = {
      version: 1,
      guardrails: { tool_budget: 5 },
      tools: { overpriced: { cost_per_call: 1 } },
    };
    const { call, service } = await setUp(policy);
    expect(text(await call('overpriced'))).toBe('overpriced');
    expect((await service.getGuardrails(PLAN))?.budgetSpent).toBe(1);
  });

  it('charges a call left unanswered when the upstream went away its estimate, since it may have run', async () => {
    const policy = { version: 1, guardrails: { tool_budget: 5 }, tools: { hang: { cost_per_call: 2 } } };
    const { call, service, upstream } = await setUp(policy);
    const pending = call('hang');
    await expect.poll(async () => (await service.getGuardrails(PLAN))?.stepCount).toBe(1);
    await upstream.close();
    const r = await pending;
    expect(r.isError).toBe(true);
    expect(text(r)).toContain('may have run');
    expect((await service.getGuardrails(PLAN))?.budgetSpent).toBe(2);
  });
});

describe('refused calls in the plan’s log', () => {
  /** The last entry of the plan's log. */
  const lastEntry = async (store: MemoryStore) => (await store.readAuditLog(PLAN)).at(-1)?.entry;

  it('records a call refused because the upstream server is gone, with the tool and its input’s hash', async () => {
    const { call, store, upstream } = await setUp();
    await upstream.close();
    const r = await call('read', { n: 1 });
    expect(r.isError).toBe(true);
    expect(text(r)).toContain('the upstream server is gone');
    expect(await lastEntry(store)).toMatchObject({
      event_type: 'tool_calls_blocked',
      details: { tool: 'read', input_hash: inputHash({ tool: 'read', input: { n: 1 } }), limit: 0 },
    });
  });

  it('records a call refused because the upstream went away while its tool was looked up', async () => {
    const { call, store, upstream } = await setUp({ version: 1, mcp: { confirm_destructive: true } });
    const receive = upstream.onmessage;
    // The upstream goes away as the proxy asks it for the tool's annotations.
    upstream.onmessage = (message, extra) => {
      if ((message as { method?: string }).method === 'tools/list') void upstream.close();
      else receive?.(message, extra);
    };
    const r = await call('wipe');
    expect(r.isError).toBe(true);
    expect(await lastEntry(store)).toMatchObject({
      event_type: 'tool_calls_blocked',
      details: { tool: 'wipe', limit: 0 },
    });
  });

  it('records a call refused for a person’s confirmation each time it is made while pending', async () => {
    const { call, store } = await setUp({ version: 1, mcp: { confirm_destructive: true } });
    await call('wipe');
    const before = (await store.readAuditLog(PLAN)).length;
    expect((await call('wipe')).isError).toBe(true);
    expect((await store.readAuditLog(PLAN)).length).toBeGreaterThan(before);
  });
});
