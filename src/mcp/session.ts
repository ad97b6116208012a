import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { RunGuard } from '../agent/RunGuard.js';
import { OneAtATime } from '../agent/oneAtATime.js';
import { notConfigured } from '../agent/unconfigured.js';
import { errorTail, GuardrailValidationError } from '../errors.js';
import { EMPTY_LABELS, validateLabels, type Labels } from '../guardrails/labels.js';
import { approvalTtlMs, policyToGuardrailsInit, toolRules } from '../policy/policy.js';
import type { Policy } from '../policy/schema.js';
import type { CommandStyle } from '../runner/commandLine.js';
import type { AutonomyGuardrailService } from '../service/AutonomyGuardrailService.js';
import { validatePlanId } from '../ids.js';
import { HttpUpstreamTransport } from './httpUpstream.js';
import { createMcpProxy } from './proxy.js';
import type { Relay } from './relay.js';
import { recordSessionEnd, recordSessionStart } from './record.js';
import { mcpRules } from './rules.js';

/** Where the upstream server is: a command to start (stdio), or a Streamable HTTP URL. */
export type Upstream =
  { readonly command: string; readonly args: readonly string[] } | { readonly url: string };

export interface McpSessionOptions {
  readonly service: AutonomyGuardrailService;
  readonly policy: Policy | null;
  /** The plan this session runs under; default `mcp-<policyName>-<n>`, n the next free number. */
  readonly planId?: string;
  /** Names the default plan id: the policy file's base name, or `session`. */
  readonly policyName: string;
  /**
   * Labels of the plan the session configures (`{ user: 'ann' }`). A plan `planId` names is labelled
   * only when the policy configures it: without a policy the session leaves it as it is configured.
   */
  readonly labels?: Readonly<Record<string, string>>;
  readonly upstream: Upstream;
  /** The client's side of the proxy; default this process's stdin and stdout. */
  readonly clientTransport?: Transport;
  /** The upstream process's environment; default this process's. */
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** How the `leash approve` command shown for an approval starts, and its store; default `npx leash`. */
  readonly style?: CommandStyle;
  /** Ends the session (SIGTERM, SIGINT). */
  readonly signal?: AbortSignal;
  /** Told what a person should know (the plan id, the upstream's end); default nothing. */
  readonly log?: (line: string) => void;
  /** The protocol versions the client's transport can carry, when it checks them (the HTTP front's). */
  readonly protocolVersions?: readonly string[];
  /** Called once the client's transport is started and takes messages, with the session's plan id. */
  readonly ready?: (planId: string) => void;
}

/** The default plan ids being allocated, by policy name. */
const allocating = new OneAtATime();

/** The next `mcp-<name>-<n>` plan id free in the store. */
async function nextPlanId(service: AutonomyGuardrailService, name: string): Promise<string> {
  const prefix = `mcp-${name}-`;
  let highest = 0;
  for (const p of await service.store.listPlans()) {
    if (!p.planId.startsWith(prefix)) continue;
    const n = Number(p.planId.slice(prefix.length));
    if (Number.isSafeInteger(n) && n > highest) highest = n;
  }
  return validatePlanId(`${prefix}${highest + 1}`);
}

/**
 * The session's plan, configured: from the policy when there is one; a new session plan without one
 * (its calls audited, with no limits); an existing plan as it is configured when `--plan` names one and
 * no policy is given. A plan `--plan` names that nobody configured is refused, not guarded without
 * limits: its id may be mistyped.
 */
async function sessionPlan(
  service: AutonomyGuardrailService,
  policy: Policy | null,
  given: string | undefined,
  policyName: string,
  labels: Labels,
): Promise<string> {
  if (given === undefined) {
    const init = { ...(policy === null ? {} : policyToGuardrailsInit(policy)), labels };
    // One at a time in this process: two sessions starting together (`leash mcp --listen`) would both
    // find the same number free between listing the plans and configuring the next one.
    return allocating.run(policyName, async () => {
      const planId = await nextPlanId(service, policyName);
      await service.configureGuardrails(planId, init);
      return planId;
    });
  }
  if (policy !== null)
    await service.configureGuardrails(given, { ...policyToGuardrailsInit(policy), labels });
  else if ((await service.getGuardrails(given)) === null) {
    const ways =
      'give --policy FILE to configure it from a policy, or configure it first (leash run, or configureGuardrails in code)';
    throw notConfigured(given, ways);
  }
  return given;
}

