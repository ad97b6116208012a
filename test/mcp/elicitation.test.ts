// The proxy's own question to the client's user (elicitation) once a store knows people: asked only where
// the approval's rule counts the answer, which is then one vote of no verified person.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import {
  approvalRules,
  AutonomyGuardrailService,
  ManualClock,
  MemoryStore,
  RunGuard,
  type ApprovalRuleInit,
} from '../../src/index.js';
import { createMcpProxy } from '../../src/mcp/proxy.js';

const PLAN = 'session';

/** An upstream with one tool, `wipe`, that counts its runs. */
function upstream(): { server: McpServer; runs: () => number } {
  let runs = 0;
  const server = new McpServer({ name: 'upstream', version: '1.0.0' });
  server.registerTool('wipe', {}, async () => {
    runs++;
    return { content: [{ type: 'text', text: 'wiped' }] };
  });
  return { server, runs: () => runs };
}

/**
 * The proxy in front of `upstream`, for a client named `editor` that can ask its user (who accepts and is
 * counted in `asked`); plan `session` run for carol, with `wipe` needing a person. With `people`, the
 * store knows ann and bob (role release) and carol; `rules` are the service's approval rules.
 */
async function setUp(options: { people: boolean; rules?: Record<string, ApprovalRuleInit> }) {
  const service = new AutonomyGuardrailService({
    clock: new ManualClock(Date.UTC(2026, 0, 1)),
    store: new MemoryStore(),
    ...(options.rules === undefined ? {} : { approvalRules: approvalRules(options.rules) }),
  });
  if (options.people) {
    await service.addPrincipal({ id: 'ann', name: 'Ann', roles: ['release'] });
    await service.addPrincipal({ id: 'bob', name: 'Bob', roles: ['release'] });
    await service.addPrincipal({ id: 'carol', name: 'Carol', roles: ['release'] });
  }
  await service.configureGuardrails(PLAN, { requiredConfirmations: ['wipe'], labels: { user: 'carol' } });
  const up = upstream();
  const [up1, up2] = InMemoryTransport.createLinkedPair();
  await up.server.connect(up2);
  const guard = new RunGuard({ service, planId: PLAN, recordCalls: true });
  const proxy = createMcpProxy({ upstream: () => up1, guard });
  const [c1, c2] = InMemoryTransport.createLinkedPair();
  await proxy.connect(c2);
  const client = new Client({ name: 'editor', version: '1' }, { capabilities: { elicitation: {} } });
  const asked: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params.message);
    return { action: 'accept', content: {} };
  });
  await client.connect(c1);
  const wipe = async () => (await client.callTool({ name: 'wipe', arguments: {} })) as CallToolResult;
  /** Bob's vote with his personal token. */
  const bobApproves = async (id: string) => {
    const { token } = await service.createToken('bob');
    await service.approve(id, { by: 'Bob', identity: await service.authenticate(token) });
  };
  return { service, wipe, asked, runs: up.runs, bobApproves };
}

const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');

describe('asking the client’s user once the store knows people', () => {
  it('does not ask when no rule counts the answer, and the call waits for a personal token', async () => {
    const { service, wipe, asked, runs } = await setUp({ people: true });

    const result = await wipe();

    const [approval] = await service.listApprovals({ planId: PLAN });
    expect(asked).toEqual([]);
    expect(runs()).toBe(0);
    expect(approval?.status).toBe('pending');
    expect(text(result)).toContain(`leash approve ${approval?.id} --token "$LEASH_TOKEN" --reason checked`);
  });

  it('does not ask when the approval’s rule leaves elicitation at deny', async () => {
    const { service, wipe, asked } = await setUp({ people: true, rules: { wipe: { approvers: ['*'] } } });

    await wipe();

    expect(asked).toEqual([]);
    expect((await service.listApprovals({ planId: PLAN }))[0]?.status).toBe('pending');
  });

  it('asks when the rule says elicitation: allow, and the accepted call runs as the client’s decision', async () => {
    const rules = { wipe: { approvers: ['*'], elicitation: 'allow' as const } };
    const { service, wipe, asked, runs } = await setUp({ people: true, rules });

    const result = await wipe();

    const [approval] = await service.listApprovals({ planId: PLAN });
    expect(asked).toHaveLength(1);
    expect(result.isError).toBeFalsy();
    expect(runs()).toBe(1);
    expect(approval?.votes?.map((v) => v.by)).toEqual([
      { kind: 'elicitation', subject: 'editor', name: 'editor' },
    ]);
  });

  it('counts the answer as one vote of a quorum: the call runs once a person with a token adds theirs', async () => {
    const rules = { wipe: { approvers: ['role:release'], quorum: 2, elicitation: 'allow' as const } };
    const { service, wipe, asked, runs, bobApproves } = await setUp({ people: true, rules });

    const first = await wipe();
    const [waiting] = await service.listApprovals({ planId: PLAN });
    await bobApproves(waiting?.id as string);
    const second = await wipe();

    expect(asked[0]).toContain('one of the 2 approvals');
    expect(text(first)).toContain('It needs 2 different people under rule "wipe" (1 approved so far)');
    expect(text(first)).toContain('"carol", who asked, may not approve it');
    expect(second.isError).toBeFalsy();
    expect(runs()).toBe(1);
  });

  it('asks as before when the store knows nobody and no rule applies, naming the client as who decided', async () => {
    const { service, wipe, asked, runs } = await setUp({ people: false });

    await wipe();

    expect(asked).toHaveLength(1);
    expect(runs()).toBe(1);
    expect((await service.listApprovals({ planId: PLAN }))[0]?.decidedBy).toBe('editor');
  });
});
