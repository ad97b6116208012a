import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  LoggingMessageNotificationSchema,
  PromptListChangedNotificationSchema,
  ReadResourceRequestSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  ToolListChangedNotificationSchema,
  UnsubscribeRequestSchema,
  ErrorCode,
  McpError,
  type ServerCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
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
import {
  confirmedCallId,
  hiddenBy,
  isDestructive,
  mcpRules,
  type McpRules,
  type ToolAnnotations,
} from './rules.js';

/** Any result, every field kept: the proxy passes on what the upstream said, not what this SDK knows. */
const Loose = z.looseObject({});
type LooseResult = z.infer<typeof Loose>;

/** No time limit of the proxy's own on a forwarded call: the client's, and the plan's wall clock, end it. */
const NO_TIMEOUT_MS = 2_147_483_647;

const GONE = 'the upstream server is gone (it exited); restart leash mcp';

/** The `_meta` key under which an upstream may report what a call cost, in the budget's units. */
export const COST_META_KEY = 'leash/cost';

export interface McpProxyOptions {
  /** The upstream server's client, connected. */
  readonly upstream: Client;
  /** Guards every `tools/call` under the session's plan. */
  readonly guard: RunGuard;
  /** What the client is shown and which calls a person confirms; default every tool, none confirmed. */
  readonly rules?: McpRules;
  /** How the `leash approve` command shown for an approval starts, and its store; default `npx leash`. */
  readonly style?: CommandStyle;
}

/** A tool as `tools/list` gives it, read no further than the proxy needs. */
interface ListedTool {
  readonly name: string;
  readonly annotations?: ToolAnnotations;
}

function listedTools(result: LooseResult): ListedTool[] {
  const tools = (result as { tools?: unknown }).tools;
  if (!Array.isArray(tools)) return [];
  return tools.filter(
    (t): t is ListedTool => typeof t === 'object' && t !== null && typeof (t as ListedTool).name === 'string',
  );
}

/** Whether an error is the upstream's answer (a JSON-RPC error it sent), not a call left unanswered. */
function answered(error: unknown): boolean {
  return (
    error instanceof McpError &&
    error.code !== ErrorCode.ConnectionClosed &&
    error.code !== ErrorCode.RequestTimeout
  );
}

function isAmount(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= MAX_AMOUNT;
}

/** Whether an approval can no longer let a call through: used, refused, or past its time. */
function spent(approval: Approval, now: number): boolean {
  return approval.status === 'used' || approval.status === 'denied' || parseIsoMs(approval.expiresAt) < now;
}

/**
 * An MCP server that shows its client the upstream server's tools (less those the rules hide, schemas and
 * annotations untouched), resources, prompts and completions, and passes every `tools/call` through the
 * run guard: steps, budget (a tool's `cost_per_call`, or the cost the upstream reports under `_meta`
 * `leash/cost`), calls per tool and per session, the wall clock, and a person's confirmation, each audited
 * in the plan's log with the tool and its input's hash. A refused call is an `isError` result that says
 * which limit refused it and how to raise it; the session goes on. A person confirms in the client when
 * it can be asked (elicitation), else with `leash approve`.
 */