/**
 * Opens the upstream's transport each time it is called: a process to start (stdio), or a Streamable HTTP
 * URL, which is checked here, before anything starts.
 */
function upstreamOpener(
  upstream: Upstream,
  env: NodeJS.ProcessEnv,
  cwd: string | undefined,
): () => Transport {
  if ('url' in upstream) {
    let url: URL;
    try {
      url = new URL(upstream.url);
    } catch {
      throw new GuardrailValidationError(
        'upstream-url',
        `--upstream-url must be a URL, got "${upstream.url}"`,
      );
    }
    return () => new HttpUpstreamTransport(url);
  }
  const strings: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (typeof v === 'string') strings[k] = v;
  return () =>
    new StdioClientTransport({
      command: upstream.command,
      args: [...upstream.args],
      env: strings,
      ...(cwd === undefined ? {} : { cwd }),
      stderr: 'inherit',
    });
}

/**
 * One client session of `leash mcp`: configures its plan (see {@link sessionPlan}), serves the guarded
 * proxy to the client, starts the upstream server once the client sent `initialize`, and resolves once
 * the session is over (the client went away, or `signal` aborted), with the upstream stopped. The plan's
 * document says that the session runs, then when it ended and its steps (see `record.ts`). An upstream
 * that exits makes every later call an error result: it is not restarted.
 */
export async function runMcpSession(options: McpSessionOptions): Promise<{ planId: string }> {
  const { service, policy } = options;
  const log = options.log ?? (() => undefined);
  if (options.planId !== undefined) validatePlanId(options.planId);
  const labels = validateLabels(options.labels);
  if (options.planId !== undefined && policy === null && labels !== EMPTY_LABELS) {
    throw new GuardrailValidationError(
      'labels',
      `labels are set when a session configures its plan: give a policy to configure plan "${options.planId}" with them, or no plan id for a new session plan`,
    );
  }
  const open = upstreamOpener(options.upstream, options.env ?? process.env, options.cwd);
  // Known before anything starts: a plan that cannot be guarded starts nothing.
  const planId = await sessionPlan(service, policy, options.planId, options.policyName, labels);
  let finish = (): void => undefined;
  const over = new Promise<void>((resolve) => {
    finish = resolve;
  });
  // The stdio transport does not notice its input ending: the client went away.
  const onEnd = (): void => finish();
  let proxy: Relay | undefined;
  /** The plan and the revision of its document that says the session runs, once saved. */
  let started: { planId: string; revision: number } | null = null;
  try {
    const revision = await recordSessionStart(service, planId);
    if (revision !== null) started = { planId, revision };
    const guard = new RunGuard({
      service,
      planId,
      ...(policy === null ? {} : { tools: toolRules(policy), approvalTtlMs: approvalTtlMs(policy) }),
      recordCalls: true,
    });
    proxy = createMcpProxy({
      upstream: open,
      guard,
      rules: mcpRules(policy),
      log,
      ...(options.style === undefined ? {} : { style: options.style }),
      ...(options.protocolVersions === undefined ? {} : { protocolVersions: options.protocolVersions }),
    });
    void proxy.closed.then(finish);
    if (options.clientTransport === undefined) {
      process.stdin.once('end', onEnd);
      process.stdin.once('close', onEnd);
    }
    options.signal?.addEventListener('abort', onEnd, { once: true });
    if (options.signal?.aborted) finish();
    await proxy.connect(options.clientTransport ?? new StdioServerTransport());
    log(`leash mcp: session plan "${planId}"`);
    options.ready?.(planId);
    await over;
    return { planId };
  } finally {
    // The calls it aborts are charged and recorded before its end is; then the plan's wall clock stops
    // there, whatever the upstream takes to stop.
    await proxy?.drain();
    if (started !== null) {
      await recordSessionEnd(service, started.planId, started.revision).catch((error: unknown) =>
        log(`leash mcp: the end of the session could not be recorded: ${errorTail(error)}`),
      );
    }
    options.signal?.removeEventListener('abort', onEnd);
    process.stdin.off('end', onEnd);
    process.stdin.off('close', onEnd);
    // The client's transport closes; a Streamable HTTP upstream is told the session ended, a process gets
    // its stdin ended, then SIGTERM, then SIGKILL: nothing is left behind.
    await proxy?.close();
  }
}
