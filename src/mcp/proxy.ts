import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { randomUUID } from 'node:crypto';
import type { RunGuard } from '../agent/RunGuard.js';
import { NonRetryableError, toolResult } from '../agent/toolResult.js';
import { errorTail } from '../errors.js';
import { parseIsoMs } from '../iso.js';
import { MAX_AMOUNT } from '../money.js';
import { DEFAULT_STYLE, type CommandStyle } from '../runner/commandLine.js';
import { inputHash } from '../service/hash.js';
import type { Approval } from '../store/GuardrailStore.js';
import { eitherAborts } from '../signals.js';
import { approvalText, denialText, errorResult } from './denials.js';
import { Relay, type ClientRequest, type Reply, type RpcError } from './relay.js';
import {
  confirmedCallId,
  hiddenBy,
  isDestructive,
  mcpRules,
  type McpRules,
  type ToolAnnotations,
} from './rules.js';

type Params = Record<string, unknown>;

const GONE = 'the upstream server is gone; restart leash mcp';

/** The `_meta` key under which an upstream may report what a call cost, in the budget's units. */
export const COST_META_KEY = 'leash/cost';

export interface McpProxyOptions {
  /** Opens the upstream server's transport, not started: called once the client sent `initialize`. */
  readonly upstream: () => Transport | Promise<Transport>;
  /** Guards every `tools/call` under the session's plan. */
  readonly guard: RunGuard;
  /** What the client is shown and which calls a person confirms; default every tool, none confirmed. */
  readonly rules?: McpRules;
  /** How the `leash approve` command shown for an approval starts, and its store; default `npx leash`. */
  readonly style?: CommandStyle;
  /** Told what a person should know: the upstream's end. */
  readonly log?: (line: string) => void;
  /** The protocol versions the client's transport can carry, when it checks them (see {@link Relay}). */
  readonly protocolVersions?: readonly string[];
}

/** A tool as `tools/list` gives it, read no further than the proxy needs. */
interface ListedTool {
  readonly name: string;
  readonly annotations?: ToolAnnotations;
}

function listedTools(result: Params): ListedTool[] {
  const tools = result['tools'];
  if (!Array.isArray(tools)) return [];
  return tools.filter(
    (t): t is ListedTool => typeof t === 'object' && t !== null && typeof (t as ListedTool).name === 'string',
  );
}

/** The upstream answered a `tools/call` with a JSON-RPC error: nothing ran; the client gets it as it is. */
class UpstreamRefused extends NonRetryableError {
  constructor(readonly rpc: RpcError) {
    super(`the upstream server answered with an error: ${rpc.message}`);
  }
}

function isAmount(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= MAX_AMOUNT;
}

/** Whether an approval can no longer let a call through: used, refused, or past its time. */
function spent(approval: Approval, now: number): boolean {
  return approval.status === 'used' || approval.status === 'denied' || parseIsoMs(approval.expiresAt) < now;
}

/**
 * A proxy between an MCP client and its server that passes the conversation on as it is — tools,
 * resources, prompts, completions, logging, the server's own requests of the client (sampling,
 * elicitation, roots, pings) and every notification, in order — except for what leash is for: every
 * `tools/call` goes through the run guard (steps, budget: a tool's `cost_per_call` or the cost the
 * upstream reports under `_meta` `leash/cost`; calls per tool and per session, the wall clock, a
 * person's confirmation), each audited in the plan's log with the tool and its input's hash; the tools
 * the rules hide are left out of `tools/list`; and the server's title says leash guards it. A refused call
 * is an `isError` result that says which limit refused it and how to raise it; the session goes on. A
 * person confirms in the client when it can be asked (elicitation) and no rule says otherwise, else
 * with `leash approve` (a personal token, once the store knows people) or the dashboard.
 */