export function createMcpProxy(options: McpProxyOptions): Server {
  const { upstream, guard } = options;
  const rules = options.rules ?? mcpRules(null);
  const style = options.style ?? DEFAULT_STYLE;
  const upstreamCaps = upstream.getServerCapabilities() ?? {};
  // Tasks are not passed on: the proxy answers each call itself, once it ran.
  const { tasks: _tasks, ...kept } = upstreamCaps as ServerCapabilities & { tasks?: unknown };
  const capabilities: ServerCapabilities = {
    ...kept,
    ...(upstreamCaps.tools ? { tools: { ...upstreamCaps.tools, listChanged: true } } : {}),
  };
  const info = upstream.getServerVersion() ?? { name: 'upstream', version: '0' };
  const instructions = upstream.getInstructions();
  const server = new Server(
    { ...info, title: `${info.title ?? info.name} (guarded by leash)` },
    { capabilities, ...(instructions === undefined ? {} : { instructions }) },
  );

  let initialized = false;
  server.oninitialized = () => {
    initialized = true;
  };
  /** A notification for the client; dropped before it initialized, or once it went away. */
  const tell = (send: () => Promise<void>): void => {
    if (initialized) send().catch(() => undefined);
  };

  const forward = <S extends Parameters<Server['setRequestHandler']>[0]>(schema: S): void => {
    server.setRequestHandler(schema, (request, extra) => {
      const { method, params } = request as { method: string; params?: Record<string, unknown> };
      return upstream.request({ method, ...(params ? { params } : {}) } as never, Loose, {
        signal: extra.signal,
      }) as never;
    });
  };
  if (upstreamCaps.resources) {
    forward(ListResourcesRequestSchema);
    forward(ListResourceTemplatesRequestSchema);
    forward(ReadResourceRequestSchema);
    if (upstreamCaps.resources.subscribe) {
      forward(SubscribeRequestSchema);
      forward(UnsubscribeRequestSchema);
    }
    upstream.setNotificationHandler(ResourceListChangedNotificationSchema, () =>
      tell(() => server.sendResourceListChanged()),
    );
    upstream.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) =>
      tell(() => server.sendResourceUpdated(n.params)),
    );
  }
  if (upstreamCaps.prompts) {
    forward(ListPromptsRequestSchema);
    forward(GetPromptRequestSchema);
    upstream.setNotificationHandler(PromptListChangedNotificationSchema, () =>
      tell(() => server.sendPromptListChanged()),
    );
  }
  if (upstreamCaps.completions) forward(CompleteRequestSchema);
  if (upstreamCaps.logging) {
    forward(SetLevelRequestSchema);
    upstream.setNotificationHandler(LoggingMessageNotificationSchema, (n) =>
      tell(() => server.sendLoggingMessage(n.params)),
    );
  }
  if (!upstreamCaps.tools) return server;

  /** The annotations of every tool the upstream listed, by name, from its newest list. */
  let annotations = new Map<string, ToolAnnotations | undefined>();
  upstream.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    annotations = new Map();
    tell(() => server.sendToolListChanged());
  });

  server.setRequestHandler(ListToolsRequestSchema, async (request, extra) => {
    const result = await upstream.request(
      { method: 'tools/list', ...(request.params ? { params: request.params } : {}) },
      Loose,
      { signal: extra.signal },
    );
    const tools = listedTools(result);
    for (const t of tools) annotations.set(t.name, t.annotations);
    return { ...result, tools: tools.filter((t) => hiddenBy(rules, t.name) === null) } as never;
  });

  /** A tool's annotations, listing the upstream's tools when the client calls one it never listed. */
  async function annotationsOf(name: string, signal: AbortSignal): Promise<ToolAnnotations | undefined> {
    if (!annotations.has(name)) {
      const fresh = new Map<string, ToolAnnotations | undefined>();
      let cursor: string | undefined;
      do {
        const page = await upstream.request(
          { method: 'tools/list', ...(cursor === undefined ? {} : { params: { cursor } }) },
          Loose,
          { signal },
        );
        for (const t of listedTools(page)) fresh.set(t.name, t.annotations);
        const next = (page as { nextCursor?: unknown }).nextCursor;
        cursor = typeof next === 'string' ? next : undefined;
      } while (cursor !== undefined);
      annotations = fresh;
    }
    return annotations.get(name);
  }

  /** How many times each same call (tool and input) was asked of a person: its next ask's number. */
  const asks = new Map<string, number>();

  /**
   * The decision id a call runs under: for one a person must confirm, the id of its approval (asked in
   * the client when it can be, then decided there); for any other, a new id of this session.
   */
  async function decisionOf(
    call: { toolName: string; input: unknown; requiresConfirmation: boolean },
    extra: { signal: AbortSignal },
  ): Promise<string> {
    const hash = inputHash({ tool: call.toolName, input: call.input });
    const key = `${call.toolName}\u0000${hash}`;
    for (let ask = asks.get(key) ?? 1; ; ask++) {
      const toolCallId = confirmedCallId(call.toolName, hash, ask);
      const approval = await guard.approvalFor({ ...call, toolCallId });
      if (approval === null) return `${sessionTag}:${++calls}`;
      if (spent(approval, guard.service.clock.now())) continue;
      asks.set(key, ask);
      if (approval.status === 'pending') await askInClient(approval, call, extra.signal);
      return toolCallId;
    }
  }
  const sessionTag = `mcp-${randomUUID().slice(0, 8)}`;
  let calls = 0;

  /** Asks the person in the client, when it can ask, and records their answer; else leaves it pending. */
  async function askInClient(
    approval: Approval,
    call: { toolName: string; input: unknown },
    signal: AbortSignal,
  ): Promise<void> {
    if (server.getClientCapabilities()?.elicitation === undefined) return;
    const by = server.getClientVersion()?.name ?? 'mcp client';
    let answer: string;
    try {
      const r = await server.elicitInput(
        {
          message: `Allow "${call.toolName}" to run with ${JSON.stringify(call.input)}? (leash approval ${approval.id}; it runs once)`,
          requestedSchema: { type: 'object', properties: {} },
        },
        { signal, timeout: NO_TIMEOUT_MS },
      );
      answer = r.action;
    } catch {
      return; // unanswered: the approval stays pending, for `leash approve`
    }
    const decide =
      answer === 'accept'
        ? guard.service.approve(approval.id, { by, reason: `accepted in ${by}` })
        : guard.service.deny(approval.id, {
            by,
            reason: `${answer === 'decline' ? 'declined' : 'cancelled'} in ${by}`,
          });
    // Decided elsewhere meanwhile: the guard reads what stands.
    await decide.catch(() => undefined);
  }

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    // `task` is dropped: the proxy answers the call once it ran (it does not pass the tasks capability on).
    const { name: toolName, arguments: args, _meta, task: _task, ...rest } = request.params;
    const input = args ?? {};
    // Once the guard checks the call, its own entries record what became of it.
    let checked = false;
    try {
      // Nothing can run: no check is made, no step taken.
      if (upstream.transport === undefined) throw new NonRetryableError(GONE);
      const hidden = hiddenBy(rules, toolName);
      if (hidden !== null) {
        const d = await guard.refuse({ toolName, input }, `"${toolName}" is hidden: ${hidden}`);
        return errorResult(denialText(d, toolName)) as never;
      }
      const destructive =
        rules.confirmDestructive && isDestructive(await annotationsOf(toolName, extra.signal));
      const call = { toolName, input, requiresConfirmation: destructive };
      checked = true;
      const toolCallId = await decisionOf(call, extra);
      // Cancelled while a person was asked: the call is not made, and a grant given meanwhile stays unused.
      if (extra.signal.aborted) return errorResult(`the client cancelled the call of "${toolName}"`) as never;
      const progressToken = _meta?.progressToken;
      const outcome = await guard.toolCall({
        ...call,
        toolCallId,
        signal: extra.signal,
        run: async (ctx) => {
          if (upstream.transport === undefined) {
            throw new NonRetryableError(GONE);
          }
          const [signal, done] = eitherAborts(extra.signal, ctx.signal);
          let result: LooseResult;
          try {
            const meta = _meta === undefined ? undefined : { ..._meta, progressToken: undefined };
            result = await upstream.request(
              {
                method: 'tools/call',
                params: {
                  ...rest,
                  name: toolName,
                  arguments: ctx.input as Record<string, unknown>,
                  ...(meta ? { _meta: meta } : {}),
                },
              },
              Loose,
              {
                signal,
                timeout: NO_TIMEOUT_MS,
                ...(progressToken === undefined
                  ? {}
                  : {
                      resetTimeoutOnProgress: true,
                      onprogress: (p) =>
                        void extra
                          .sendNotification({
                            method: 'notifications/progress',
                            params: { ...p, progressToken },
                          })
                          .catch(() => undefined),
                    }),
              },
            );
          } catch (error) {
            if (answered(error)) {
              // The upstream refused the request: nothing ran, nothing is charged. The client decides
              // whether to call again: the proxy never repeats a call on its own.
              throw new NonRetryableError(`the upstream server answered with an error: ${errorTail(error)}`, {
                cause: error,
              });
            }
            // Sent and never answered (cancelled, or the upstream went away): it may have run, so it is
            // charged its estimate (fail closed).
            const text = `"${toolName}" may have run, but no answer came (${errorTail(error)}); it is charged its estimate`;
            return toolResult(errorResult(text), { cost: guard.ruleFor(toolName)?.costPerCall ?? 0 });
          } finally {
            done();
          }
          const cost = (result._meta as Record<string, unknown> | undefined)?.[COST_META_KEY];
          // A cost that is not an amount is not taken: the call is charged its estimate.
          return isAmount(cost) ? toolResult(result, { cost }) : result;
        },
      });
      if (outcome.allowed) return outcome.output as never;
      if (outcome.approval?.status === 'pending')
        return errorResult(approvalText(outcome.approval, toolName, style)) as never;
      return errorResult(denialText(outcome, toolName)) as never;
    } catch (error) {
      // Refused before any check because the upstream is gone (or went away while its tool was looked
      // up): recorded like any other refusal. A store that cannot record it leaves the answer the same.
      if (!checked && upstream.transport === undefined)
        await guard.refuse({ toolName, input }, GONE).catch(() => undefined);
      return errorResult(`"${toolName}" failed: ${errorTail(error)}`) as never;
    }
  });
  return server;
}