export function createMcpProxy(options: McpProxyOptions): Relay {
  const { guard } = options;
  const rules = options.rules ?? mcpRules(null);
  const style = options.style ?? DEFAULT_STYLE;

  /** The annotations of every tool the upstream listed, by name, from its newest list. */
  let annotations = new Map<string, ToolAnnotations | undefined>();

  const relay: Relay = new Relay({
    upstream: options.upstream,
    ...(options.log ? { log: options.log } : {}),
    ...(options.protocolVersions ? { protocolVersions: options.protocolVersions } : {}),
    hooks: {
      answer: (request) => (request.method === 'tools/call' ? guardedCall(request) : undefined),
      result: (method, result) => {
        if (method === 'initialize') return initialized(result);
        if (method !== 'tools/list') return result;
        const tools = listedTools(result);
        for (const t of tools) annotations.set(t.name, t.annotations);
        return { ...result, tools: tools.filter((t) => hiddenBy(rules, t.name) === null) };
      },
      notified: (method) => {
        if (method === 'notifications/tools/list_changed') annotations = new Map();
      },
    },
  });

  /** The upstream's answer to `initialize`, but for leash's name in the title and no tasks. */
  function initialized(result: Params): Params {
    const info = (result['serverInfo'] ?? {}) as { name?: unknown; title?: unknown };
    const name =
      typeof info.title === 'string' ? info.title : typeof info.name === 'string' ? info.name : 'upstream';
    // Tasks are not passed on: the proxy answers each call itself, once it ran.
    const { tasks: _tasks, ...capabilities } = (result['capabilities'] ?? {}) as Params;
    return { ...result, capabilities, serverInfo: { ...info, title: `${name} (guarded by leash)` } };
  }

  /** A tool's annotations, listing the upstream's tools when the client calls one it never listed. */
  async function annotationsOf(name: string, signal: AbortSignal): Promise<ToolAnnotations | undefined> {
    if (!annotations.has(name)) {
      const fresh = new Map<string, ToolAnnotations | undefined>();
      let cursor: string | undefined;
      do {
        const page = await relay.requestUpstream(
          'tools/list',
          cursor === undefined ? undefined : { cursor },
          signal,
        );
        if (!('result' in page))
          throw new Error(
            `the upstream's tools could not be listed: ${'error' in page ? page.error.message : page.lost}`,
          );
        for (const t of listedTools(page.result)) fresh.set(t.name, t.annotations);
        const next = page.result['nextCursor'];
        cursor = typeof next === 'string' ? next : undefined;
      } while (cursor !== undefined);
      annotations = fresh;
    }
    return annotations.get(name);
  }

  /** How many times each same call (tool and input) was asked of a person: its next ask's number. */
  const asks = new Map<string, number>();
  const sessionTag = `mcp-${randomUUID().slice(0, 8)}`;
  let calls = 0;

  /**
   * The decision id a call runs under: for one a person must confirm, the id of its approval (asked in
   * the client when it can be, then decided there); for any other, a new id of this session.
   */
  async function decisionOf(
    call: { toolName: string; input: unknown; requiresConfirmation: boolean },
    request: ClientRequest,
  ): Promise<string> {
    const hash = inputHash({ tool: call.toolName, input: call.input });
    const key = `${call.toolName}\u0000${hash}`;
    for (let ask = asks.get(key) ?? 1; ; ask++) {
      const toolCallId = confirmedCallId(call.toolName, hash, ask);
      const approval = await guard.approvalFor({ ...call, toolCallId });
      if (approval === null) return `${sessionTag}:${++calls}`;
      if (spent(approval, guard.service.clock.now())) continue;
      asks.set(key, ask);
      if (approval.status === 'pending') await askInClient(approval, call, request);
      return toolCallId;
    }
  }

  /**
   * Whether people sign in to decide `approval`: it was opened under a rule, or the store knows people.
   * Then an answer in the client is no person's decision unless the rule says so (see {@link askInClient}).
   */
  async function signIn(approval: Approval): Promise<boolean> {
    return approval.rule !== undefined || (await guard.service.hasPrincipals());
  }

  /**
   * Asks the person in the client, when it can ask, and records their answer; else leaves it pending.
   * The question is leash's own request, answered to leash: never one of the upstream's. Once people
   * sign in to decide, the client is asked only when the approval's rule counts its answer
   * (`elicitation: allow`): whoever answers the form is not a verified person, and their answer is one
   * vote, as the client's name.
   */
  async function askInClient(
    approval: Approval,
    call: { toolName: string; input: unknown },
    request: ClientRequest,
  ): Promise<void> {
    const client = relay.clientInit;
    if ((client?.['capabilities'] as Params | undefined)?.['elicitation'] === undefined) return;
    if (approval.rule?.elicitation !== 'allow' && (await signIn(approval))) return;
    const info = client?.['clientInfo'] as { name?: unknown } | undefined;
    const by = typeof info?.name === 'string' ? info.name : 'mcp client';
    const quorum = approval.rule?.quorum ?? 1;
    const counts = quorum > 1 ? ` Your answer is one of the ${quorum} approvals it needs.` : '';
    const reply = await relay.requestClient(
      'elicitation/create',
      {
        message: `Allow "${call.toolName}" to run with ${JSON.stringify(call.input)}? (leash approval ${approval.id}; it runs once)${counts}`,
        requestedSchema: { type: 'object', properties: {} },
      },
      request.id,
      request.signal,
    );
    // Unanswered: the approval stays pending, for `leash approve`.
    if (!('result' in reply)) return;
    const answer = reply.result['action'];
    // Whoever answers the form is not verified: an approval rule counts them only if it says so.
    const identity = { kind: 'elicitation', subject: by, name: by } as const;
    const decide =
      answer === 'accept'
        ? guard.service.approve(approval.id, { by, identity, reason: `accepted in ${by}` })
        : guard.service.deny(approval.id, {
            by,
            identity,
            reason: `${answer === 'decline' ? 'declined' : 'cancelled'} in ${by}`,
          });
    // Decided elsewhere meanwhile, or a vote the rule refuses: the guard reads what stands.
    await decide.catch(() => undefined);
  }

  /** Sends the call upstream as the client made it, with the input the guard let through. */
  async function callUpstream(
    toolName: string,
    params: Params,
    input: unknown,
    signal: AbortSignal,
    answering: ClientRequest['id'],
  ): Promise<unknown> {
    const reply = await relay.requestUpstream(
      'tools/call',
      { ...params, arguments: input },
      signal,
      answering,
    );
    if ('error' in reply) {
      // The upstream refused the request: nothing ran, nothing is charged. The client decides whether to
      // call again: the proxy never repeats a call on its own.
      throw new UpstreamRefused(reply.error);
    }
    if ('lost' in reply) {
      // Never sent: nothing ran, nothing is charged.
      if (!reply.sent) throw new NonRetryableError(`"${toolName}" was not sent: ${reply.lost}`);
      // Sent and never answered (cancelled, or the upstream went away): it may have run, so it is
      // charged its estimate (fail closed).
      const text = `"${toolName}" may have run, but no answer came (${reply.lost}); it is charged its estimate`;
      return toolResult(errorResult(text), { cost: guard.ruleFor(toolName)?.costPerCall ?? 0 });
    }
    const cost = (reply.result['_meta'] as Params | undefined)?.[COST_META_KEY];
    // A cost that is not an amount is not taken: the call is charged its estimate.
    return isAmount(cost) ? toolResult(reply.result, { cost }) : reply.result;
  }

  async function guardedCall(request: ClientRequest): Promise<Reply> {
    // `task` is dropped: the proxy answers the call once it ran (it does not pass the tasks capability on).
    const { task: _task, ...params } = request.params ?? {};
    const toolName = params['name'];
    if (typeof toolName !== 'string') {
      return { error: { code: -32602, message: 'tools/call needs params.name, a string' } };
    }
    const input = params['arguments'] ?? {};
    const { signal } = request;
    // Once the guard checks the call, its own entries record what became of it.
    let checked = false;
    try {
      // Nothing can run: no check is made, no step taken; the refusal is recorded.
      if (relay.gone !== null) {
        await guard.refuse({ toolName, input }, GONE).catch(() => undefined);
        const text = `the upstream server is gone (${relay.gone}): "${toolName}" was not sent and nothing was charged; restart leash mcp`;
        return { result: errorResult(text) };
      }
      const hidden = hiddenBy(rules, toolName);
      if (hidden !== null) {
        const d = await guard.refuse({ toolName, input }, `"${toolName}" is hidden: ${hidden}`);
        return { result: errorResult(denialText(d, toolName)) };
      }
      const destructive = rules.confirmDestructive && isDestructive(await annotationsOf(toolName, signal));
      const call = { toolName, input, requiresConfirmation: destructive };
      checked = true;
      const toolCallId = await decisionOf(call, request);
      // Cancelled while a person was asked: the call is not made, and a grant given meanwhile stays unused.
      if (signal.aborted) return { result: errorResult(`the client cancelled the call of "${toolName}"`) };
      const outcome = await guard.toolCall({
        ...call,
        toolCallId,
        signal,
        run: async (ctx) => {
          const [both, done] = eitherAborts(signal, ctx.signal);
          try {
            return await callUpstream(toolName, params, ctx.input, both, request.id);
          } finally {
            done();
          }
        },
      });
      if (outcome.allowed) return { result: outcome.output as Params };
      if (outcome.approval?.status === 'pending') {
        const people = await signIn(outcome.approval);
        return { result: errorResult(approvalText(outcome.approval, toolName, style, people)) };
      }
      return { result: errorResult(denialText(outcome, toolName)) };
    } catch (error) {
      if (error instanceof UpstreamRefused) return { error: error.rpc };
      // Refused before any check because the upstream went away while its tool was looked up: recorded
      // like any other refusal. A store that cannot record it leaves the answer the same.
      if (!checked && relay.gone !== null)
        await guard.refuse({ toolName, input }, GONE).catch(() => undefined);
      return { result: errorResult(`"${toolName}" failed: ${errorTail(error)}`) };
    }
  }

  return relay;
}
